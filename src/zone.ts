// Wall-clock arithmetic in an IANA time zone, on top of Intl (the only tz database in the
// runtime): the one place that converts between instants and a zone's wall clock, for quiet hours,
// slots and the provisioning checks. Pure; times are epoch milliseconds. Imports nothing.

const MINUTE = 60_000;
const DAY = 86_400_000;

/**
 * Formatters by zone name. Only names Intl accepts get one, but it accepts every spelling of a
 * zone's case ("america/chicago"), and names come from data: bounded like `unknown`.
 */
const partsFormat = new Map<string, Intl.DateTimeFormat>();
const MAX_FORMATS = 1000;
/** Names found not to be zones (bounded: they come from data). */
const unknown = new Set<string>();

/** How many zone formatters are kept (for the test of their bound). */
export const keptFormatters = (): number => partsFormat.size;

/** True when the runtime knows the zone (a row written by hand may name anything). */
export function isZone(tz: string): boolean {
  if (partsFormat.has(tz)) return true;
  if (unknown.has(tz)) return false;
  try {
    formatterOf(tz);
    return true;
  } catch {
    if (unknown.size < 1000) unknown.add(tz);
    return false;
  }
}

function formatterOf(tz: string): Intl.DateTimeFormat {
  let f = partsFormat.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: tz,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    if (partsFormat.size >= MAX_FORMATS) partsFormat.clear();
    partsFormat.set(tz, f);
  }
  return f;
}

/** The zone's wall clock at `t`, expressed as if it were UTC (so Date's UTC getters read it). */
export function wallOf(t: number, tz: string): number {
  let y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  for (const p of formatterOf(tz).formatToParts(t)) {
    switch (p.type) {
      case "year": y = +p.value; break;
      case "month": mo = +p.value; break;
      case "day": d = +p.value; break;
      case "hour": h = +p.value; break;
      case "minute": mi = +p.value; break;
      case "second": s = +p.value; break;
    }
  }
  // Date.UTC maps years 0-99 to 1900+; the zones' calendar never reaches them here.
  return Date.UTC(y, mo - 1, d, h, mi, s) + (t % 1000 + 1000) % 1000;
}

/** The zone's offset from UTC at `t`, in ms (wall = t + offset). */
export const offsetAt = (t: number, tz: string): number => wallOf(t, tz) - t;

/**
 * The first instant at which the zone's clock reads the wall time `wall` (given as if UTC).
 * A wall time that occurs twice (the repeated hour when clocks go back) resolves to its first
 * occurrence; one that never occurs (skipped when clocks go forward) resolves to the moment of the
 * jump, the first instant at which the clock reads a later time. Zones change offset at most once
 * within a day of any instant, so the offsets a day before and after are the only candidates.
 */
export function instantOf(wall: number, tz: string): number {
  const before = offsetAt(wall - DAY, tz);
  const after = offsetAt(wall + DAY, tz);
  const hits = [wall - before, wall - after].filter((t) => wallOf(t, tz) === wall);
  if (hits.length > 0) return Math.min(...hits);
  // In a gap the clock jumps forward (after > before): at wall - after it still reads earlier than
  // `wall`, at wall - before it already reads later. Find the minute of the jump between them.
  let lo = wall - after;
  let hi = wall - before;
  while (hi - lo > MINUTE) {
    const mid = lo + Math.floor((hi - lo) / 2 / MINUTE) * MINUTE;
    if (wallOf(mid, tz) >= wall) hi = mid;
    else lo = mid;
  }
  return hi;
}

