// Quiet hours and the state → zone table: pure, no database.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  FALLBACK_ZONE,
  STATE_ZONES,
  inQuietHours,
  quietHoursEnd,
  recipientZone,
  stateZone,
  zoneOffset,
} from "../src/messages/quiet-hours";
import { isZone } from "../src/zone";

const utc = (iso: string) => Date.parse(iso);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const window = (start: string, end: string) => ({ start, end });

const FIFTY_AND_DC = [
  "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS",
  "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC",
  "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY",
];

describe("state → zone", () => {
  test("every state and DC has a zone this runtime knows", () => {
    expect(FIFTY_AND_DC.length).toBe(51);
    for (const code of FIFTY_AND_DC) {
      expect(Object.hasOwn(STATE_ZONES, code)).toBe(true);
      expect(isZone(STATE_ZONES[code])).toBe(true);
    }
  });

  test("split states resolve to their majority zone", () => {
    expect(stateZone("FL")).toBe("America/New_York"); // panhandle is Central
    expect(stateZone("IN")).toBe("America/Indiana/Indianapolis"); // NW and SW corners are Central
    expect(stateZone("KY")).toBe("America/New_York"); // western half is Central
    expect(stateZone("MI")).toBe("America/Detroit"); // four UP counties are Central
    expect(stateZone("TN")).toBe("America/Chicago"); // east Tennessee is Eastern
    expect(stateZone("TX")).toBe("America/Chicago"); // El Paso is Mountain
    expect(stateZone("KS")).toBe("America/Chicago");
    expect(stateZone("NE")).toBe("America/Chicago");
    expect(stateZone("ND")).toBe("America/Chicago");
    expect(stateZone("SD")).toBe("America/Chicago");
    expect(stateZone("ID")).toBe("America/Boise"); // the panhandle is Pacific
    expect(stateZone("OR")).toBe("America/Los_Angeles"); // Malheur County is Mountain
    expect(stateZone("AK")).toBe("America/Anchorage"); // the western Aleutians are HST
    expect(stateZone("AZ")).toBe("America/Phoenix"); // no daylight saving
  });

  test("codes in any case and full names; unknown and empty give null", () => {
    expect(stateZone("ny")).toBe("America/New_York");
    expect(stateZone(" Tx ")).toBe("America/Chicago");
    expect(stateZone("New York")).toBe("America/New_York");
    expect(stateZone("district of columbia")).toBe("America/New_York");
    expect(stateZone("D.C.")).toBe("America/New_York");
    expect(stateZone("HAWAII")).toBe("Pacific/Honolulu");
    expect(stateZone("")).toBeNull();
    expect(stateZone("ZZ")).toBeNull();
    expect(stateZone("Ontario")).toBeNull();
    expect(stateZone("constructor")).toBeNull();
    expect(stateZone("__proto__")).toBeNull();
  });

  test("recipient zone: the lead's state, else the org's timezone, else New York", () => {
    expect(recipientZone("CA", "America/New_York")).toBe("America/Los_Angeles");
    expect(recipientZone("", "Europe/Berlin")).toBe("Europe/Berlin");
    expect(recipientZone("Bavaria", "Asia/Tokyo")).toBe("Asia/Tokyo");
    expect(recipientZone("", "Not/AZone")).toBe(FALLBACK_ZONE);
  });
});

