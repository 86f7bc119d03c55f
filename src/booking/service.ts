// Public booking: slots, book, reschedule. Plain functions over `sql` and a clock; every refusal
// is a value with a code ({ok: false, error}), so junk input never becomes an exception.
//
// A slots read is one point read of the database: the link's calendar and the seats taken in its
// horizon, merged with the other slots reads of the moment into one statement (the hot-read
// batcher; a read's statement is always sent after the read arrived). The slots themselves are
// computed in memory from the calendar's rules: the candidates, which depend only on the rules and
// the calendar's local date, are kept keyed by exactly those (so a change of the hours shows on
// the next read with nothing to invalidate), each with its JSON; and the last answer per calendar
// is kept with the seats it was built from, so that reads between two bookings send it as it is.
import { classify } from "../db/sqlstate";
import { LRUCache } from "lru-cache";
import { rescheduleRuns } from "../automations/appointments";
import type { Clock } from "../clock";
import { hotReads } from "../db/batcher";
import type { Sql } from "../db/client";
import { waitingForTurn } from "../db/deadline";
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
  calendarsWithSeats,
  calendarWithSeatsAt,
  insertAppointment,
  linkPage,
  lockAppointment,
  moveAppointment,
  type AppointmentRow,
  type CalendarRow,
  type SeatsRead,
} from "./queries";
import {
  candidateSlots,
  eachOpenSlot,
  firstOffered,
  offeredCandidate,
  openSlots,
  parseHours,
  reachOf,
  slotLabel,
  todayIn,
  type CalendarRules,
  type Candidate,
  type Window,
} from "./slots";
import { issueToken, readToken, tokenMatches } from "./token";
import { UnknownLinks } from "./unknown-links";

export interface BookingOptions {
  /** Public base address, for reschedule_url. */
  baseUrl: string;
  /** COMMS_INBOUND_LIST_ID from the environment; the provisioned setting is read when null. */
  inboundListId: number | null;
  /** The request deadline of the batched seat reads; default DEADLINE_MS (Config.deadlineMs). */
  deadlineMs?: number | null;
}

/** Who acts in booking's conversation events (the Actor of a public link: type booking, id slug). */
export const ACTOR_ROLE = "booking";

const unknownLink = (): SlotsAnswer => ({ ok: false, error: "unknown_link", slots: [] });

export type BookingService = ReturnType<typeof bookingService>;

