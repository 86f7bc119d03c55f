// Booking on a lead's behalf (the console's lead page, issue 29): a calendar of the lead's
// organization, its open slots, and a booking for the lead that exists (no lead is matched or
// made). Everything else is the public booking's: the slots module's rules (notice, horizon,
// buffers), capacity decided by the trigger under the slot's lock (sql/0004, 0025), the
// conversation event, `appointment.booked` with its attribution in the outbox, the automations'
// runs, and a reschedule token and URL through one of the calendar's links. Confined in SQL: a
// calendar of another organization (or of none, for a lead of an organization) is not found and
// nothing is booked.
import type { Actor } from "../auth/actor";
import type { Sql, Tx } from "../db/client";
import { waitingForTurn } from "../db/deadline";
import type { BookResult, Refused } from "./model";
import { calendarColumns, insertAppointment, reach, type CalendarRow } from "./queries";
import { calendarRules, isSlotFull } from "./service";
import { offeredCandidate, openSlots, type Slot } from "./slots";
import { issueToken } from "./token";

/** A calendar the console may book on, with the link its reschedule URL goes through. */
export interface LeadCalendar {
  id: number;
  name: string;
  timezone: string;
  slug: string;
}

/** The lead whose behalf it is (already confined to the actor's organization by the caller). */
export interface BehalfLead {
  id: number;
  org_id: number | null;
  first_name: string;
  last_name: string;
  phone: string;
  email: string;
}

/** The actor's reach over calendars, as the appointment status changes have it (states.ts). */
const reachable = (sql: Sql | Tx, actor: Actor, orgId: number | null) =>
  sql`c.org_id is not distinct from ${orgId}::bigint and ${actor.orgId === null ? sql`true` : sql`c.org_id = ${actor.orgId}`}`;

/**
 * The link a reschedule URL uses: the calendar's first by slug (a calendar without a link cannot
 * be booked here, as there would be no page for the lead to move it on).
 */
const firstLink = (sql: Sql | Tx) => sql`(select min(l.slug) from calendar_links l where l.calendar_id = c.id)`;

/** The calendars of the lead's organization that have a link, by name. */
export function leadCalendars(sql: Sql, actor: Actor, orgId: number | null): Promise<LeadCalendar[]> {
  return sql<LeadCalendar[]>`
    select c.id, c.name, c.timezone, ${firstLink(sql)} as slug
    from calendars c
    where ${reachable(sql, actor, orgId)} and exists (select 1 from calendar_links l where l.calendar_id = c.id)
    order by lower(c.name), c.id
    limit 200`;
}

type Found = { calendar: CalendarRow; slug: string; seats: number[] };

/** One calendar within reach, its link, and the seats taken in its horizon from `from` (Unix s). */
async function calendarOf(sql: Sql | Tx, actor: Actor, orgId: number | null, id: number, from: number): Promise<Found | null> {
  if (!Number.isSafeInteger(id) || id <= 0) return null;
  const [row] = await sql<(CalendarRow & { slug: string | null; seats: number[] })[]>`
    select ${calendarColumns(sql)}, ${firstLink(sql)} as slug,
           array(select a.slot_epoch from appointments a
                 where a.calendar_id = c.id and a.status <> 'cancelled'
                   and a.slot_epoch > ${from}::int8 - ${reach(sql)}
                   and a.slot_epoch < ${from}::int8 + (least(c.horizon_days, 366) + 2) * 86400 + ${reach(sql)}
                 order by a.slot_epoch) as seats
    from calendars c
    where c.id = ${id} and ${reachable(sql, actor, orgId)}`;
  if (!row || row.slug === null) return null;
  const { slug, seats, ...calendar } = row;
  return { calendar, slug, seats: seats.map(Number) };
}

function countSeats(seats: readonly number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const e of seats) out.set(e, (out.get(e) ?? 0) + 1);
  return out;
}