describe("quiet window", () => {
  const night = window("21:00", "08:00");
  const NY = "America/New_York";

  test("none: absent, start equal to end, malformed", () => {
    const t = utc("2026-01-15T03:00:00Z"); // 22:00 in New York
    expect(quietHoursEnd(t, null, NY)).toBeNull();
    expect(quietHoursEnd(t, undefined, NY)).toBeNull();
    expect(quietHoursEnd(t, window("21:00", "21:00"), NY)).toBeNull();
    expect(quietHoursEnd(t, window("9pm", "08:00"), NY)).toBeNull();
    expect(quietHoursEnd(t, window("24:00", "08:00"), NY)).toBeNull();
  });

  test("a window across midnight: start is quiet, end is not", () => {
    // New York in January is UTC-5: 02:00Z is 21:00 of the day before.
    expect(quietHoursEnd(utc("2026-01-15T01:00:00Z"), night, NY)).toBeNull(); // 20:00
    expect(quietHoursEnd(utc("2026-01-15T01:59:59Z"), night, NY)).toBeNull(); // 20:59:59
    expect(iso(quietHoursEnd(utc("2026-01-15T02:00:00Z"), night, NY))).toBe("2026-01-15T13:00:00.000Z"); // 21:00 → 08:00
    expect(iso(quietHoursEnd(utc("2026-01-15T05:00:00Z"), night, NY))).toBe("2026-01-15T13:00:00.000Z"); // 00:00
    expect(iso(quietHoursEnd(utc("2026-01-15T12:59:59.500Z"), night, NY))).toBe("2026-01-15T13:00:00.000Z");
    expect(quietHoursEnd(utc("2026-01-15T13:00:00Z"), night, NY)).toBeNull(); // exactly 08:00
  });

  test("a window inside one day", () => {
    const lunch = window("12:00", "13:30");
    expect(quietHoursEnd(utc("2026-01-15T16:59:00Z"), lunch, NY)).toBeNull(); // 11:59
    expect(iso(quietHoursEnd(utc("2026-01-15T17:00:00Z"), lunch, NY))).toBe("2026-01-15T18:30:00.000Z");
    expect(quietHoursEnd(utc("2026-01-15T18:30:00Z"), lunch, NY)).toBeNull();
  });

  test("spring forward: the night that loses an hour ends at the local end time", () => {
    // 2026-03-08 02:00 EST → 03:00 EDT (07:00Z). 22:00 EST on the 7th is 03:00Z on the 8th.
    expect(iso(quietHoursEnd(utc("2026-03-08T03:00:00Z"), night, NY))).toBe("2026-03-08T12:00:00.000Z"); // 08:00 EDT
  });

  test("spring forward: an end inside the skipped hour ends the window at the jump", () => {
    // 02:30 never happens on 2026-03-08; the first local time at or after it is 03:00 EDT (07:00Z).
    expect(iso(quietHoursEnd(utc("2026-03-08T06:30:00Z"), window("01:00", "02:30"), NY))).toBe("2026-03-08T07:00:00.000Z");
    expect(iso(quietHoursEnd(utc("2026-03-08T04:00:00Z"), window("21:00", "02:30"), NY))).toBe("2026-03-08T07:00:00.000Z");
    // A start inside the skipped hour: 03:00 EDT is past 02:15, so the window is entered at the jump.
    expect(quietHoursEnd(utc("2026-03-08T06:59:59Z"), window("02:15", "05:00"), NY)).toBeNull(); // 01:59:59 EST
    expect(iso(quietHoursEnd(utc("2026-03-08T07:00:00Z"), window("02:15", "05:00"), NY))).toBe("2026-03-08T09:00:00.000Z");
  });

  test("fall back: the night that gains an hour lasts an hour longer", () => {
    // 2026-11-01 02:00 EDT → 01:00 EST (06:00Z). 22:00 EDT on Oct 31 is 02:00Z on Nov 1.
    expect(iso(quietHoursEnd(utc("2026-11-01T02:00:00Z"), night, NY))).toBe("2026-11-01T13:00:00.000Z"); // 08:00 EST
  });

  test("fall back: the repeated hour is quiet both times round", () => {
    const early = window("00:00", "01:30");
    expect(iso(quietHoursEnd(utc("2026-11-01T05:15:00Z"), early, NY))).toBe("2026-11-01T05:30:00.000Z"); // 01:15 EDT
    expect(quietHoursEnd(utc("2026-11-01T05:45:00Z"), early, NY)).toBeNull(); // 01:45 EDT
    expect(iso(quietHoursEnd(utc("2026-11-01T06:00:00Z"), early, NY))).toBe("2026-11-01T06:30:00.000Z"); // 01:00 EST
    expect(iso(quietHoursEnd(utc("2026-11-01T06:15:00Z"), early, NY))).toBe("2026-11-01T06:30:00.000Z"); // 01:15 EST
  });

  test("fall back: the clock jumping back out of the window ends it at the jump", () => {
    // 01:45 EDT is inside 01:30–03:00; at 06:00Z the clock reads 01:00 EST, before the start.
    expect(iso(quietHoursEnd(utc("2026-11-01T05:45:00Z"), window("01:30", "03:00"), NY))).toBe("2026-11-01T06:00:00.000Z");
  });

  test("zones east of UTC, half-hour offsets, the southern hemisphere", () => {
    // Tokyo (+9): 23:00 JST on Jan 10 is 14:00Z; 08:00 JST on Jan 11 is 23:00Z on Jan 10.
    expect(iso(quietHoursEnd(utc("2026-01-10T14:00:00Z"), night, "Asia/Tokyo"))).toBe("2026-01-10T23:00:00.000Z");
    // Kolkata (+5:30): 22:30 IST is 17:00Z; 07:00 IST next day is 01:30Z.
    expect(iso(quietHoursEnd(utc("2026-01-10T17:00:00Z"), window("22:00", "07:00"), "Asia/Kolkata"))).toBe("2026-01-11T01:30:00.000Z");
    // Berlin on its own spring change (2026-03-29 02:00 CET → 03:00 CEST at 01:00Z).
    expect(iso(quietHoursEnd(utc("2026-03-28T22:00:00Z"), night, "Europe/Berlin"))).toBe("2026-03-29T06:00:00.000Z");
    // Sydney's autumn change (2026-04-05 03:00 AEDT → 02:00 AEST at 16:00Z on the 4th).
    expect(iso(quietHoursEnd(utc("2026-04-04T11:00:00Z"), night, "Australia/Sydney"))).toBe("2026-04-04T22:00:00.000Z");
    // Lord Howe moves by half an hour (2026-04-05 02:00 +11 → 01:30 +10:30 at 15:00Z on the 4th):
    // from 01:30 to 02:15 local takes 75 minutes that night.
    expect(iso(quietHoursEnd(utc("2026-04-04T14:30:00Z"), window("01:00", "02:15"), "Australia/Lord_Howe"))).toBe(
      "2026-04-04T15:45:00.000Z",
    );
  });

  test("inQuietHours agrees with quietHoursEnd", () => {
    expect(inQuietHours(utc("2026-01-15T05:00:00Z"), night, NY)).toBe(true);
    expect(inQuietHours(utc("2026-01-15T13:00:00Z"), night, NY)).toBe(false);
    expect(inQuietHours(utc("2026-01-15T13:00:00Z"), null, NY)).toBe(false);
  });

  test("zone offsets across a change", () => {
    expect(zoneOffset(NY, utc("2026-03-08T06:59:59Z"))).toBe(-5 * 3_600_000);
    expect(zoneOffset(NY, utc("2026-03-08T07:00:00Z"))).toBe(-4 * 3_600_000);
    expect(zoneOffset("Asia/Kathmandu", utc("2026-01-01T00:00:00Z"))).toBe(5.75 * 3_600_000);
  });
});

