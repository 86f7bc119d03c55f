// Appointment states after booking: an operator confirms, cancels, or marks a held appointment
// completed or no-show. Each change is one statement inside the caller's transaction (so the
// console writes its audit row with it): the status, the lead's conversation event and the
// outbound event. A cancelled appointment frees its seat by being cancelled: the capacity trigger
// and every seats read count only appointments that are not (sql/0004_booking.sql).
//
// The rules, with the time they depend on passed in:
//   pending   → confirmed | cancelled   before the start
//   confirmed → cancelled               before the start
//   pending | confirmed → completed | no_show   from the start on
//   completed ↔ no_show                 a correction (the customer came late after all)
// Cancelled is final: bringing one back would need a seat that may have been taken since.
import type { Actor } from "../auth/actor";
import { cancelRuns } from "../automations/appointments";
import type { Tx } from "../db/client";
import type { Refusal } from "../errors";
import { outboxInsert } from "../events/envelope";
import { slotLabel } from "./slots";

export const APPOINTMENT_STATUSES = ["pending", "confirmed", "cancelled", "completed", "no_show"] as const;
export type AppointmentStatus = (typeof APPOINTMENT_STATUSES)[number];

export const STATUS_ACTIONS = ["confirm", "cancel", "complete", "no_show"] as const;
export type StatusAction = (typeof STATUS_ACTIONS)[number];

interface Rule {
  to: Exclude<AppointmentStatus, "pending">;
  from: readonly AppointmentStatus[];
  /** Before the start, or from the start on. */
  when: "before" | "after";
  /** The conversation event's label, before " for {slot}". */
  label: string;
  /** The verb of the conversation event's note. */
  verb: string;
}

const RULES: Record<StatusAction, Rule> = {
  confirm: { to: "confirmed", from: ["pending"], when: "before", label: "Appointment confirmed", verb: "confirmed" },
  cancel: { to: "cancelled", from: ["pending", "confirmed"], when: "before", label: "Appointment cancelled", verb: "cancelled" },
  complete: { to: "completed", from: ["pending", "confirmed", "no_show"], when: "after", label: "Appointment completed", verb: "marked as completed" },
  no_show: { to: "no_show", from: ["pending", "confirmed", "completed"], when: "after", label: "Appointment marked no-show", verb: "marked as a no-show" },
};

export const isStatusAction = (s: string): s is StatusAction => (STATUS_ACTIONS as readonly string[]).includes(s);

/** The status an action leads to. */
export const statusAfter = (action: StatusAction): AppointmentStatus => RULES[action].to;

/** Why an action cannot apply now; null when it can. */
export function actionProblem(action: StatusAction, status: string, startMs: number, now: number): StatusReason | null {
  const rule = RULES[action];
  if (!(rule.from as readonly string[]).includes(status)) return "not_allowed";
  if (rule.when === "before" && now >= startMs) return "already_started";
  if (rule.when === "after" && now < startMs) return "not_started";
  return null;
}

/** The actions open to an appointment in this status at this time (the console's buttons). */
export const actionsFor = (status: string, startMs: number, now: number): StatusAction[] =>
  STATUS_ACTIONS.filter((a) => actionProblem(a, status, startMs, now) === null);

export type StatusReason = "not_found" | "not_allowed" | "already_started" | "not_started";

export interface StatusChanged {
  ok: true;
  appt_id: number;
  lead_id: number | null;
  /** Its calendar's organization (null: the house's). */
  org_id: number | null;
  from: AppointmentStatus;
  to: AppointmentStatus;
}

export type StatusChange = StatusChanged | Refusal<StatusReason, { status?: string }>;

interface Locked {
  id: number;
  status: AppointmentStatus;
  slot_epoch: number;
  lead_id: number | null;
  link_slug: string;
  name: string;
  phone: string;
  email: string;
  calendar_id: number;
  calendar: string;
  timezone: string;
  org_id: number | null;
}

/**
 * Applies `action` to appointment `id` as `actor`, inside `tx`. The appointment is read locked and
 * confined to the actor's organization in SQL (its calendar's): another organization's appointment
 * answers not_found, exactly as a missing one.
 */
export async function changeAppointmentStatus(
  tx: Tx,
  actor: Actor,
  now: Date,
  id: number,
  action: StatusAction,
): Promise<StatusChange> {
  const [a] = await tx<Locked[]>`
    select a.id, a.status, a.slot_epoch, a.lead_id, a.link_slug, a.name, a.phone, a.email,
           c.id as calendar_id, c.name as calendar, c.timezone, c.org_id
    from appointments a join calendars c on c.id = a.calendar_id
    where a.id = ${id} and ${actor.orgId === null ? tx`true` : tx`c.org_id = ${actor.orgId}`}
    for update of a`;
  if (!a) return { ok: false, reason: "not_found" };
  const problem = actionProblem(action, a.status, a.slot_epoch * 1000, now.getTime());
  if (problem) return { ok: false, reason: problem, status: a.status };

  const rule = RULES[action];
  const label = slotLabel(a.slot_epoch, a.timezone);
  const what = a.calendar || "the appointment";
  const data = {
    calendar_id: a.calendar_id,
    calendar: a.calendar,
    link: a.link_slug,
    org_id: a.org_id,
    lead_id: a.lead_id,
    epoch: a.slot_epoch,
    label,
    starts_at: new Date(a.slot_epoch * 1000).toISOString(),
    name: a.name,
    phone: a.phone,
    email: a.email,
    status: rule.to,
    previous_status: a.status,
    actor_type: actor.type,
    actor_id: actor.id,
    updated_at: now.toISOString(),
  };
  // One statement: the status (the capacity trigger lets a cancellation through without a lock;
  // the other targets keep the seat they hold), the conversation event, the outbound event.
  await tx`
    with changed as (
      update appointments set status = ${rule.to}, updated_at = ${now}
      where id = ${a.id}
      returning id
    ), ev as (
      insert into lead_events (lead_id, event, label, actor, actor_role, note, created_at)
      select ${a.lead_id}::bigint, ${`appointment.${rule.to}`}, ${`${rule.label} for ${label}`}, ${actor.id}, ${actor.type},
             ${`${what} for ${a.name} at ${label} was ${rule.verb} (was ${a.status.replace("_", "-")}).`}, ${now}
      from changed where ${a.lead_id}::bigint is not null
    )
    ${outboxInsert(tx, {
      type: `appointment.${rule.to}`,
      at: now,
      orgId: tx`${a.org_id}::bigint`,
      data: tx`jsonb_build_object('appt_id', changed.id) || ${tx.json(data as never)}::jsonb`,
      from: tx`changed`,
    })}`;
  // A cancelled appointment's reminders go with it, in the same transaction.
  if (rule.to === "cancelled") await cancelRuns(tx, a.id);
  return { ok: true, appt_id: a.id, lead_id: a.lead_id, org_id: a.org_id, from: a.status, to: rule.to };
}