/** The calendar's open slots at `now`, as the public slots read offers them; null: not found. */
export async function behalfSlots(
  sql: Sql,
  actor: Actor,
  lead: BehalfLead,
  calendarId: number,
  now: number,
): Promise<{ calendar: LeadCalendar; slots: Slot[] } | null> {
  const found = await calendarOf(sql, actor, lead.org_id, calendarId, Math.floor(now / 1000));
  if (!found) return null;
  const { calendar: c, slug, seats } = found;
  return { calendar: { id: c.id, name: c.name, timezone: c.timezone, slug }, slots: openSlots(calendarRules(c), countSeats(seats), now) };
}

/** Who books, as the lead's timeline and the audit log name them. */
export interface Booker {
  actor: Actor;
  /** The person's name as the timeline shows it. */
  name: string;
}

/** The lead holds a seat at that start of that calendar already (a form sent twice). */
export type AlreadyBooked = { ok: false; error: "already_booked" };

class Duplicate extends Error {}

/**
 * Books the slot starting at `epoch` for the lead. null when the calendar is not found (another
 * organization's, missing, or without a link); `bad_epoch` / `slot_unavailable` as the public
 * booking refuses them; `already_booked` when the lead holds that start already (a resubmitted
 * form on a calendar of several seats). `audit` writes the actor's audit row in the booking's transaction.
 */
export async function bookOnBehalf(
  sql: Sql,
  by: Booker,
  lead: BehalfLead,
  calendarId: number,
  epoch: number,
  now: number,
  baseUrl: string,
  audit: (tx: Tx, apptId: number, label: string) => Promise<unknown>,
): Promise<BookResult | Refused | AlreadyBooked | null> {
  const found = await calendarOf(sql, by.actor, lead.org_id, calendarId, Math.floor(now / 1000));
  if (!found) return null;
  if (!Number.isSafeInteger(epoch) || epoch * 1000 <= now) return { ok: false, error: "bad_epoch" };
  const { calendar, slug } = found;
  const slot = offeredCandidate(calendarRules(calendar), now, epoch);
  if (!slot) return { ok: false, error: "slot_unavailable" };
  const at = new Date(now);
  const issued = issueToken();
  const rescheduleUrl = `${baseUrl}/book/${slug}?r=${issued.token}`;
  const name = `${lead.first_name} ${lead.last_name}`.trim();
  try {
    const id = await sql.begin(async (tx) => {
      // The slot's lock (the capacity trigger) queues bookings of one slot: each waits its turn.
      await tx`select ${waitingForTurn(tx)}`;
      const data = {
        calendar_id: calendar.id,
        calendar: calendar.name,
        link: slug,
        org_id: calendar.org_id,
        lead_id: lead.id,
        epoch,
        label: slot.label,
        starts_at: new Date(epoch * 1000).toISOString(),
        name,
        phone: lead.phone,
        email: lead.email,
        status: "pending",
        created_at: at.toISOString(),
      };
      const row = await insertAppointment(
        tx,
        { calendarId: calendar.id, orgId: calendar.org_id, slug, epoch, leadId: lead.id, name, phone: lead.phone, email: lead.email, selector: issued.selector, hash: issued.hash, at },
        {
          event: "appointment.booked",
          label: `Appointment booked for ${slot.label}`,
          actor: by.name,
          actorRole: by.actor.type,
          note: `${by.name} booked ${calendar.name || "an appointment"} on the lead's behalf from the console.`,
        },
        { type: "appointment.booked", data, attribution: true },
        { appointment_time: slot.label, reschedule_url: rescheduleUrl },
      );
      // Counted after the insert, whose trigger holds the slot's (or calendar's) lock until commit:
      // a second booking of the same lead and start waits for the first and then sees it here.
      const [{ n }] = await tx<{ n: number }[]>`
        select count(*)::int as n from appointments
        where calendar_id = ${calendar.id} and slot_epoch = ${epoch} and lead_id = ${lead.id} and status <> 'cancelled'`;
      if (n > 1) throw new Duplicate();
      await audit(tx, row.id, slot.label);
      return row.id;
    });
    return { ok: true, appt_id: id, label: slot.label, token: issued.token, reschedule_url: rescheduleUrl };
  } catch (err) {
    if (isSlotFull(err)) return { ok: false, error: "slot_unavailable" };
    if (err instanceof Duplicate) return { ok: false, error: "already_booked" };
    throw err;
  }
}
