// Booking's SQL. Capacity is not checked here: the appointments_capacity trigger (sql/0004_booking.sql) locks
// the slot and counts its seats for every write that puts an appointment into a slot.
import { bookedRuns, type AppointmentRuns } from "../automations/appointments";
import type { Sql, Tx } from "../db/client";
import { outboxInsert } from "../events/envelope";
import type { EventType } from "../events/types";

/** A calendar as stored, reached through one of its links. */
export interface CalendarRow {
  id: number;
  org_id: number | null;
  name: string;
  timezone: string;
  slot_minutes: number;
  capacity: number;
  min_notice_minutes: number;
  horizon_days: number;
  buffer_before_minutes: number;
  buffer_after_minutes: number;
  /** Minutes before the start from which the reschedule token can no longer move it. */
  min_cancel_notice_minutes: number;
  /** The weekly hours as jsonb text: parsed only when the rules are not cached already. */
  hours: string;
}

export const calendarColumns = (sql: Sql | Tx) =>
  sql`c.id, c.org_id, c.name, c.timezone, c.slot_minutes, c.capacity, c.min_notice_minutes, c.horizon_days,
      c.buffer_before_minutes, c.buffer_after_minutes, c.min_cancel_notice_minutes, c.hours::text as hours`;

/**
 * Seconds within which two appointments' starts conflict (src/booking/slots.ts reachOf; the
 * capacity trigger computes the same in sql/0025_booking_buffers.sql).
 */
export const reach = (sql: Sql | Tx) =>
  sql`(case when c.buffer_before_minutes + c.buffer_after_minutes > 0
            then (c.slot_minutes + c.buffer_before_minutes + c.buffer_after_minutes)::int8 * 60 else 1 end)`;

/**
 * What the booking page shows before its script runs: the business behind the link (the org's
 * company, else its name; "" for a calendar of no org). null when no link has the slug.
 */
export async function linkPage(sql: Sql, slug: string): Promise<{ business: string } | null> {
  const [row] = await sql<{ business: string }[]>`
    select coalesce(nullif(btrim(o.company), ''), o.name, '') as business
    from calendar_links l
    join calendars c on c.id = l.calendar_id
    left join orgs o on o.id = c.org_id
    where l.slug = ${slug}`;
  return row ?? null;
}

export interface SeatsRead {
  slug: string;
  /** Unix seconds: seats from here on (through the calendar's horizon) are read. */
  from: number;
}

export type CalendarSeats = { calendar: CalendarRow; seats: number[] } | null;

/**
 * For each read, the link's calendar and the start of every seat taken in its horizon from
 * `from` (and within reach either side: an appointment that began a moment ago still conflicts
 * with the slots its buffer after covers), one entry per seat, in order (null when no link has
 * the slug): what a slots request reads, for many requests in one statement (src/db/batcher.ts). A slug read by several requests
 * is read once, from the earliest `from` among them (later seats are all they use).
 */
export async function calendarsWithSeats(sql: Sql, reads: readonly SeatsRead[]): Promise<CalendarSeats[]> {
  const index = new Map<string, number>();
  const slugs: string[] = [];
  const froms: number[] = [];
  for (const r of reads) {
    const at = index.get(r.slug);
    if (at === undefined) {
      index.set(r.slug, slugs.length);
      slugs.push(r.slug);
      froms.push(r.from);
    } else if (r.from < froms[at]) froms[at] = r.from;
  }
  const rows = await sql<(CalendarRow & { i: number; seats: number[] })[]>`
    select u.i, ${calendarColumns(sql)},
           array(select a.slot_epoch from appointments a
                 where a.calendar_id = c.id and a.status <> 'cancelled'
                   and a.slot_epoch > u.from_ - ${reach(sql)}
                   and a.slot_epoch < u.from_ + (least(c.horizon_days, 366) + 2) * 86400 + ${reach(sql)}
                 order by a.slot_epoch) as seats
    from unnest(${slugs}::text[], ${froms}::int8[]) with ordinality as u(slug, from_, i)
    join calendar_links l on l.slug = u.slug
    join calendars c on c.id = l.calendar_id`;
  const found: CalendarSeats[] = new Array(slugs.length).fill(null);
  for (const { i, seats, ...calendar } of rows) found[i - 1] = { calendar, seats };
  return reads.map((r) => found[index.get(r.slug)!]);
}

/**
 * The link's calendar and the seats that conflict with one start (the same start, or within the
 * buffers' reach): what a booking reads before it writes.
 */
export async function calendarWithSeatsAt(
  sql: Sql,
  slug: string,
  epoch: number,
): Promise<{ calendar: CalendarRow; taken: number } | null> {
  const [row] = await sql<(CalendarRow & { taken: number })[]>`
    select ${calendarColumns(sql)},
           (select count(*)::int from appointments a
            where a.calendar_id = c.id and a.status <> 'cancelled'
              and a.slot_epoch > ${epoch}::int8 - ${reach(sql)} and a.slot_epoch < ${epoch}::int8 + ${reach(sql)}) as taken
    from calendar_links l join calendars c on c.id = l.calendar_id
    where l.slug = ${slug}`;
  if (!row) return null;
  const { taken, ...calendar } = row;
  return { calendar, taken };
}

export interface ConversationEvent {
  event: string;
  label: string;
  actor: string;
  actorRole: string;
  note: string;
}

