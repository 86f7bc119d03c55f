// Slot generation without a database: daylight-saving changes, zones east of UTC and far from the
// server's, uneven windows, notice, horizon, bookings; properties against a brute-force reference.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  candidateSlots,
  offeredCandidate,
  openSlots,
  parseHours,
  reachOf,
  todayIn,
  type CalendarRules,
  type Slot,
} from "../src/booking/slots";

const iso = (epoch: number) => new Date(epoch * 1000).toISOString().slice(0, 16) + "Z";
const ms = (s: string) => Date.parse(s);

function rules(timezone: string, hours: unknown, extra: Partial<CalendarRules> = {}): CalendarRules {
  return {
    id: 1,
    orgId: 1,
    name: "Estimates",
    timezone,
    slotMinutes: 30,
    capacity: 1,
    minNoticeMinutes: 0,
    horizonDays: 1,
    bufferBeforeMinutes: 0,
    bufferAfterMinutes: 0,
    windows: parseHours(hours),
    ...extra,
  };
}

/** The slots of one local day, read at that day's local midnight-ish (now well before the window). */
function dayOf(r: CalendarRules, nowIso: string, booked = new Map<number, number>()): Slot[] {
  return openSlots(r, booked, ms(nowIso));
}

describe("daylight-saving changes of the calendar's zone", () => {
  // America/New_York 2026: clocks go forward Sun Mar 8 02:00 EST → 03:00 EDT, back Sun Nov 1 02:00 EDT → 01:00 EST.
  const ny = (hours: unknown, extra: Partial<CalendarRules> = {}) => rules("America/New_York", hours, extra);

  test("a window crossing 02:00 when clocks go forward holds the two hours that exist", () => {
    const slots = dayOf(ny({ sun: [["01:00", "04:00"]] }), "2026-03-08T05:10:00Z");
    expect(slots.map((s) => iso(s.epoch))).toEqual(["2026-03-08T06:00Z", "2026-03-08T06:30Z", "2026-03-08T07:00Z", "2026-03-08T07:30Z"]);
    expect(slots.map((s) => s.time)).toEqual(["1:00 AM", "1:30 AM", "3:00 AM", "3:30 AM"]);
    expect(slots.map((s) => s.label)).toEqual([
      "Sunday, March 8, 2026 at 1:00 AM EST",
      "Sunday, March 8, 2026 at 1:30 AM EST",
      "Sunday, March 8, 2026 at 3:00 AM EDT",
      "Sunday, March 8, 2026 at 3:30 AM EDT",
    ]);
    expect(new Set(slots.map((s) => s.dayKey))).toEqual(new Set(["2026-03-08"]));
    expect(new Set(slots.map((s) => s.day))).toEqual(new Set(["Sunday, March 8"]));
  });

  test("a window crossing 02:00 when clocks go back holds four hours; the repeated times name their zone", () => {
    const slots = dayOf(ny({ sun: [["01:00", "04:00"]] }), "2026-11-01T04:00:00Z");
    expect(slots.map((s) => iso(s.epoch))).toEqual([
      "2026-11-01T05:00Z", "2026-11-01T05:30Z", "2026-11-01T06:00Z", "2026-11-01T06:30Z",
      "2026-11-01T07:00Z", "2026-11-01T07:30Z", "2026-11-01T08:00Z", "2026-11-01T08:30Z",
    ]);
    expect(slots.map((s) => s.time)).toEqual([
      "1:00 AM EDT", "1:30 AM EDT", "1:00 AM EST", "1:30 AM EST", "2:00 AM", "2:30 AM", "3:00 AM", "3:30 AM",
    ]);
    expect(new Set(slots.map((s) => s.label)).size).toBe(8);
  });

  test("a window that starts inside the skipped hour opens when the clock jumps", () => {
    const slots = dayOf(ny({ sun: [["02:30", "04:00"]] }), "2026-03-08T05:10:00Z");
    expect(slots.map((s) => `${iso(s.epoch)} ${s.time}`)).toEqual(["2026-03-08T07:00Z 3:00 AM", "2026-03-08T07:30Z 3:30 AM"]);
  });

  test("a window that ends inside the skipped hour closes when the clock jumps", () => {
    const slots = dayOf(ny({ sun: [["00:30", "02:30"]] }), "2026-03-08T05:10:00Z");
    expect(slots.map((s) => s.time)).toEqual(["12:30 AM", "1:00 AM", "1:30 AM"]);
    expect(iso(slots[2].epoch)).toBe("2026-03-08T06:30Z");
  });

  test("a window lying wholly inside the skipped hour has no slots", () => {
    expect(dayOf(ny({ sun: [["02:00", "02:59"]] }), "2026-03-08T05:10:00Z")).toEqual([]);
  });

  test("afternoon slots on both change days carry the new offset", () => {
    const hours = { sun: [["13:00", "17:00"]] };
    const spring = dayOf(ny(hours), "2026-03-08T05:10:00Z");
    expect(spring).toHaveLength(8);
    expect(iso(spring[0].epoch)).toBe("2026-03-08T17:00Z"); // 13:00 EDT
    expect(iso(spring[7].epoch)).toBe("2026-03-08T20:30Z"); // 16:30 EDT
    expect(spring[0].label).toBe("Sunday, March 8, 2026 at 1:00 PM EDT");
    const autumn = dayOf(ny(hours), "2026-11-01T04:00:00Z");
    expect(autumn).toHaveLength(8);
    expect(iso(autumn[0].epoch)).toBe("2026-11-01T18:00Z"); // 13:00 EST
    expect(autumn.map((s) => s.time)).toEqual(["1:00 PM", "1:30 PM", "2:00 PM", "2:30 PM", "3:00 PM", "3:30 PM", "4:00 PM", "4:30 PM"]);
    expect(autumn[7].label).toBe("Sunday, November 1, 2026 at 4:30 PM EST");
  });

  test("a horizon that crosses a change keeps every slot at the same wall-clock time", () => {
    // Wed Oct 28 2026, 08:00 EDT; two weeks of weekday mornings, across Nov 1.
    const r = ny({ mon: [["09:00", "10:00"]], tue: [["09:00", "10:00"]], wed: [["09:00", "10:00"]], thu: [["09:00", "10:00"]], fri: [["09:00", "10:00"]] }, { horizonDays: 14 });
    const slots = dayOf(r, "2026-10-28T12:00:00Z");
    expect(slots).toHaveLength(10 * 2);
    expect(slots[0].dayKey).toBe("2026-10-28");
    expect(slots.at(-1)!.dayKey).toBe("2026-11-10");
    expect(new Set(slots.map((s) => s.time))).toEqual(new Set(["9:00 AM", "9:30 AM"]));
    const nines = slots.filter((s) => s.time === "9:00 AM");
    expect(nines.filter((s) => s.dayKey < "2026-11-01").every((s) => new Date(s.epoch * 1000).getUTCHours() === 13)).toBe(true);
    expect(nines.filter((s) => s.dayKey > "2026-11-01").every((s) => new Date(s.epoch * 1000).getUTCHours() === 14)).toBe(true);
  });

  test("Europe/London: the change at 01:00 GMT inside a window", () => {
    // Sun Mar 29 2026: 01:00 GMT → 02:00 BST. 00:30–02:30 holds 00:30 GMT and 02:00 BST.
    const slots = dayOf(rules("Europe/London", { sun: [["00:30", "02:30"]] }), "2026-03-29T00:10:00Z");
    expect(slots.map((s) => `${iso(s.epoch)} ${s.time}`)).toEqual(["2026-03-29T00:30Z 12:30 AM", "2026-03-29T01:00Z 2:00 AM"]);
  });
});

