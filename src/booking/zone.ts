// Civil dates and the labels of slots, in a calendar's zone (the zone math itself is src/zone.ts).
// Everything here is pure; times are epoch milliseconds, civil dates are {y, m (1-12), d}.

export interface CivilDate {
  y: number;
  m: number;
  d: number;
}

const MINUTE = 60_000;
/** Formatters by zone name (names come from calendars' rows: bounded, as src/zone.ts's). */
const abbrFormat = new Map<string, Intl.DateTimeFormat>();
const MAX_FORMATS = 1000;

export function civilOf(wall: number): CivilDate {
  const dt = new Date(wall);
  return { y: dt.getUTCFullYear(), m: dt.getUTCMonth() + 1, d: dt.getUTCDate() };
}

/** The civil date `n` days after `date`. */
export function addDays(date: CivilDate, n: number): CivilDate {
  return civilOf(Date.UTC(date.y, date.m - 1, date.d + n));
}

/** 0 = Sunday … 6 = Saturday. */
export const weekdayOf = (date: CivilDate): number => new Date(Date.UTC(date.y, date.m - 1, date.d)).getUTCDay();

const pad = (n: number) => String(n).padStart(2, "0");
export const dayKeyOf = (date: CivilDate): string => `${date.y}-${pad(date.m)}-${pad(date.d)}`;

/** Midnight of `date` plus `minutes`, as a wall time (as if UTC). */
export const wallAt = (date: CivilDate, minutes: number): number => Date.UTC(date.y, date.m - 1, date.d) + minutes * MINUTE;

const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/**
 * Labels built by hand rather than by Intl's date formats: those vary with the ICU version (newer
 * ones put U+202F before "AM"), and clients compare and display these strings.
 */
export function dayText(date: CivilDate): string {
  return `${WEEKDAYS[weekdayOf(date)]}, ${MONTHS[date.m - 1]} ${date.d}`;
}

/** "9:00 AM" from a wall time. */
export function timeText(wall: number): string {
  const dt = new Date(wall);
  const h = dt.getUTCHours();
  return `${h % 12 === 0 ? 12 : h % 12}:${pad(dt.getUTCMinutes())} ${h < 12 ? "AM" : "PM"}`;
}

/** How many formatters are kept (for the test of their bound). */
export const keptAbbrFormatters = (): number => abbrFormat.size;

/** The zone's short name at `t`: "CDT", "GMT+1", "UTC". */
export function zoneAbbr(t: number, tz: string): string {
  let f = abbrFormat.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", { timeZone: tz, timeZoneName: "short" });
    if (abbrFormat.size >= MAX_FORMATS) abbrFormat.clear();
    abbrFormat.set(tz, f);
  }
  return f.formatToParts(t).find((p) => p.type === "timeZoneName")?.value ?? tz;
}
