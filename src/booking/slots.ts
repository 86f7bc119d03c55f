// Slot generation: a pure function of the calendar's rules, its live bookings and the time.
//
// A calendar has weekly windows of wall-clock time in its own zone ({"mon": [["09:00", "17:00"]]}).
// On each local day from today through horizon_days - 1 days ahead, a window opens at the first
// instant the zone's clock reads its start and closes at the first instant it reads its end; slots
// start at the opening and every slot_minutes of elapsed time after it, and a slot is kept when it
// ends by the close. So a window that spans a daylight-saving change holds the appointments that
// physically fit in it: 01:00-04:00 on the night clocks go forward holds two hours (01:00, 01:30,
// 03:00, 03:30), on the night they go back four (the repeated hour's times are told apart by their
// zone abbreviation in `time`). A slot is offered when it starts after now plus min_notice_minutes
// and fewer than `capacity` live bookings conflict with it; `remaining` is what is left.
//
// Buffers (Cal.com's beforeEventBuffer/afterEventBuffer, as its getBusyTimes applies them): an
// appointment holds [start - buffer_before, end + buffer_after], every appointment of a calendar
// is slot_minutes long, and two conflict when those spans overlap, that is when their starts are
// less than slot_minutes + buffer_before + buffer_after apart (`reachOf`). A calendar without
// buffers keeps the rule it had before them: only the same start conflicts (on one grid that is
// the same thing; it differs only for appointments left off the grid by a change of the rules,
// which keep counting per start as they always did). The capacity trigger
// (sql/0025_booking_buffers.sql) refuses a write by exactly this rule. Buffers only keep
// appointments apart: they may lie outside the weekly hours (a 9:00 slot with a 15-minute buffer
// before it is offered when the hours open at 9:00), as in Cal.com.
import { instantOf, isZone, offsetAt, wallOf } from "../zone";
import { addDays, civilOf, dayKeyOf, dayText, timeText, wallAt, weekdayOf, zoneAbbr, type CivilDate } from "./zone";

/** [start, end) in minutes after local midnight; end may be 1440 (midnight at the day's end). */
export type Window = readonly [number, number];

export interface CalendarRules {
  id: number;
  orgId: number | null;
  name: string;
  timezone: string;
  slotMinutes: number;
  capacity: number;
  minNoticeMinutes: number;
  horizonDays: number;
  /** Minutes kept free before each appointment (0-240). */
  bufferBeforeMinutes: number;
  /** Minutes kept free after each appointment (0-240). */
  bufferAfterMinutes: number;
  /** Indexed by weekday, 0 = Sunday. */
  windows: readonly (readonly Window[])[];
}

/** A slot as the contract returns it. */
export interface Slot {
  epoch: number;
  label: string;
  dayKey: string;
  day: string;
  time: string;
  remaining: number;
}

/** A slot the rules produce before notice and bookings are applied. */
export type Candidate = Omit<Slot, "remaining">;

const DAY_NAMES = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"] as const;
const MINUTE = 60_000;
/** Provisioning caps the horizon at 366 days; a row written by hand is held to the same. */
export const MAX_HORIZON_DAYS = 366;

function minutesOf(v: unknown, allowMidnight: boolean): number | null {
  if (typeof v !== "string") return null;
  const m = /^(\d{2}):(\d{2})$/.exec(v);
  if (!m) return null;
  const [h, mi] = [Number(m[1]), Number(m[2])];
  if (allowMidnight && h === 24 && mi === 0) return 1440;
  return h < 24 && mi < 60 ? h * 60 + mi : null;
}

/**
 * Weekly hours from the stored jsonb. Provisioning validates them; a row written by other means
 * may hold anything, and a malformed window is skipped rather than failing every read.
 */
export function parseHours(raw: unknown): Window[][] {
  const out: Window[][] = DAY_NAMES.map(() => []);
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return out;
  const hours = raw as Record<string, unknown>;
  DAY_NAMES.forEach((name, wd) => {
    const list = hours[name];
    if (!Array.isArray(list)) return;
    for (const w of list) {
      if (!Array.isArray(w) || w.length !== 2) continue;
      const start = minutesOf(w[0], false);
      const end = minutesOf(w[1], true);
      if (start !== null && end !== null && start < end) out[wd].push([start, end]);
    }
  });
  return out;
}