describe("zones east of UTC and far from the server's", () => {
  test("Australia/Sydney (east of UTC, southern hemisphere): both changes", () => {
    const r = rules("Australia/Sydney", { sun: [["01:00", "04:00"]] });
    // Sun Oct 4 2026: 02:00 AEST → 03:00 AEDT.
    const spring = dayOf(r, "2026-10-03T14:10:00Z");
    expect(spring.map((s) => s.time)).toEqual(["1:00 AM", "1:30 AM", "3:00 AM", "3:30 AM"]);
    expect(iso(spring[0].epoch)).toBe("2026-10-03T15:00Z");
    expect(spring[0].dayKey).toBe("2026-10-04");
    // Sun Apr 5 2026: 03:00 AEDT → 02:00 AEST.
    const autumn = dayOf(r, "2026-04-04T13:10:00Z");
    expect(autumn).toHaveLength(8);
    expect(autumn.map((s) => s.time).slice(2, 6)).toEqual(["2:00 AM GMT+11", "2:30 AM GMT+11", "2:00 AM GMT+10", "2:30 AM GMT+10"]);
  });

  test("Asia/Kolkata (+05:30): local day and times, a window that does not divide evenly", () => {
    const slots = dayOf(rules("Asia/Kolkata", { mon: [["09:00", "10:40"]] }), "2026-11-22T20:00:00Z"); // Mon 01:30 IST
    expect(slots.map((s) => `${iso(s.epoch)} ${s.time}`)).toEqual([
      "2026-11-23T03:30Z 9:00 AM", "2026-11-23T04:00Z 9:30 AM", "2026-11-23T04:30Z 10:00 AM",
    ]);
    expect(slots[0].label).toBe("Monday, November 23, 2026 at 9:00 AM GMT+5:30");
  });

  test("Pacific/Kiritimati (+14): 'today' is the calendar's date, a day ahead of UTC", () => {
    // 2026-11-23T11:00Z is Tuesday Nov 24, 01:00 in Kiritimati.
    const r = rules("Pacific/Kiritimati", { mon: [["09:00", "10:00"]], tue: [["09:00", "10:00"]] });
    expect(todayIn(r.timezone, ms("2026-11-23T11:00:00Z"))).toEqual({ y: 2026, m: 11, d: 24 });
    const slots = dayOf(r, "2026-11-23T11:00:00Z");
    expect(slots.map((s) => `${s.dayKey} ${s.day} ${s.time} ${iso(s.epoch)}`)).toEqual([
      "2026-11-24 Tuesday, November 24 9:00 AM 2026-11-23T19:00Z",
      "2026-11-24 Tuesday, November 24 9:30 AM 2026-11-23T19:30Z",
    ]);
  });

  test("Pacific/Pago_Pago (-11): 'today' is a day behind UTC", () => {
    const r = rules("Pacific/Pago_Pago", { sun: [["20:00", "21:00"]], mon: [["20:00", "21:00"]] });
    const slots = dayOf(r, "2026-11-23T06:00:00Z"); // Sun Nov 22, 19:00 local
    expect(slots.map((s) => `${s.dayKey} ${s.time} ${iso(s.epoch)}`)).toEqual([
      "2026-11-22 8:00 PM 2026-11-23T07:00Z",
      "2026-11-22 8:30 PM 2026-11-23T07:30Z",
    ]);
  });

  test("Pacific/Chatham (+13:45 in summer) and a window ending at midnight", () => {
    const slots = dayOf(rules("Pacific/Chatham", { mon: [["23:00", "24:00"]] }, { slotMinutes: 20 }), "2026-11-22T12:00:00Z");
    expect(slots.map((s) => `${s.dayKey} ${s.time}`)).toEqual(["2026-11-23 11:00 PM", "2026-11-23 11:20 PM", "2026-11-23 11:40 PM"]);
    expect(iso(slots[0].epoch)).toBe("2026-11-23T09:15Z");
  });

  test("the server's own zone plays no part", () => {
    const r = rules("America/Los_Angeles", { sun: [["01:00", "04:00"]], mon: [["09:00", "12:00"]] }, { horizonDays: 3 });
    const now = ms("2026-11-01T06:00:00Z");
    const before = process.env.TZ;
    try {
      process.env.TZ = "UTC";
      const a = openSlots(r, new Map(), now);
      process.env.TZ = "Pacific/Kiritimati";
      const b = openSlots(r, new Map(), now);
      process.env.TZ = "America/St_Johns";
      const c = openSlots(r, new Map(), now);
      expect(a.length).toBeGreaterThan(0);
      expect(b).toEqual(a);
      expect(c).toEqual(a);
    } finally {
      if (before === undefined) delete process.env.TZ;
      else process.env.TZ = before;
    }
  });
});

