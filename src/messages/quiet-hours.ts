// Quiet hours in the recipient's local time: pure functions of (now, window, zone), no database.
//
// The window is the org's `quiet_hours` {start, end} in "HH:MM", half-open [start, end): a send at
// exactly `end` goes out. start > end crosses midnight (21:00–08:00); start = end, or no window,
// means no quiet hours. The answer to "may this go now?" is null, or the earliest instant at or
// after now whose local time is outside the window. Defined that way, daylight-saving changes need
// no special cases: when the spring gap swallows `end` the window ends at the jump, and in the fall
// repeat a local time that comes round again inside the window is quiet again. A window that leaves
// less of the day open than the gap (02:01–02:00 where 02:00 jumps to 03:00) has no open instant
// that day, so the answer is the next day's: never sending inside quiet hours outranks sending soon.
import { isZone, offsetAt } from "../zone";

/**
 * US states (and DC and the inhabited territories) to IANA zones. A state split across zones
 * resolves to the zone where most of its people live: Florida, Indiana, Kentucky, Michigan →
 * Eastern; Kansas, Nebraska, North and South Dakota, Tennessee, Texas → Central; Idaho → Mountain
 * (America/Boise); Oregon → Pacific; Alaska → America/Anchorage (not the Aleutians).
 */
export const STATE_ZONES: Readonly<Record<string, string>> = {
  AL: "America/Chicago",
  AK: "America/Anchorage",
  AZ: "America/Phoenix",
  AR: "America/Chicago",
  CA: "America/Los_Angeles",
  CO: "America/Denver",
  CT: "America/New_York",
  DE: "America/New_York",
  DC: "America/New_York",
  FL: "America/New_York",
  GA: "America/New_York",
  HI: "Pacific/Honolulu",
  ID: "America/Boise",
  IL: "America/Chicago",
  IN: "America/Indiana/Indianapolis",
  IA: "America/Chicago",
  KS: "America/Chicago",
  KY: "America/New_York",
  LA: "America/Chicago",
  ME: "America/New_York",
  MD: "America/New_York",
  MA: "America/New_York",
  MI: "America/Detroit",
  MN: "America/Chicago",
  MS: "America/Chicago",
  MO: "America/Chicago",
  MT: "America/Denver",
  NE: "America/Chicago",
  NV: "America/Los_Angeles",
  NH: "America/New_York",
  NJ: "America/New_York",
  NM: "America/Denver",
  NY: "America/New_York",
  NC: "America/New_York",
  ND: "America/Chicago",
  OH: "America/New_York",
  OK: "America/Chicago",
  OR: "America/Los_Angeles",
  PA: "America/New_York",
  RI: "America/New_York",
  SC: "America/New_York",
  SD: "America/Chicago",
  TN: "America/Chicago",
  TX: "America/Chicago",
  UT: "America/Denver",
  VT: "America/New_York",
  VA: "America/New_York",
  WA: "America/Los_Angeles",
  WV: "America/New_York",
  WI: "America/Chicago",
  WY: "America/Denver",
  // Territories: not states, but leads live there and have phones.
  PR: "America/Puerto_Rico",
  VI: "America/St_Thomas",
  GU: "Pacific/Guam",
  MP: "Pacific/Saipan",
  AS: "Pacific/Pago_Pago",
};

/** Full names, for leads whose `state` was typed out ("New York", "district of columbia"). */
const STATE_NAMES: Readonly<Record<string, string>> = {
  ALABAMA: "AL", ALASKA: "AK", ARIZONA: "AZ", ARKANSAS: "AR", CALIFORNIA: "CA", COLORADO: "CO",
  CONNECTICUT: "CT", DELAWARE: "DE", "DISTRICT OF COLUMBIA": "DC", "WASHINGTON DC": "DC", FLORIDA: "FL",
  GEORGIA: "GA", HAWAII: "HI", IDAHO: "ID", ILLINOIS: "IL", INDIANA: "IN", IOWA: "IA", KANSAS: "KS",
  KENTUCKY: "KY", LOUISIANA: "LA", MAINE: "ME", MARYLAND: "MD", MASSACHUSETTS: "MA", MICHIGAN: "MI",
  MINNESOTA: "MN", MISSISSIPPI: "MS", MISSOURI: "MO", MONTANA: "MT", NEBRASKA: "NE", NEVADA: "NV",
  "NEW HAMPSHIRE": "NH", "NEW JERSEY": "NJ", "NEW MEXICO": "NM", "NEW YORK": "NY", "NORTH CAROLINA": "NC",
  "NORTH DAKOTA": "ND", OHIO: "OH", OKLAHOMA: "OK", OREGON: "OR", PENNSYLVANIA: "PA", "RHODE ISLAND": "RI",
  "SOUTH CAROLINA": "SC", "SOUTH DAKOTA": "SD", TENNESSEE: "TN", TEXAS: "TX", UTAH: "UT", VERMONT: "VT",
  VIRGINIA: "VA", WASHINGTON: "WA", "WEST VIRGINIA": "WV", WISCONSIN: "WI", WYOMING: "WY",
  "PUERTO RICO": "PR", GUAM: "GU",
};