export function bookingService(sql: Sql, clock: Clock, opts: BookingOptions) {
  const windowsCache = new LRUCache<string, Window[][]>({ max: 1000 });
  const candidateCache = new LRUCache<string, Kept>({ max: 1000 });
  const answerCache = new LRUCache<number, Answer>({ max: 1000 });
  // Slots reads arriving together share one statement; each read's statement is sent after the
  // read arrived, so it sees every booking committed before the request came.
  const seatReads = hotReads((reads: SeatsRead[]) => calendarsWithSeats(sql, reads), opts.deadlineMs ?? null);
  // Every read by slug (slots, book, the page) answers a slug just found unknown from memory.
  const unknown = new UnknownLinks(clock);

  function rulesOf(c: CalendarRow): CalendarRules {
    let windows = windowsCache.get(c.hours);
    if (!windows) {
      windows = parseHours(safeJson(c.hours));
      windowsCache.set(c.hours, windows);
    }
    return calendarRules(c, windows);
  }

  /** The candidates of the calendar's local today, kept per exact rules and day. */
  function keptOf(c: CalendarRow, rules: CalendarRules, now: number): Kept {
    const today = todayIn(rules.timezone, now);
    if (!today) return NONE;
    const key = `${c.timezone}\n${c.slot_minutes}\n${c.horizon_days}\n${today.y}-${today.m}-${today.d}\n${c.hours}`;
    let kept = candidateCache.get(key);
    if (!kept) {
      const list = candidateSlots(rules, today);
      // Each slot's JSON up to its `remaining`, serialized once: a slots read then joins strings.
      kept = { list, json: list.map((c) => JSON.stringify(c).slice(0, -1) + ',"remaining":') };
      candidateCache.set(key, kept);
    }
    return kept;
  }

  const candidatesOf = (c: CalendarRow, rules: CalendarRules, now: number) => keptOf(c, rules, now).list;

  /** Verifies a presented token; the appointment it moves, or null. */
  async function appointmentOf(token: string): Promise<AppointmentRow | null> {
    const parts = readToken(token);
    if (!parts) return null;
    const row = await appointmentBySelector(sql, parts.selector);
    return row && tokenMatches(parts.hash, row.token_hash) ? row : null;
  }

  /** What a slots answer is made of; null for an unknown link. */
  async function readSlots(fields: Record<string, unknown>) {
    const slug = slugOf(fields);
    if (!slug || unknown.has(slug)) return null;
    const now = clock.now();
    const found = await seatReads.load({ slug, from: Math.floor(now / 1000) });
    if (!found) {
      unknown.add(slug);
      return null;
    }
    const { calendar, seats } = found;
    const rules = rulesOf(calendar);
    // The reschedule view reads the appointment its token moves through this same action (the
    // contract has no other); present only when a token came, null when it is not valid here.
    const token = tokenOf(fields);
    let appointment: AppointmentView | null | undefined;
    let moving: number | null = null;
    if (token) {
      const appt = await appointmentOf(token);
      const mine = appt && appt.calendar.id === calendar.id ? appt : null;
      appointment = mine ? viewOf(mine, now) : null;
      // With buffers, the appointment being moved does not block the slots around it (Cal.com
      // leaves the booking being rescheduled out of the busy times): its reach is where it may
      // well move to, and the trigger, which leaves the row being moved out of its count, agrees.
      if (mine && mine.status === "pending" && reachOf(rules) > 1) moving = mine.slot_epoch;
    }
    return { calendar, rules, seats, now, kept: keptOf(calendar, rules, now), appointment, moving };
  }

  /**
   * The slots of a reschedule view of a buffered calendar: without the seat of the appointment
   * being moved, and without its own start (nothing to move to there). Built for each such read.
   */
  function slotsMoving(rules: CalendarRules, seats: readonly number[], now: number, kept: Kept, moving: number) {
    const others = [...seats];
    const at = others.indexOf(moving);
    if (at >= 0) others.splice(at, 1); // a start read before the seats' window is not among them
    const out: { index: number; remaining: number }[] = [];
    eachOpenSlot(rules, countSeats(others), now, kept.list, (c, index, remaining) => c.epoch !== moving && out.push({ index, remaining }));
    return out;
  }

  /** action=slots as a value. */
  async function slots(fields: Record<string, unknown>): Promise<SlotsAnswer> {
    const read = await readSlots(fields);
    if (!read) return unknownLink();
    const { calendar, rules, seats, now, kept, appointment, moving } = read;
    const open =
      moving === null
        ? openSlots(rules, countSeats(seats), now, kept.list)
        : slotsMoving(rules, seats, now, kept, moving).map(({ index, remaining }) => ({ ...kept.list[index], remaining }));
    const result: SlotsAnswer = { ok: true, slots: open, tz: calendar.timezone, name: calendar.name };
    if (appointment !== undefined) result.appointment = appointment;
    return result;
  }

  /**
   * action=slots as the JSON text answered: the same as JSON.stringify(await slots(fields)), built
   * from each slot's JSON kept with the candidates (the read answered most often). The usual
   * answer (no token) comes as the UTF-8 bytes kept with the calendar's last answer: encoding a
   * two-week answer (some 20 KB) again for every read was as dear as the rest of the request.
   */
  async function slotsJson(fields: Record<string, unknown>): Promise<string | Uint8Array> {
    const read = await readSlots(fields);
    if (!read) return JSON.stringify(unknownLink());
    const { calendar, rules, seats, now, kept, appointment, moving } = read;
    if (moving !== null) {
      const parts = slotsMoving(rules, seats, now, kept, moving).map(({ index, remaining }) => kept.json[index] + remaining + "}");
      return `{"ok":true,"slots":[${parts.join(",")}],"tz":${JSON.stringify(calendar.timezone)},"name":${JSON.stringify(calendar.name)},"appointment":${JSON.stringify(appointment)}}`;
    }
    const first = firstOffered(rules, now, kept.list);
    // The answer is a function of the candidates, the first one still ahead, the seats taken,
    // and the calendar's capacity, buffers, zone and name: while those stay the same (most reads
    // between two bookings), the text built last time is the answer.
    const memo = answerCache.get(calendar.id);
    const reach = reachOf(rules);
    let answer: Answer;
    if (
      memo && memo.kept === kept && memo.first === first && memo.capacity === rules.capacity && memo.reach === reach &&
      memo.tz === calendar.timezone && memo.name === calendar.name && sameSeats(memo.seats, seats)
    ) {
      answer = memo;
    } else {
      const parts: string[] = [];
      eachOpenSlot(rules, countSeats(seats), now, kept.list, (_, i, remaining) => parts.push(kept.json[i] + remaining + "}"));
      const body = `{"ok":true,"slots":[${parts.join(",")}],"tz":${JSON.stringify(calendar.timezone)},"name":${JSON.stringify(calendar.name)}`;
      answer = { kept, first, capacity: rules.capacity, reach, tz: calendar.timezone, name: calendar.name, seats, body, bytes: encoder.encode(body + "}") };
      answerCache.set(calendar.id, answer);
    }
    return appointment === undefined ? answer.bytes : `${answer.body},"appointment":${JSON.stringify(appointment)}}`;
  }

  async function book(fields: Record<string, unknown>): Promise<BookResult | Refused> {
    const slug = slugOf(fields);
    if (!slug || unknown.has(slug)) return refuse("unknown_link");
    const now = clock.now();
    // The epoch is read before the link so that the read can count that slot's seats; a link
    // that does not exist still answers unknown_link first.
    const epoch = epochOf(fields.epoch);
    const found = await calendarWithSeatsAt(sql, slug, epoch ?? 0);
    if (!found) {
      unknown.add(slug);
      return refuse("unknown_link");
    }
    if (epoch === null || epoch * 1000 <= now) return refuse("bad_epoch");
    const person = personOf(fields);
    if ("error" in person) return person;
    const { calendar, taken } = found;
    const rules = rulesOf(calendar);
    const slot = offeredCandidate(rules, now, epoch, candidatesOf(calendar, rules, now));
    // Room as read just now, to spare the transaction when the slot is plainly full; the
    // database decides under the slot's lock.
    if (!slot || taken >= rules.capacity) return refuse("slot_unavailable");

    const at = new Date(now);
    const issued = issueToken();
    const rescheduleUrl = `${opts.baseUrl}/book/${slug}?r=${issued.token}`;
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
        // The slot's lock (the capacity trigger) queues bookings of one slot: each waits its turn.
        await tx`select ${waitingForTurn(tx)}`;
        const leadId = match ? match.id : list ? (await createOrDedupLeadIn(tx, list, lead, at, "booking")).lead_id : null;
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
          { type: "appointment.booked", data, attribution: true },
          // Its automations' runs (confirmation, reminders) with their jobs, in the same statement.
          { appointment_time: slot.label, reschedule_url: rescheduleUrl },
        );
        return row.id;
      });
      return {
        ok: true,
        appt_id: id,
        label: slot.label,
        token: issued.token,
        reschedule_url: rescheduleUrl,
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
    if (withinCancelNotice(appt.slot_epoch, appt.calendar, now)) return refuse("within_cancel_notice");
    if (epoch === null || epoch * 1000 <= now) return refuse("bad_epoch");
    if (epoch === appt.slot_epoch) return { ok: true, appt_id: appt.id, epoch };
    const { calendar } = appt;
    const rules = rulesOf(calendar);
    const slot = offeredCandidate(rules, now, epoch, candidatesOf(calendar, rules, now));
    if (!slot) return refuse("slot_unavailable");

    const at = new Date(now);
    try {
      const outcome = await sql.begin(async (tx) => {
        await tx`select ${waitingForTurn(tx)}`;
        // The row as committed now, locked: a concurrent move or status change is seen, not undone.
        const current = await lockAppointment(tx, appt.id);
        if (!current || current.status !== "pending") return "not_pending" as const;
        if (current.slot_epoch === epoch) return "moved" as const;
        // Moved meanwhile (by another request with the token) to a start within the notice.
        if (withinCancelNotice(current.slot_epoch, calendar, now)) return "within_cancel_notice" as const;
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
        // The reminders move with it (the old start's jobs go), in this transaction.
        await rescheduleRuns(tx, {
          apptId: appt.id,
          orgId: calendar.org_id,
          leadId: current.lead_id,
          epoch,
          merge: { appointment_time: slot.label, reschedule_url: `${opts.baseUrl}/book/${appt.link_slug}?r=${token}` },
          now: at,
        });
        return "moved" as const;
      });
      if (outcome !== "moved") return refuse(outcome);
      return { ok: true, appt_id: appt.id, epoch };
    } catch (err) {
      if (isSlotFull(err)) return refuse("slot_unavailable");
      throw err;
    }
  }

  /** The booking page's lookup (it answers 404 for null): null for an unknown link, else what the page shows of it. */
  async function linkPageOf(slug: string): Promise<{ business: string } | null> {
    const s = slugOf({ slug });
    if (!s || unknown.has(s)) return null;
    const page = await linkPage(sql, s);
    if (!page) unknown.add(s);
    return page;
  }

  return { slots, slotsJson, book, reschedule, linkPage: linkPageOf };
}