describe("windows, notice, horizon and bookings", () => {
  const chicago = (hours: unknown, extra: Partial<CalendarRules> = {}) => rules("America/Chicago", hours, extra);
  // Monday Nov 23 2026, 06:00 CST = 12:00Z.
  const monday = "2026-11-23T12:00:00Z";

  test("slots start every slot_minutes from each window's start and must end inside it", () => {
    const slots = dayOf(chicago({ mon: [["09:00", "10:45"], ["13:10", "15:00"]] }, { slotMinutes: 45 }), monday);
    expect(slots.map((s) => s.time)).toEqual(["9:00 AM", "9:45 AM", "1:10 PM", "1:55 PM"]);
  });

  test("a window shorter than a slot has none", () => {
    expect(dayOf(chicago({ mon: [["09:00", "09:20"]] }), monday)).toEqual([]);
  });

  test("min_notice_minutes: a slot exactly the notice ahead is offered, one second less is not", () => {
    const r = chicago({ mon: [["09:00", "11:00"]] }, { minNoticeMinutes: 60 });
    expect(openSlots(r, new Map(), ms("2026-11-23T14:00:00Z")).map((s) => s.time)).toEqual(["9:00 AM", "9:30 AM", "10:00 AM", "10:30 AM"]);
    expect(openSlots(r, new Map(), ms("2026-11-23T14:00:01Z")).map((s) => s.time)).toEqual(["9:30 AM", "10:00 AM", "10:30 AM"]);
  });

  test("a slot starting now is not in the future, even without notice", () => {
    const r = chicago({ mon: [["09:00", "10:00"]] });
    expect(openSlots(r, new Map(), ms("2026-11-23T15:00:00Z")).map((s) => s.time)).toEqual(["9:30 AM"]);
  });

  test("horizon_days counts local days from today", () => {
    const every = Object.fromEntries(["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map((d) => [d, [["09:00", "09:30"]]]));
    const slots = dayOf(chicago(every, { horizonDays: 3 }), monday);
    expect(slots.map((s) => s.dayKey)).toEqual(["2026-11-23", "2026-11-24", "2026-11-25"]);
    expect(slots.map((s) => s.day)).toEqual(["Monday, November 23", "Tuesday, November 24", "Wednesday, November 25"]);
  });

  test("remaining is capacity minus live bookings; full (or over-full) slots are not offered", () => {
    const r = chicago({ mon: [["09:00", "11:00"]] }, { capacity: 3 });
    const all = dayOf(r, monday);
    const booked = new Map([[all[0].epoch, 1], [all[1].epoch, 3], [all[2].epoch, 5]]);
    const slots = dayOf(r, monday, booked);
    expect(slots.map((s) => [s.time, s.remaining])).toEqual([["9:00 AM", 2], ["10:30 AM", 3]]);
  });

  test("unusable rules produce no slots and never throw", () => {
    for (const r of [
      chicago({ mon: [["09:00", "10:00"]] }, { timezone: "Mars/Olympus_Mons" }),
      chicago({ mon: [["09:00", "10:00"]] }, { slotMinutes: 0 }),
      chicago({ mon: [["09:00", "10:00"]] }, { slotMinutes: 12.5 }),
      chicago({ mon: [["09:00", "10:00"]] }, { capacity: 0 }),
      chicago({ mon: [["09:00", "10:00"]] }, { horizonDays: 0 }),
      chicago({ mon: [["10:00", "09:00"]] }),
      chicago({ mon: [["9:00", "10:00"], ["09:00"], "x", ["25:00", "26:00"]] }),
      chicago([["09:00", "10:00"]]),
      chicago(null),
      chicago("mon"),
    ]) {
      expect(dayOf(r, monday)).toEqual([]);
    }
  });

  test("the horizon is capped at 366 days", () => {
    const every = Object.fromEntries(["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map((d) => [d, [["09:00", "09:30"]]]));
    expect(dayOf(chicago(every, { horizonDays: 100_000 }), monday)).toHaveLength(366);
  });

  test("offeredCandidate: on the grid, after the notice, inside the horizon", () => {
    const r = chicago({ mon: [["09:00", "11:00"]] }, { minNoticeMinutes: 60, horizonDays: 7 });
    const now = ms(monday);
    const [first] = openSlots(r, new Map(), now);
    expect(offeredCandidate(r, now, first.epoch)?.label).toBe(first.label);
    expect(offeredCandidate(r, now, first.epoch + 60)).toBeNull();
    expect(offeredCandidate(r, now, first.epoch - 7 * 86400)).toBeNull();
    expect(offeredCandidate(r, now, first.epoch + 7 * 86400)).toBeNull(); // next Monday: beyond 7 days
    expect(offeredCandidate(r, ms("2026-11-23T14:30:00Z"), first.epoch)).toBeNull(); // 9:00 within the notice
  });
});

// ---- properties -------------------------------------------------------------------------------

const ZONES = [
  "America/New_York", "America/Chicago", "America/Los_Angeles", "America/St_Johns", "America/Santiago",
  "Europe/London", "Europe/Berlin", "Australia/Sydney", "Australia/Lord_Howe", "Asia/Kolkata",
  "Asia/Kathmandu", "Pacific/Chatham", "Pacific/Kiritimati", "Pacific/Pago_Pago", "UTC",
];
// Instants near changes in these zones, so that runs land on change days often.
const CHANGES = ["2026-03-08T07:00:00Z", "2026-11-01T06:00:00Z", "2026-03-29T01:00:00Z", "2026-10-25T01:00:00Z",
  "2026-04-04T16:00:00Z", "2026-10-03T16:00:00Z", "2026-09-06T04:00:00Z", "2026-04-05T03:00:00Z"].map(ms);
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const fmt = new Map<string, Intl.DateTimeFormat>();

/** An independent reading of the zone's clock: [YYYY-MM-DD, minutes after midnight]. */
function localOf(t: number, tz: string): [string, number] {
  let f = fmt.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat("en-CA", { timeZone: tz, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit" });
    fmt.set(tz, f);
  }
  const p = Object.fromEntries(f.formatToParts(t).map((x) => [x.type, x.value]));
  return [`${p.year}-${p.month}-${p.day}`, Number(p.hour) * 60 + Number(p.minute)];
}

/** The zone's offset at `t` (a whole minute), from the independent reading. */
function offsetOf(t: number, tz: string): number {
  const [d, m] = localOf(t, tz);
  return Date.parse(`${d}T00:00:00Z`) + m * 60_000 - t;
}

/**
 * Brute force: the first instant, on a five-minute grid (windows are generated on it, and these
 * zones change offset on quarter hours), at which the clock of `day` reads `minutes` or later.
 * The scan covers the offsets the zone has a day either side, an hour beyond each.
 */
function firstReading(day: string, minutes: number, tz: string): number {
  const base = Date.parse(`${day}T00:00:00Z`) + minutes * 60_000;
  const offsets = [offsetOf(base - 86400_000, tz), offsetOf(base + 86400_000, tz)];
  for (let t = base - Math.max(...offsets) - 3600_000; ; t += 5 * 60_000) {
    const [d, m] = localOf(t, tz);
    if (d > day || (d === day && m >= minutes)) return t;
  }
}

const nextDay = (day: string) => new Date(Date.parse(`${day}T00:00:00Z`) + 86400_000).toISOString().slice(0, 10);

/** The reference slot set: every local day of the horizon, windows bounded by brute force. */
function reference(r: CalendarRules, booked: Map<number, number>, now: number, hours: Record<string, [number, number][]>): number[] {
  const out = new Set<number>();
  let [day] = localOf(now, r.timezone);
  const step = r.slotMinutes * 60_000;
  for (let i = 0; i < r.horizonDays; i++, day = nextDay(day)) {
    for (const [a, b] of hours[DAYS[new Date(`${day}T00:00:00Z`).getUTCDay()]] ?? []) {
      const open = firstReading(day, a, r.timezone);
      const close = b === 1440 ? firstReading(nextDay(day), 0, r.timezone) : firstReading(day, b, r.timezone);
      for (let t = open; t + step <= close; t += step) {
        if (t > now && t >= now + r.minNoticeMinutes * 60_000 && (booked.get(t / 1000) ?? 0) < r.capacity) out.add(t / 1000);
      }
    }
  }
  return [...out].sort((x, y) => x - y);
}

function clock12(minutes: number): string {
  const h = Math.floor(minutes / 60);
  return `${h % 12 === 0 ? 12 : h % 12}:${String(minutes % 60).padStart(2, "0")} ${h < 12 ? "AM" : "PM"}`;
}

const hhmm = (m: number) => (m === 1440 ? "24:00" : `${String(Math.floor(m / 60)).padStart(2, "0")}:${String(m % 60).padStart(2, "0")}`);

/** Non-overlapping windows on a five-minute grid. */
const windowsArb = fc
  .uniqueArray(fc.integer({ min: 0, max: 288 }), { minLength: 0, maxLength: 4 })
  .map((cuts) => {
    const s = [...cuts].sort((a, b) => a - b).map((c) => c * 5);
    const out: [number, number][] = [];
    for (let i = 0; i + 1 < s.length; i += 2) out.push([s[i], s[i + 1]]);
    return out;
  });

const caseArb = fc.record({
  tz: fc.constantFrom(...ZONES),
  hours: fc.record(Object.fromEntries(DAYS.map((d) => [d, windowsArb]))) as fc.Arbitrary<Record<string, [number, number][]>>,
  slotMinutes: fc.constantFrom(5, 15, 20, 25, 30, 45, 50, 60, 90, 120),
  capacity: fc.integer({ min: 1, max: 3 }),
  notice: fc.integer({ min: 0, max: 3000 }),
  horizon: fc.integer({ min: 1, max: 4 }),
  now: fc.oneof(
    fc.integer({ min: ms("2024-01-01T00:00:00Z"), max: ms("2030-12-31T00:00:00Z") }),
    fc.tuple(fc.constantFrom(...CHANGES), fc.integer({ min: -3 * 86400_000, max: 86400_000 })).map(([c, d]) => c + d),
  ),
  bookSeed: fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 0, maxLength: 40 }),
});

describe("properties", () => {
  // The reference builds each window from brute-force readings of the clock, so equality with it
  // also says that every slot lies inside a window of its local day, on the window's grid.
  test("the slots are exactly the brute-force reference's: inside windows, sorted, unique, beyond notice", () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const hours = Object.fromEntries(Object.entries(c.hours).map(([d, ws]) => [d, ws.map(([a, b]) => [hhmm(a), hhmm(b)])]));
        const r = rules(c.tz, hours, { slotMinutes: c.slotMinutes, capacity: c.capacity, minNoticeMinutes: c.notice, horizonDays: c.horizon });
        const all = openSlots(r, new Map(), c.now);
        const booked = new Map<number, number>();
        c.bookSeed.forEach((n, i) => all[i] && n > 0 && booked.set(all[i].epoch, n));
        const slots = openSlots(r, booked, c.now);
        const epochs = slots.map((s) => s.epoch);
        expect(epochs).toEqual(reference(r, booked, c.now, c.hours));
        for (let i = 1; i < epochs.length; i++) expect(epochs[i]).toBeGreaterThan(epochs[i - 1]);
        for (const s of slots) {
          expect(Number.isInteger(s.epoch)).toBe(true);
          expect(s.epoch * 1000).toBeGreaterThan(c.now);
          expect(s.epoch * 1000).toBeGreaterThanOrEqual(c.now + c.notice * 60_000);
          expect(s.remaining).toBe(c.capacity - (booked.get(s.epoch) ?? 0));
          expect(s.remaining).toBeGreaterThan(0);
          const [day, minutes] = localOf(s.epoch * 1000, c.tz);
          expect(s.dayKey).toBe(day);
          expect(s.time.startsWith(clock12(minutes))).toBe(true);
          expect(s.label.startsWith(`${s.day}, `)).toBe(true);
        }
        for (const s of [slots[0], slots.at(-1)]) if (s) expect(offeredCandidate(r, c.now, s.epoch)?.epoch).toBe(s.epoch);
      }),
      { numRuns: 250 },
    );
  }, 30_000);
});