/** Whether the rules can produce slots at all (sane numbers, a zone the runtime knows). */
function usable(rules: CalendarRules): boolean {
  return (
    Number.isInteger(rules.slotMinutes) &&
    rules.slotMinutes >= 1 &&
    Number.isInteger(rules.capacity) &&
    rules.capacity >= 1 &&
    Number.isFinite(rules.minNoticeMinutes) &&
    Number.isInteger(rules.bufferBeforeMinutes) &&
    rules.bufferBeforeMinutes >= 0 &&
    Number.isInteger(rules.bufferAfterMinutes) &&
    rules.bufferAfterMinutes >= 0 &&
    Number.isInteger(rules.horizonDays) &&
    rules.horizonDays >= 1 &&
    isZone(rules.timezone)
  );
}

/** Per zone, the local day last asked for and the instants it starts and ends at. */
const days = new Map<string, { date: CivilDate; from: number; to: number }>();

/**
 * The local date in the calendar's zone at `now` (ms); null for a zone the runtime does not know.
 * Asked on every slots read: the day's bounds are kept, so that Intl is read once a day per zone.
 */
export function todayIn(tz: string, now: number): CivilDate | null {
  const kept = days.get(tz);
  if (kept && now >= kept.from && now < kept.to) return kept.date;
  if (!isZone(tz)) return null;
  const date = civilOf(wallOf(now, tz));
  const from = instantOf(wallAt(date, 0), tz);
  const to = instantOf(wallAt(addDays(date, 1), 0), tz);
  // A zone whose clock skips midnight or repeats it has odd bounds; keep only sane ones.
  if (from <= now && now < to) {
    if (days.size > 1000) days.clear();
    days.set(tz, { date, from, to });
  }
  return date;
}

/** Every slot the weekly windows produce on the horizon that starts on `today`, sorted by time. */
export function candidateSlots(rules: CalendarRules, today: CivilDate): Candidate[] {
  if (!usable(rules)) return [];
  const tz = rules.timezone;
  const step = rules.slotMinutes * MINUTE;
  // Each start with the zone's offset there. Reading the offset (Intl) dominates the cost, so a
  // window whose two ends share an offset gives it to every slot inside: zones change offset at
  // most once within a day, and a window lies within one.
  const starts = new Map<number, number>();
  const horizon = Math.min(rules.horizonDays, MAX_HORIZON_DAYS);
  for (let i = 0; i < horizon; i++) {
    const date = addDays(today, i);
    for (const [from, to] of rules.windows[weekdayOf(date)] ?? []) {
      const open = instantOf(wallAt(date, from), tz);
      const close = instantOf(wallAt(date, to), tz);
      if (open + step > close) continue;
      const first = offsetAt(open, tz);
      const same = first === offsetAt(close - 1, tz);
      for (let t = open; t + step <= close; t += step) starts.set(t, same ? first : offsetAt(t, tz));
    }
  }
  // The abbreviation goes with the offset (per horizon; a zone renamed without an offset change
  // inside one horizon is not something the tz database holds for the years that matter here).
  const abbrs = new Map<number, string>();
  const slots = [...starts.keys()]
    .sort((a, b) => a - b)
    .map((t) => {
      const offset = starts.get(t)!;
      const wall = t + offset;
      const date = civilOf(wall);
      let abbr = abbrs.get(offset);
      if (abbr === undefined) abbrs.set(offset, (abbr = zoneAbbr(t, tz)));
      return { t, date, dayKey: dayKeyOf(date), time: timeText(wall), abbr };
    });
  // The repeated hour when clocks go back shows the same times twice in one day: those times
  // carry their zone abbreviation ("1:30 AM CDT", "1:30 AM CST") so that a person can tell them apart.
  const count = new Map<string, number>();
  for (const s of slots) count.set(`${s.dayKey} ${s.time}`, (count.get(`${s.dayKey} ${s.time}`) ?? 0) + 1);
  return slots.map((s) => ({
    epoch: Math.floor(s.t / 1000),
    label: labelText(s.date, s.time, s.abbr),
    dayKey: s.dayKey,
    day: dayText(s.date),
    time: count.get(`${s.dayKey} ${s.time}`)! > 1 ? `${s.time} ${s.abbr}` : s.time,
  }));
}