export interface OutboxEvent {
  type: Extract<EventType, `appointment.${string}`>;
  /** The payload's data; `appt_id` is added from the row written. */
  data: Record<string, unknown>;
  /**
   * Add the lead's first touch as `attribution` (operations.md §6: a booking's is its lead's),
   * read in the statement, so a lead made in the same transaction has its own. Only a lead of the
   * appointment's organization lends it: a phone matched in another organization's leads does not
   * carry that organization's ad data into this one's events.
   */
  attribution?: boolean;
}

export interface NewAppointment {
  calendarId: number;
  orgId: number | null;
  slug: string;
  epoch: number;
  leadId: number | null;
  name: string;
  phone: string;
  email: string;
  selector: Buffer;
  hash: Buffer;
  at: Date;
}

/**
 * Inserts the appointment with its conversation event (when it has a lead), its outbox event and
 * its automations' runs with their jobs (src/automations/appointments.ts; `merge`: their
 * {appointment_time} and {reschedule_url}), in one statement. A full slot fails it with SQLSTATE LB001 (the capacity trigger).
 */
export async function insertAppointment(
  tx: Tx,
  a: NewAppointment,
  event: ConversationEvent,
  outbox: OutboxEvent,
  merge: AppointmentRuns["merge"],
): Promise<{ id: number }> {
  const [row] = await tx<{ id: number }[]>`
    with appt as (
      insert into appointments (calendar_id, link_slug, slot_epoch, lead_id, name, phone, email,
                                token_selector, token_hash, created_at, updated_at)
      values (${a.calendarId}, ${a.slug}, ${a.epoch}, ${a.leadId}, ${a.name}, ${a.phone}, ${a.email},
              ${a.selector}, ${a.hash}, ${a.at}, ${a.at})
      returning id
    ), ev as (
      insert into lead_events (lead_id, event, label, actor, actor_role, note, created_at)
      select ${a.leadId}::bigint, ${event.event}, ${event.label}, ${event.actor}, ${event.actorRole},
             ${event.note}, ${a.at}
      where ${a.leadId}::bigint is not null
    ), ${bookedRuns(tx, { orgId: a.orgId, leadId: a.leadId, epoch: a.epoch, merge, now: a.at }, tx`(select id from appt)`)},
    ob as (${outboxInsert(tx, {
      type: outbox.type,
      at: a.at,
      orgId: tx`${a.orgId}::bigint`,
      data: tx`jsonb_build_object('appt_id', appt.id) || ${tx.json(outbox.data as never)}::jsonb || ${
        outbox.attribution
          ? tx`jsonb_build_object('attribution', (
              select l.attribution from leads l where l.id = ${a.leadId}::bigint and l.org_id is not distinct from ${a.orgId}::bigint))`
          : tx`'{}'::jsonb`
      }`,
      from: tx`appt`,
    })})
    select id from appt`;
  return row;
}

/** An appointment found by its token's selector, with the calendar it belongs to. */
export interface AppointmentRow {
  id: number;
  status: string;
  slot_epoch: number;
  lead_id: number | null;
  link_slug: string;
  name: string;
  phone: string;
  email: string;
  token_hash: Buffer;
  calendar: CalendarRow;
}

export async function appointmentBySelector(sql: Sql, selector: Buffer): Promise<AppointmentRow | null> {
  type Row = CalendarRow & { appt_id: number; status: string; slot_epoch: number; lead_id: number | null;
                             link_slug: string; person: string; phone: string; email: string; token_hash: Buffer };
  const [row] = await sql<Row[]>`
    select a.id as appt_id, a.status, a.slot_epoch, a.lead_id, a.link_slug, a.name as person, a.phone, a.email,
           a.token_hash, ${calendarColumns(sql)}
    from appointments a join calendars c on c.id = a.calendar_id
    where a.token_selector = ${selector}`;
  if (!row) return null;
  const { appt_id, status, slot_epoch, lead_id, link_slug, person, phone, email, token_hash, ...calendar } = row;
  return { id: appt_id, status, slot_epoch, lead_id, link_slug, name: person, phone, email, token_hash, calendar };
}

/** Locks the appointment's row and reads what a move depends on, as committed now. */
export async function lockAppointment(tx: Tx, id: number): Promise<{ status: string; slot_epoch: number; lead_id: number | null } | null> {
  const [row] = await tx<{ status: string; slot_epoch: number; lead_id: number | null }[]>`
    select status, slot_epoch, lead_id from appointments where id = ${id} for update`;
  return row ?? null;
}

/**
 * Moves the appointment to `epoch`: its old seat frees and the new one is taken in this one
 * statement (the capacity trigger locks and counts the new slot; LB001 when it is full), with the
 * conversation and outbox events.
 */
export async function moveAppointment(
  tx: Tx,
  m: { id: number; orgId: number | null; leadId: number | null; epoch: number; at: Date },
  event: ConversationEvent,
  outbox: OutboxEvent,
): Promise<void> {
  await tx`
    with moved as (
      update appointments set slot_epoch = ${m.epoch}, updated_at = ${m.at}
      where id = ${m.id}
      returning id
    ), ev as (
      insert into lead_events (lead_id, event, label, actor, actor_role, note, created_at)
      select ${m.leadId}::bigint, ${event.event}, ${event.label}, ${event.actor}, ${event.actorRole},
             ${event.note}, ${m.at}
      from moved where ${m.leadId}::bigint is not null
    )
    ${outboxInsert(tx, {
      type: outbox.type,
      at: m.at,
      orgId: tx`${m.orgId}::bigint`,
      data: tx`jsonb_build_object('appt_id', moved.id) || ${tx.json(outbox.data as never)}::jsonb`,
      from: tx`moved`,
    })}`;
}