const ZONES = [
  "America/New_York", "America/Chicago", "America/Denver", "America/Phoenix", "America/Los_Angeles",
  "America/Anchorage", "Pacific/Honolulu", "America/St_Johns", "Europe/London", "Europe/Berlin",
  "Asia/Tokyo", "Asia/Kolkata", "Asia/Kathmandu", "Australia/Sydney", "Australia/Lord_Howe",
  "Pacific/Chatham", "Pacific/Auckland", "America/Santiago", "UTC",
];
const hhmm = fc.tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })).map(
  ([h, m]) => `${String(h).padStart(2, "0")}:${String(m).padStart(2, "0")}`,
);
// 2020–2035, with a bias towards the hours around daylight-saving changes.
const instant = fc.oneof(
  fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2035, 0, 1) }),
  fc.constantFrom(
    Date.UTC(2026, 2, 8, 7), Date.UTC(2026, 10, 1, 6), Date.UTC(2026, 2, 29, 1), Date.UTC(2026, 9, 25, 1),
    Date.UTC(2026, 3, 4, 16), Date.UTC(2026, 3, 4, 15), Date.UTC(2026, 8, 26, 14),
  ).chain((t) => fc.integer({ min: t - 26 * 3_600_000, max: t + 26 * 3_600_000 })),
);

describe("quiet window properties", () => {
  test("a day whose open stretch falls wholly into the spring gap stays quiet until the next day's", () => {
    // Auckland 2026-09-27 02:00 NZST jumps to 03:00 NZDT: 02:00–02:01, the only open minute, never happens.
    const quiet = { start: "02:01", end: "02:00" };
    const now = utc("2026-09-25T14:01:00Z"); // 02:01 NZST on the 26th
    const until = quietHoursEnd(now, quiet, "Pacific/Auckland");
    expect(until).toBe(utc("2026-09-27T13:00:00Z")); // 02:00 NZDT on the 28th
    expect(inQuietHours(utc("2026-09-26T14:00:00Z"), quiet, "Pacific/Auckland")).toBe(true); // 03:00 NZDT, right after the jump
  });

  test("the answer is never inside the window, never before now, over 25 hours away only across a gap, and nothing earlier is outside", () => {
    fc.assert(
      fc.property(instant, hhmm, hhmm, fc.constantFrom(...ZONES), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }), (now, start, end, zone, samples) => {
        const quiet = { start, end };
        const until = quietHoursEnd(now, quiet, zone);
        if (until === null) return start === end || !inQuietHours(now, quiet, zone);
        if (until < now || until - now > 49 * 3_600_000) return false;
        // Past 25 hours only when the open stretch of a day fell into a daylight-saving gap.
        if (until - now > 25 * 3_600_000 && zoneOffset(zone, now) === zoneOffset(zone, until)) return false;
        if (inQuietHours(until, quiet, zone) || !inQuietHours(now, quiet, zone)) return false;
        if (until % 1000 !== 0) return false;
        // Minimal: every earlier instant from now on is still quiet.
        return samples.every((f) => inQuietHours(Math.min(until - 1, now + Math.floor(f * (until - now))), quiet, zone));
      }),
      { numRuns: 3000 },
    );
  });

  test("with start = end there are never quiet hours", () => {
    fc.assert(
      fc.property(instant, hhmm, fc.constantFrom(...ZONES), (now, t, zone) => quietHoursEnd(now, { start: t, end: t }, zone) === null),
    );
  });
});