// ---- buffers (docs/booking.md "Buffers") ------------------------------------------------------

describe("buffers", () => {
  const chicago = (hours: unknown, extra: Partial<CalendarRules> = {}) => rules("America/Chicago", hours, extra);
  const monday = "2026-11-23T12:00:00Z"; // 06:00 CST
  /** Mon Nov 23 2026 at hh:mm CST as epoch seconds. */
  const cst = (hh: number, mm = 0) => Date.UTC(2026, 10, 23, hh + 6, mm) / 1000;
  const times = (slots: Slot[]) => slots.map((s) => s.time);

  test("a buffer after blocks the slots whose span meets the appointment's, on both sides", () => {
    // 30-minute slots, 15 minutes after: starts less than 45 minutes apart conflict.
    const r = chicago({ mon: [["09:00", "12:00"]] }, { bufferAfterMinutes: 15 });
    expect(times(dayOf(r, monday, new Map([[cst(10), 1]])))).toEqual(["9:00 AM", "11:00 AM", "11:30 AM"]);
    // Without the buffer only the booked slot goes.
    expect(times(dayOf(chicago({ mon: [["09:00", "12:00"]] }), monday, new Map([[cst(10), 1]])))).toEqual(
      ["9:00 AM", "9:30 AM", "10:30 AM", "11:00 AM", "11:30 AM"],
    );
  });

  test("before and after add up: spans that only touch do not conflict", () => {
    // 30 + 10 + 20 = 60 minutes of reach: 9:00 and 11:00 stay open around a 10:00 booking.
    const r = chicago({ mon: [["09:00", "12:00"]] }, { bufferBeforeMinutes: 10, bufferAfterMinutes: 20 });
    expect(times(dayOf(r, monday, new Map([[cst(10), 1]])))).toEqual(["9:00 AM", "11:00 AM", "11:30 AM"]);
    // One minute more of buffer and they touch no longer: 9:00 and 11:00 go too.
    const r2 = chicago({ mon: [["09:00", "12:00"]] }, { bufferBeforeMinutes: 11, bufferAfterMinutes: 20 });
    expect(times(dayOf(r2, monday, new Map([[cst(10), 1]])))).toEqual(["11:30 AM"]);
  });

  test("buffers may lie outside the hours: the window's first and last slots are offered", () => {
    const r = chicago({ mon: [["09:00", "10:00"]] }, { bufferBeforeMinutes: 60, bufferAfterMinutes: 60 });
    expect(times(dayOf(r, monday))).toEqual(["9:00 AM", "9:30 AM"]);
  });

  test("an appointment that began before now still blocks the slots its buffer reaches", () => {
    const r = chicago({ mon: [["09:00", "12:00"]] }, { bufferAfterMinutes: 15 });
    // 10:05: the 10:00 appointment is under way; 10:30 is within its reach, 11:00 is not.
    expect(times(openSlots(r, new Map([[cst(10), 1]]), ms("2026-11-23T16:05:00Z")))).toEqual(["11:00 AM", "11:30 AM"]);
  });

  test("capacity: a slot is open while fewer than capacity appointments conflict; remaining counts them", () => {
    const r = chicago({ mon: [["09:00", "12:00"]] }, { capacity: 2, bufferAfterMinutes: 15 });
    const one = dayOf(r, monday, new Map([[cst(10), 1]]));
    expect(one.map((s) => [s.time, s.remaining])).toEqual([
      ["9:00 AM", 2], ["9:30 AM", 1], ["10:00 AM", 1], ["10:30 AM", 1], ["11:00 AM", 2], ["11:30 AM", 2],
    ]);
    // A second appointment at 10:30: 10:00 and 10:30 conflict with both; 11:00 with 10:30 only.
    const two = dayOf(r, monday, new Map([[cst(10), 1], [cst(10, 30), 1]]));
    expect(two.map((s) => [s.time, s.remaining])).toEqual([["9:00 AM", 2], ["9:30 AM", 1], ["11:00 AM", 1], ["11:30 AM", 2]]);
  });

  test("across clocks going back, buffers are elapsed time: the repeated hour's times are told apart", () => {
    // New York, Sun Nov 1 2026: 1:00-4:00 holds 8 half hours; 1:30 AM EDT booked, 30 minutes after.
    const r = rules("America/New_York", { sun: [["01:00", "04:00"]] }, { bufferAfterMinutes: 30 });
    const booked = new Map([[ms("2026-11-01T05:30:00Z") / 1000, 1]]);
    const slots = openSlots(r, booked, ms("2026-11-01T04:00:00Z"));
    expect(slots.map((s) => iso(s.epoch))).toEqual(["2026-11-01T06:30Z", "2026-11-01T07:00Z", "2026-11-01T07:30Z", "2026-11-01T08:00Z", "2026-11-01T08:30Z"]);
    // 1:00 AM EDT (30 minutes before) and 1:00 AM EST (30 minutes after) both go; 1:30 AM EST stays.
    expect(slots.map((s) => s.time)).toEqual(["1:30 AM EST", "2:00 AM", "2:30 AM", "3:00 AM", "3:30 AM"]);
  });

  test("across clocks going forward, 1:30 AM EST and 3:00 AM EDT are 30 minutes apart and conflict", () => {
    const r = rules("America/New_York", { sun: [["01:00", "04:00"]] }, { bufferAfterMinutes: 30 });
    const booked = new Map([[ms("2026-03-08T06:30:00Z") / 1000, 1]]); // 1:30 AM EST
    expect(openSlots(r, booked, ms("2026-03-08T05:10:00Z")).map((s) => s.time)).toEqual(["3:30 AM"]);
  });

  test("reachOf: the slot and both buffers, in seconds", () => {
    expect(reachOf({ slotMinutes: 30, bufferBeforeMinutes: 10, bufferAfterMinutes: 20 })).toBe(3600);
    expect(reachOf({ slotMinutes: 45, bufferBeforeMinutes: 0, bufferAfterMinutes: 5 })).toBe(3000);
    // Without buffers only the same start conflicts (the rule before buffers).
    expect(reachOf({ slotMinutes: 45, bufferBeforeMinutes: 0, bufferAfterMinutes: 0 })).toBe(1);
  });

  test("without buffers an appointment off the grid (left by a change of the rules) holds only its own start", () => {
    const r = chicago({ mon: [["09:00", "11:00"]] });
    expect(times(dayOf(r, monday, new Map([[cst(10, 10), 1]])))).toEqual(["9:00 AM", "9:30 AM", "10:00 AM", "10:30 AM"]);
    // With a buffer it holds its whole span, 10:10 to 10:45, which meets the 10:00 and 10:30 slots'
    // (9:30's ends at 10:05).
    const buffered = chicago({ mon: [["09:00", "11:00"]] }, { bufferAfterMinutes: 5 });
    expect(times(dayOf(buffered, monday, new Map([[cst(10, 10), 1]])))).toEqual(["9:00 AM", "9:30 AM"]);
  });
});

