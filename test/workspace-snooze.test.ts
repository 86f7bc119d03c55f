// Snooze presets and chosen times (src/workspace/snooze.ts): pure functions of the clock and the
// organization's zone, checked across daylight-saving changes without a database.
import { describe, expect, test } from "bun:test";
import { AppError } from "../src/errors";
import { chosenTime, presetEnd, snoozeEnd } from "../src/workspace/snooze";

const H = 3_600_000;
const utc = (s: string) => Date.parse(s);
const refused = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    return err instanceof AppError ? err.code : String(err);
  }
  return "accepted";
};

describe("snooze presets", () => {
  test("an hour is sixty minutes of real time, across the spring gap too", () => {
    // 01:30 CST on the night of 2026-03-08; an hour later the clock reads 03:30 CDT.
    const now = utc("2026-03-08T07:30:00Z");
    expect(presetEnd("hour", now, "America/Chicago")).toBe(now + H);
  });

  test("tomorrow is 9:00 of the next date in the organization's zone", () => {
    // Tuesday 2026-01-13 15:00 in Chicago (CST, UTC-6) → Wednesday 9:00 CST = 15:00Z.
    expect(presetEnd("tomorrow", utc("2026-01-13T21:00:00Z"), "America/Chicago")).toBe(utc("2026-01-14T15:00:00Z"));
    // Just after midnight it is still the next date's 9:00, not today's.
    expect(presetEnd("tomorrow", utc("2026-01-14T06:30:00Z"), "America/Chicago")).toBe(utc("2026-01-15T15:00:00Z"));
    // The same instant is another date in Tokyo.
    expect(presetEnd("tomorrow", utc("2026-01-14T06:30:00Z"), "Asia/Tokyo")).toBe(utc("2026-01-15T00:00:00Z"));
  });

  test("tomorrow across the spring change: the offset of the morning, not of the evening", () => {
    // Saturday 2026-03-07 22:00 CST (UTC-6) → Sunday 9:00 CDT (UTC-5) = 14:00Z, 22 hours of real time later.
    const now = utc("2026-03-08T04:00:00Z");
    expect(presetEnd("tomorrow", now, "America/Chicago")).toBe(utc("2026-03-08T14:00:00Z"));
    expect(presetEnd("tomorrow", now, "America/Chicago") - now).toBe(10 * H);
  });

  test("tomorrow across the fall change: a 25-hour day", () => {
    // Saturday 2026-10-31 9:00 EDT (13:00Z) → Sunday 9:00 EST (14:00Z).
    expect(presetEnd("tomorrow", utc("2026-10-31T13:00:00Z"), "America/New_York")).toBe(utc("2026-11-01T14:00:00Z"));
    // Europe changes a week earlier: Saturday 2026-10-24 10:00 BST → Sunday 9:00 GMT.
    expect(presetEnd("tomorrow", utc("2026-10-24T09:00:00Z"), "Europe/London")).toBe(utc("2026-10-25T09:00:00Z"));
  });

  test("next week is the coming Monday at 9:00, and a Monday's next week is seven days on", () => {
    // Wednesday 2026-10-28 10:00 EDT → Monday 2026-11-02 9:00 EST (the fall change in between).
    expect(presetEnd("next_week", utc("2026-10-28T14:00:00Z"), "America/New_York")).toBe(utc("2026-11-02T14:00:00Z"));
    // Sunday → the next day.
    expect(presetEnd("next_week", utc("2026-03-01T18:00:00Z"), "America/New_York")).toBe(utc("2026-03-02T14:00:00Z"));
    // Monday 8:00 (before 9:00 even) → the following Monday, across the spring change (EST → EDT).
    expect(presetEnd("next_week", utc("2026-03-02T13:00:00Z"), "America/New_York")).toBe(utc("2026-03-09T13:00:00Z"));
    // Saturday evening in Los Angeles is already Sunday in UTC: the zone's date decides.
    expect(presetEnd("next_week", utc("2026-01-18T05:00:00Z"), "America/Los_Angeles")).toBe(utc("2026-01-19T17:00:00Z"));
  });

  test("the same instant snoozed in two zones ends at each one's own 9:00", () => {
    const now = utc("2026-06-10T12:00:00Z");
    expect(snoozeEnd({ preset: "tomorrow" }, now, "America/Denver")).toBe(utc("2026-06-11T15:00:00Z"));
    expect(snoozeEnd({ preset: "tomorrow" }, now, "Europe/Berlin")).toBe(utc("2026-06-11T07:00:00Z"));
  });
});

describe("a chosen time", () => {
  const now = utc("2026-03-01T12:00:00Z");

  test("a wall time is read in the organization's zone, each side of a change with its own offset", () => {
    expect(chosenTime("2026-03-07T10:00", now, "America/Chicago")).toBe(utc("2026-03-07T16:00:00Z"));
    expect(chosenTime("2026-03-09T10:00", now, "America/Chicago")).toBe(utc("2026-03-09T15:00:00Z"));
    expect(chosenTime("2026-03-09 10:00:30", now, "America/Chicago")).toBe(utc("2026-03-09T15:00:30Z"));
  });

  test("a wall time the spring change skips is the moment of the jump; a repeated one its first occurrence", () => {
    expect(chosenTime("2026-03-08T02:30", now, "America/Chicago")).toBe(utc("2026-03-08T08:00:00Z"));
    expect(chosenTime("2026-11-01T01:30", now, "America/Chicago")).toBe(utc("2026-11-01T06:30:00Z"));
  });

  test("Unix ms are taken as they are", () => {
    expect(chosenTime(now + 5 * H, now, "America/Chicago")).toBe(now + 5 * H);
  });

  test("the past, now, beyond a year and what is not a time are invalid_input", () => {
    expect(refused(() => chosenTime(now, now, "UTC"))).toBe("invalid_input");
    expect(refused(() => chosenTime("2026-03-01T05:59", now, "America/Chicago"))).toBe("invalid_input");
    expect(refused(() => chosenTime(now + 367 * 24 * H, now, "UTC"))).toBe("invalid_input");
    for (const bad of ["2026-02-30T10:00", "2026-03-05T24:00", "2026-03-05T10:60", "tomorrow", "", "2026-03-05", "9999999-01-01T00:00"]) {
      expect({ bad, r: refused(() => chosenTime(bad, now, "UTC")) }).toEqual({ bad, r: "invalid_input" });
    }
    expect(refused(() => chosenTime(Number.NaN, now, "UTC"))).toBe("invalid_input");
    expect(refused(() => snoozeEnd({ preset: "fortnight" as never }, now, "UTC"))).toBe("invalid_input");
  });
});
