// Public booking: slots, book, reschedule. Plain functions over `sql` and a clock; every refusal
// is a value with a code ({ok: false, error}), so junk input never becomes an exception.
//
// A slots read is one statement: the link's calendar and the seats taken from now on. The slots
// themselves are computed in memory from the calendar's rules, and the candidates (which depend
// only on the rules and the calendar's local date) are kept, keyed by exactly those, so a change
// of the calendar's hours is seen on the next read with no invalidation to get wrong.
import { LRUCache } from "lru-cache";
import type { Clock } from "../clock";
import type { Sql } from "../db/client";
import { newestLeadByPhone } from "../leads/match";
import type { LeadInput } from "../leads/model";
import { createOrDedupLeadIn, resolveList } from "../leads/queries";
import {
  epochOf,
  personOf,
  slugOf,
  splitName,
  tokenOf,
  type AppointmentView,
  type BookResult,
  type Refused,
  type RescheduleResult,
  type SlotsAnswer,
} from "./model";
import {
  appointmentBySelector,
  calendarWithSeats,
  insertAppointment,
  lockAppointment,
  moveAppointment,
  type AppointmentRow,
  type CalendarRow,
} from "./queries";
import {
  candidateSlots,
  offeredCandidate,
  openSlots,
  parseHours,
  slotLabel,
  todayIn,
  type CalendarRules,
  type Candidate,
  type Window,
} from "./slots";
import { issueToken, readToken, tokenMatches } from "./token";

export interface BookingOptions {
  /** Public base address, for reschedule_url. */
  baseUrl: string;
  /** COMMS_INBOUND_LIST_ID from the environment; the provisioned setting is read when null. */
  inboundListId: number | null;
}

/** Who acts in booking's conversation events (the Actor of a public link: type booking, id slug). */
export const ACTOR_ROLE = "booking";

/** SQLSTATE raised by the capacity trigger when the slot is full (sql/0006_booking.sql). */
const SLOT_FULL = "LB001";

const unknownLink = (): SlotsAnswer => ({ ok: false, error: "unknown_link", slots: [] });

export type BookingService = ReturnType<typeof bookingService>;