/** Live bookings per start (epoch seconds). */
export type Booked = ReadonlyMap<number, number>;

/**
 * Seconds: two appointments of the calendar conflict when their starts are less than this apart
 * ([start - before, start + slot + after] spans overlap; half-open, so spans that only touch do not).
 * Without buffers, 1: only the same start conflicts, as before buffers existed.
 */
export function reachOf(rules: Pick<CalendarRules, "slotMinutes" | "bufferBeforeMinutes" | "bufferAfterMinutes">): number {
  const buffers = rules.bufferBeforeMinutes + rules.bufferAfterMinutes;
  return buffers > 0 ? (rules.slotMinutes + buffers) * 60 : 1;
}

/** The earliest start (ms) offered at `now`: strictly in the future and at least the notice ahead. */
export const earliestStart = (rules: CalendarRules, now: number): number =>
  Math.max(now + 1, now + rules.minNoticeMinutes * MINUTE);

/**
 * The offered slots at `now`. `candidates` may be passed in when the caller keeps them (they depend
 * only on the rules and the local date, see candidateSlots); they must be for todayIn(tz, now).
 */
export function openSlots(
  rules: CalendarRules,
  booked: Booked,
  now: number,
  candidates: readonly Candidate[] | null = null,
): Slot[] {
  const out: Slot[] = [];
  eachOpenSlot(rules, booked, now, candidates ?? candidatesAt(rules, now), (c, _, remaining) => out.push({ ...c, remaining }));
  return out;
}

/** Visits each offered candidate in order, with its index in `candidates` and the seats left. */
export function eachOpenSlot(
  rules: CalendarRules,
  booked: Booked,
  now: number,
  candidates: readonly Candidate[],
  visit: (c: Candidate, index: number, remaining: number) => void,
): void {
  const first = firstOffered(rules, now, candidates);
  if (first >= candidates.length) return;
  const reach = reachOf(rules);
  // Bookings sorted by start; candidates are sorted too, so the bookings within reach of each
  // candidate are a window [lo, hi) that only moves forward, its count kept as it moves.
  const starts = [...booked.keys()].sort((a, b) => a - b);
  let lo = 0;
  let hi = 0;
  let within = 0;
  for (let i = first; i < candidates.length; i++) {
    const c = candidates[i];
    while (hi < starts.length && starts[hi] < c.epoch + reach) within += booked.get(starts[hi++])!;
    while (lo < hi && starts[lo] <= c.epoch - reach) within -= booked.get(starts[lo++])!;
    const remaining = rules.capacity - within;
    if (remaining > 0) visit(c, i, remaining);
  }
}

/** The index of the first candidate at or after the earliest start (sorted: binary search). */
export function firstOffered(rules: CalendarRules, now: number, candidates: readonly Candidate[]): number {
  const from = earliestStart(rules, now);
  let lo = 0;
  let hi = candidates.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (candidates[mid].epoch * 1000 < from) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function candidatesAt(rules: CalendarRules, now: number): Candidate[] {
  const today = todayIn(rules.timezone, now);
  return today ? candidateSlots(rules, today) : [];
}

/**
 * The candidate starting at `epoch` when the rules offer a slot there at `now`, ignoring bookings
 * (the database decides room under a lock). Null when no such slot is on offer.
 */
export function offeredCandidate(
  rules: CalendarRules,
  now: number,
  epoch: number,
  candidates: readonly Candidate[] | null = null,
): Candidate | null {
  if (epoch * 1000 < earliestStart(rules, now)) return null;
  const list = candidates ?? candidatesAt(rules, now);
  // Sorted by epoch: binary search.
  let lo = 0;
  let hi = list.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const e = list[mid].epoch;
    if (e === epoch) return list[mid];
    if (e < epoch) lo = mid + 1;
    else hi = mid - 1;
  }
  return null;
}

/** The label of any start (epoch seconds) in the zone, as slots carry it. */
export function slotLabel(epoch: number, tz: string): string {
  if (!isZone(tz)) return new Date(epoch * 1000).toISOString();
  const t = epoch * 1000;
  const wall = wallOf(t, tz);
  const date = civilOf(wall);
  return labelText(date, timeText(wall), zoneAbbr(t, tz));
}

const labelText = (date: CivilDate, time: string, abbr: string) => `${dayText(date)}, ${date.y} at ${time} ${abbr}`;
