// When a snooze ends and when a callback is due, from what the agent chose: pure functions of the
// clock and the organization's time zone (src/zone.ts), tested across daylight-saving changes.
import { AppError } from "../errors";
import { instantOf, isZone, wallOf } from "../zone";

const HOUR = 3_600_000;
const DAY = 86_400_000;
/** The latest a snooze or callback may be set: a year ahead (anything later is a typo). */
export const FURTHEST_MS = 366 * DAY;
/** The morning hour the presets wake at, in the organization's zone. */
export const MORNING_HOUR = 9;

export type SnoozePreset = "hour" | "tomorrow" | "next_week";
export const SNOOZE_PRESETS: readonly SnoozePreset[] = ["hour", "tomorrow", "next_week"];

/** The zone to state times in: the organization's, else UTC for a zone the runtime does not know. */
export const zoneOr = (tz: string | null | undefined): string => (tz && isZone(tz) ? tz : "UTC");

/** `days` after the zone's date at `now`, at MORNING_HOUR:00 there (the first instant it reads so). */
function morningAfter(now: number, zone: string, days: number): number {
  const wall = wallOf(now, zone);
  const midnight = wall - (((wall % DAY) + DAY) % DAY);
  return instantOf(midnight + days * DAY + MORNING_HOUR * HOUR, zone);
}

/**
 * The end of a preset snooze: an hour from now; tomorrow at 9:00; next week, Monday at 9:00 (the
 * Monday after today, also when today is a Monday) — both in the organization's zone, whatever its
 * offset does in between (a 9:00 that a clock change skips is the moment of the jump).
 */
export function presetEnd(preset: SnoozePreset, now: number, zone: string): number {
  switch (preset) {
    case "hour":
      return now + HOUR;
    case "tomorrow":
      return morningAfter(now, zone, 1);
    case "next_week": {
      const weekday = new Date(wallOf(now, zone)).getUTCDay(); // 0 Sunday … 6 Saturday
      return morningAfter(now, zone, ((8 - weekday) % 7) || 7);
    }
  }
}

/**
 * A chosen time: Unix ms, or a wall time `YYYY-MM-DDTHH:MM` (a datetime-local field) in the
 * organization's zone. invalid_input unless it is after `now` and within a year.
 */
/** A wall time `YYYY-MM-DDTHH:MM[:SS]` (a datetime-local field) as if UTC; invalid_input for anything else. */
export function parseWall(text: string, field: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?$/.exec(text.trim());
  if (!m) throw new AppError("invalid_input", `${field}: expected a time as YYYY-MM-DDTHH:MM`);
  const [y, mo, d, h, mi, s] = m.slice(1).map((x) => Number(x ?? 0)) as [number, number, number, number, number, number];
  const wall = Date.UTC(y, mo - 1, d, h, mi, s);
  const back = new Date(wall);
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) {
    throw new AppError("invalid_input", `${field}: no such date or time`);
  }
  return wall;
}

/**
 * A chosen time: Unix ms, or a wall time `YYYY-MM-DDTHH:MM` in the organization's zone (one that
 * a clock change skips is the moment of the jump). invalid_input unless it is after `now` and
 * within a year.
 */
export function chosenTime(value: number | string, now: number, zone: string, field = "until"): number {
  const t = typeof value === "number" ? value : instantOf(parseWall(value, field), zone);
  if (!Number.isFinite(t) || t <= now) throw new AppError("invalid_input", `${field}: must be in the future`);
  if (t > now + FURTHEST_MS) throw new AppError("invalid_input", `${field}: at most a year ahead`);
  return t;
}

/** What a snooze form sends: a preset, or a chosen time. */
export type SnoozeChoice = { preset: SnoozePreset } | { until: number | string };

/** The choice's shape checked, before any zone is known (invalid_input). */
export function checkChoice(choice: SnoozeChoice): void {
  if ("preset" in choice) {
    if (!SNOOZE_PRESETS.includes(choice.preset)) throw new AppError("invalid_input", "preset: expected hour, tomorrow or next_week");
  } else if (typeof choice.until === "string") parseWall(choice.until, "until");
  else if (typeof choice.until !== "number" || !Number.isFinite(choice.until)) throw new AppError("invalid_input", "until: expected a time");
}

export function snoozeEnd(choice: SnoozeChoice, now: number, zone: string): number {
  checkChoice(choice);
  return "preset" in choice ? presetEnd(choice.preset, now, zone) : chosenTime(choice.until, now, zone);
}