export function bookingService(sql: Sql, clock: Clock, opts: BookingOptions) {
  const windowsCache = new LRUCache<string, Window[][]>({ max: 1000 });
  const candidateCache = new LRUCache<string, Candidate[]>({ max: 1000 });

  function rulesOf(c: CalendarRow): CalendarRules {
    let windows = windowsCache.get(c.hours);
    if (!windows) {
      windows = parseHours(safeJson(c.hours));
      windowsCache.set(c.hours, windows);
    }
    return {
      id: c.id,
      orgId: c.org_id,
      name: c.name,
      timezone: c.timezone,
      slotMinutes: c.slot_minutes,
      capacity: c.capacity,
      minNoticeMinutes: c.min_notice_minutes,
      horizonDays: c.horizon_days,
      windows,
    };
  }

  /** The candidates of the calendar's local today, kept per exact rules and day. */
  function candidatesOf(c: CalendarRow, rules: CalendarRules, now: number): Candidate[] {
    const today = todayIn(rules.timezone, now);
    if (!today) return [];
    const key = `${c.timezone}\n${c.slot_minutes}\n${c.horizon_days}\n${today.y}-${today.m}-${today.d}\n${c.hours}`;
    let list = candidateCache.get(key);
    if (!list) {
      list = candidateSlots(rules, today);
      candidateCache.set(key, list);
    }
    return list;
  }

  /** Verifies a presented token; the appointment it moves, or null. */
  async function appointmentOf(token: string): Promise<AppointmentRow | null> {
    const parts = readToken(token);
    if (!parts) return null;
    const row = await appointmentBySelector(sql, parts.selector);
    return row && tokenMatches(parts.hash, row.token_hash) ? row : null;
  }

  async function slots(fields: Record<string, unknown>): Promise<SlotsAnswer> {
    const slug = slugOf(fields);
    if (!slug) return unknownLink();
    const now = clock.now();
    const found = await calendarWithSeats(sql, slug, Math.floor(now / 1000));
    if (!found) return unknownLink();
    const { calendar, seats } = found;
    const rules = rulesOf(calendar);
    const result: SlotsAnswer = {
      ok: true,
      slots: openSlots(rules, countSeats(seats), now, candidatesOf(calendar, rules, now)),
      tz: calendar.timezone,
      name: calendar.name,
    };
    // The reschedule view reads the appointment its token moves through this same action (the
    // contract has no other); present only when a token came, null when it is not valid here.
    const token = tokenOf(fields);
    if (token) {
      const appt = await appointmentOf(token);
      result.appointment = appt && appt.calendar.id === calendar.id ? viewOf(appt) : null;
    }
    return result;
  }

  async function book(fields: Record<string, unknown>): Promise<BookResult | Refused> {
    const slug = slugOf(fields);
    if (!slug) return refuse("unknown_link");
    const now = clock.now();
    const found = await calendarWithSeats(sql, slug, Math.floor(now / 1000));
    if (!found) return refuse("unknown_link");
    const epoch = epochOf(fields.epoch);
    if (epoch === null || epoch * 1000 <= now) return refuse("bad_epoch");
    const person = personOf(fields);
    if ("error" in person) return person;
    const { calendar, seats } = found;
    const rules = rulesOf(calendar);
    const slot = offeredCandidate(rules, now, epoch, candidatesOf(calendar, rules, now));
    // Room as read just now, to spare the transaction when the slot is plainly full; the
    // database decides under the slot's lock.
    if (!slot || (countSeats(seats).get(epoch) ?? 0) >= rules.capacity) return refuse("slot_unavailable");

    const at = new Date(now);
    const issued = issueToken();
    const lead: LeadInput = {
      phone: person.phone,
      listId: null,
      ...splitName(person.name),
      email: person.email,
      address1: "",
      city: "",
      state: "",
      postalCode: "",
      source: "booking",
      hopper: false,
      consent: { sms: false, email: false },
    };
    // The lead: the newest with these last 10 digits anywhere (api-v1.md), else a fresh one in the
    // inbound list when it resolves, else none. Matching reads outside the transaction; a fresh
    // lead is made inside it, under intake's (list, phone) lock, so it exists only with its booking.
    const match = await newestLeadByPhone(sql, null, person.phone);
    const list = match ? null : await resolveList(sql, null, null, opts.inboundListId);
    try {
      const id = await sql.begin(async (tx) => {
        const leadId = match ? match.id : list ? (await createOrDedupLeadIn(tx, list, lead, "booking")).lead_id : null;
        const data = {
          calendar_id: calendar.id,
          calendar: calendar.name,
          link: slug,
          org_id: calendar.org_id,
          lead_id: leadId,
          epoch,
          label: slot.label,
          starts_at: new Date(epoch * 1000).toISOString(),
          name: person.name,
          phone: person.phone,
          email: person.email,
          status: "pending",
          created_at: at.toISOString(),
        };
        const contact = [person.phone, person.email].filter(Boolean).join(", ");
        const row = await insertAppointment(
          tx,
          { calendarId: calendar.id, orgId: calendar.org_id, slug, epoch, leadId, ...person, selector: issued.selector, hash: issued.hash, at },
          {
            event: "appointment.booked",
            label: `Appointment booked for ${slot.label}`,
            actor: slug,
            actorRole: ACTOR_ROLE,
            note: `${person.name} (${contact}) booked ${calendar.name || "an appointment"} through the booking link.`,
          },
          { type: "appointment.booked", data },
        );
        return row.id;
      });
      return {
        ok: true,
        appt_id: id,
        label: slot.label,
        token: issued.token,
        reschedule_url: `${opts.baseUrl}/book/${slug}?r=${issued.token}`,
      };
    } catch (err) {
      if (isSlotFull(err)) return refuse("slot_unavailable");
      throw err;
    }
  }

  async function reschedule(fields: Record<string, unknown>): Promise<RescheduleResult | Refused> {
    const token = tokenOf(fields);
    if (!token) return refuse("token_required");
    const epoch = epochOf(fields.epoch);
    const appt = await appointmentOf(token);
    if (!appt) return refuse("unknown_token");
    if (appt.status !== "pending") return refuse("not_pending");
    const now = clock.now();
    if (epoch === null || epoch * 1000 <= now) return refuse("bad_epoch");
    if (epoch === appt.slot_epoch) return { ok: true, appt_id: appt.id, epoch };
    const { calendar } = appt;
    const rules = rulesOf(calendar);
    const slot = offeredCandidate(rules, now, epoch, candidatesOf(calendar, rules, now));
    if (!slot) return refuse("slot_unavailable");

    const at = new Date(now);
    try {
      const outcome = await sql.begin(async (tx) => {
        // The row as committed now, locked: a concurrent move or status change is seen, not undone.
        const current = await lockAppointment(tx, appt.id);
        if (!current || current.status !== "pending") return "not_pending" as const;
        if (current.slot_epoch === epoch) return "moved" as const;
        const previous = slotLabel(current.slot_epoch, calendar.timezone);
        await moveAppointment(
          tx,
          { id: appt.id, orgId: calendar.org_id, leadId: current.lead_id, epoch, at },
          {
            event: "appointment.rescheduled",
            label: `Appointment moved to ${slot.label}`,
            actor: appt.link_slug,
            actorRole: ACTOR_ROLE,
            note: `${appt.name} moved ${calendar.name || "the appointment"} from ${previous} through the reschedule link.`,
          },
          {
            type: "appointment.rescheduled",
            data: {
              calendar_id: calendar.id,
              calendar: calendar.name,
              link: appt.link_slug,
              org_id: calendar.org_id,
              lead_id: current.lead_id,
              epoch,
              label: slot.label,
              starts_at: new Date(epoch * 1000).toISOString(),
              previous_epoch: current.slot_epoch,
              previous_label: previous,
              previous_starts_at: new Date(current.slot_epoch * 1000).toISOString(),
              name: appt.name,
              phone: appt.phone,
              email: appt.email,
              status: "pending",
              updated_at: at.toISOString(),
            },
          },
        );
        return "moved" as const;
      });
      if (outcome === "not_pending") return refuse("not_pending");
      return { ok: true, appt_id: appt.id, epoch };
    } catch (err) {
      if (isSlotFull(err)) return refuse("slot_unavailable");
      throw err;
    }
  }

  /** Whether a link with this slug exists (the page answers 404 otherwise). */
  async function linkExists(slug: string): Promise<boolean> {
    const s = slugOf({ slug });
    if (!s) return false;
    const [row] = await sql<{ ok: number }[]>`select 1 as ok from calendar_links where slug = ${s}`;
    return row !== undefined;
  }

  return { slots, book, reschedule, linkExists };
}

function viewOf(a: AppointmentRow): AppointmentView {
  return { appt_id: a.id, epoch: a.slot_epoch, label: slotLabel(a.slot_epoch, a.calendar.timezone), status: a.status };
}

const refuse = <C extends Refused["error"]>(error: C): Refused => ({ ok: false, error });

function countSeats(seats: readonly number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const e of seats) out.set(e, (out.get(e) ?? 0) + 1);
  return out;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

const isSlotFull = (err: unknown) => (err as { code?: unknown } | null)?.code === SLOT_FULL;