/** The code of a lead's `state` (a code or a full name, any case, dots and spacing ignored) when it names one of STATE_ZONES, else null. */
export function stateCode(state: string): string | null {
  const s = state.toUpperCase().replace(/\./g, "").replace(/\s+/g, " ").trim();
  const code = s.length === 2 ? s : STATE_NAMES[s];
  return code !== undefined && Object.hasOwn(STATE_ZONES, code) ? code : null;
}

/** The zone of a lead's `state` (as stateCode reads it), or null. */
export function stateZone(state: string): string | null {
  const code = stateCode(state);
  return code === null ? null : STATE_ZONES[code];
}

/** Used when neither the lead's state nor the org's timezone names a usable zone. */
export const FALLBACK_ZONE = "America/New_York";

/** The recipient's zone: the lead's US state where known, else the org's timezone, else New York. */
export function recipientZone(leadState: string, orgTimezone: string): string {
  return stateZone(leadState) ?? (isZone(orgTimezone) ? orgTimezone : FALLBACK_ZONE);
}

/** The zone's UTC offset at instant t, in ms (local wall time = t + offset); New York for an unknown zone. */
export const zoneOffset = (zone: string, t: number): number => offsetAt(t, isZone(zone) ? zone : FALLBACK_ZONE);

export interface QuietHours {
  start: string;
  end: string;
}

const DAY = 86_400_000;
const MINUTE = 60_000;

/** Minutes after midnight of "HH:MM", or null for anything else. */
export function parseHHMM(s: unknown): number | null {
  if (typeof s !== "string") return null;
  const m = /^([01][0-9]|2[0-3]):([0-5][0-9])$/.exec(s);
  return m ? Number(m[1]) * 60 + Number(m[2]) : null;
}

/** The window in ms after local midnight, or null for none (absent, malformed, or start = end). */
function windowOf(quiet: QuietHours | null | undefined): { start: number; end: number } | null {
  if (!quiet) return null;
  const start = parseHHMM(quiet.start);
  const end = parseHHMM(quiet.end);
  if (start === null || end === null || start === end) return null;
  return { start: start * MINUTE, end: end * MINUTE };
}

/** Whether a local time of day (ms after midnight) is inside [start, end), which may cross midnight. */
function inside(w: { start: number; end: number }, tod: number): boolean {
  return w.start < w.end ? tod >= w.start && tod < w.end : tod >= w.start || tod < w.end;
}

const timeOfDay = (wall: number) => ((wall % DAY) + DAY) % DAY;

/** Whether instant t falls inside the quiet window in `zone`. */
export function inQuietHours(t: number, quiet: QuietHours | null | undefined, zone: string): boolean {
  const w = windowOf(quiet);
  return w !== null && inside(w, timeOfDay(t + zoneOffset(zone, t)));
}

/** The first instant in (lo, hi] whose offset differs from the one at lo (hi's differs). */
function transitionAfter(zone: string, lo: number, hi: number): number {
  // Offsets change on whole seconds; searching whole seconds keeps every answer on one.
  lo = Math.floor(lo / 1000) * 1000;
  const before = zoneOffset(zone, lo);
  while (hi - lo > 1000) {
    const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
    if (zoneOffset(zone, mid) === before) lo = mid;
    else hi = mid;
  }
  return hi;
}

/**
 * Null when a message may go now; otherwise the epoch ms when the quiet window ends: the earliest
 * instant at or after `now` whose local time in `zone` is outside the window. Never inside the
 * window, never before now, and never more than a day and an hour away — except when the day's open
 * stretch lies wholly inside a spring-forward gap, when it is the next day's (under two days).
 *
 * Within a stretch of constant UTC offset local time runs linearly, so the exit is where the wall
 * clock reaches `end`; a transition before that point starts a new stretch (whose first instant
 * may already be outside, e.g. the spring jump over `end`). Zones change offset at most a few
 * times a year, so the loop runs once or twice.
 */
export function quietHoursEnd(now: number, quiet: QuietHours | null | undefined, zone: string): number | null {
  const w = windowOf(quiet);
  if (w === null) return null;
  let t = now;
  for (let i = 0; i < 8; i++) {
    const offset = zoneOffset(zone, t);
    const tod = timeOfDay(t + offset);
    if (!inside(w, tod)) return t === now ? null : t;
    const exit = t + (((w.end - tod) % DAY) + DAY) % DAY;
    if (zoneOffset(zone, exit) === offset) return exit;
    t = transitionAfter(zone, t, exit);
  }
  return t; // unreachable for real zones; a finite answer rather than a loop
}