/** Brute force: the appointments whose span [start - before, start + slot + after) overlaps the slot's. */
function conflicts(r: CalendarRules, booked: readonly number[], epoch: number): number {
  const span = (e: number) => [e - r.bufferBeforeMinutes * 60, e + (r.slotMinutes + r.bufferAfterMinutes) * 60] as const;
  const [a0, a1] = span(epoch);
  return booked.filter((e) => {
    const [b0, b1] = span(e);
    return a0 < b1 && b0 < a1;
  }).length;
}

describe("buffers and capacity, generated and booked", () => {
  const bookArb = fc.record({
    tz: fc.constantFrom(...ZONES),
    slotMinutes: fc.constantFrom(5, 15, 20, 30, 45, 60),
    capacity: fc.integer({ min: 1, max: 3 }),
    before: fc.constantFrom(0, 5, 10, 15, 30, 60, 240),
    after: fc.constantFrom(0, 5, 10, 15, 30, 60, 240),
    now: fc.tuple(fc.constantFrom(...CHANGES), fc.integer({ min: -2 * 86400_000, max: 86400_000 })).map(([c, d]) => c + d),
    // Each pick: an index into the slots open at that moment (modulo their number), and the time
    // that passes before it (bookings keep blocking after they start).
    picks: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 3 * 3600_000 })), { minLength: 1, maxLength: 60 }),
  });

  test("whatever is booked from the offered slots, no instant holds more than capacity buffered appointments", () => {
    fc.assert(
      fc.property(bookArb, (c) => {
        const hours = Object.fromEntries(DAYS.map((d) => [d, [["00:00", "24:00"]]]));
        const r = rules(c.tz, hours, {
          slotMinutes: c.slotMinutes, capacity: c.capacity, bufferBeforeMinutes: c.before, bufferAfterMinutes: c.after, horizonDays: 2,
        });
        const booked: number[] = [];
        let now = c.now;
        for (const [pick, wait] of c.picks) {
          now += wait;
          const counts = new Map<number, number>();
          for (const e of booked) counts.set(e, (counts.get(e) ?? 0) + 1);
          const open = openSlots(r, counts, now);
          // Every offered slot has room by the brute-force rule, and remaining is exactly it...
          for (const s of open) expect(s.remaining).toBe(c.capacity - conflicts(r, booked, s.epoch));
          // ...and every candidate left out is full by it (or within the notice).
          const offered = new Set(open.map((s) => s.epoch));
          for (const s of openSlots(r, new Map(), now)) {
            if (!offered.has(s.epoch)) expect(conflicts(r, booked, s.epoch)).toBeGreaterThanOrEqual(c.capacity);
          }
          if (open.length === 0) continue;
          booked.push(open[pick % open.length].epoch);
        }
        // At every span's start (where the most spans overlap, if anywhere) at most capacity spans.
        const spans = booked.map((e) => [e - c.before * 60, e + (c.slotMinutes + c.after) * 60] as const);
        for (const [t] of spans) {
          expect(spans.filter(([s0, s1]) => s0 <= t && t < s1).length).toBeLessThanOrEqual(c.capacity);
        }
      }),
      { numRuns: 150 },
    );
  }, 60_000);
});