/** A calendar's candidates and each one's JSON up to its `remaining` (see keptOf). */
interface Kept {
  list: Candidate[];
  json: string[];
}

const NONE: Kept = { list: [], json: [] };

/** The last slots answer built for a calendar (without its closing brace), and what it came from. */
interface Answer {
  kept: Kept;
  first: number;
  capacity: number;
  /** reachOf the rules (the slot and its buffers). */
  reach: number;
  tz: string;
  name: string;
  seats: readonly number[];
  body: string;
  /** The whole answer without an appointment, as sent. */
  bytes: Uint8Array;
}

const encoder = new TextEncoder();

function sameSeats(a: readonly number[], b: readonly number[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function viewOf(a: AppointmentRow, now: number): AppointmentView {
  return {
    appt_id: a.id,
    epoch: a.slot_epoch,
    label: slotLabel(a.slot_epoch, a.calendar.timezone),
    status: a.status,
    movable: a.status === "pending" && !withinCancelNotice(a.slot_epoch, a.calendar, now),
  };
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

/** A calendar's rules as the slots module reads them (`windows`: its hours parsed, when kept already). */
export function calendarRules(c: CalendarRow, windows: Window[][] = parseHours(safeJson(c.hours))): CalendarRules {
  return {
    id: c.id,
    orgId: c.org_id,
    name: c.name,
    timezone: c.timezone,
    slotMinutes: c.slot_minutes,
    capacity: c.capacity,
    minNoticeMinutes: c.min_notice_minutes,
    horizonDays: c.horizon_days,
    bufferBeforeMinutes: c.buffer_before_minutes,
    bufferAfterMinutes: c.buffer_after_minutes,
    windows,
  };
}

/**
 * Whether an appointment starting at `epoch` is too close for its person to move it: less than
 * min_cancel_notice_minutes before its start (exactly the notice before still moves), as Cal.com's
 * isWithinMinimumRescheduleNotice has it. Like Cal.com's, the rule ends at the start: a pending
 * appointment whose time has passed can be moved by its token as it always could (the person
 * missed it and picks another time). 0 sets no limit. Staff in the console are not bound by it
 * (src/booking/states.ts).
 */
export function withinCancelNotice(epoch: number, calendar: Pick<CalendarRow, "min_cancel_notice_minutes">, now: number): boolean {
  const notice = calendar.min_cancel_notice_minutes;
  const ahead = epoch * 1000 - now;
  return notice > 0 && ahead > 0 && ahead < notice * 60_000;
}

/** The capacity trigger found the slot full (src/db/sqlstate.ts). */
export const isSlotFull = (err: unknown) => classify(err) === "slot_full";
