// Calling windows (issue 31): the lead's local time, and whether it is outside the hours a call may
// be placed there. Pure functions of (now, the lead's state and phone); the rules are data. Nothing
// here holds a dial back: cti_queue.php hands every dial out in its order and says `outside_window`
// and `local_time`, so the dialer decides; the console asks for a confirmation (src/console/lead.ts).
//
// The zone: the lead's US state where it names one (the quiet-hours table, STATE_ZONES), else its
// phone's area code (area-zones.ts), else unknown (`local_time` null, `outside_window` false:
// nothing says it is outside). The window: the federal one, or the lead's state's where the rules
// below make it stricter. A window is half-open, [start, end) in local time: from 21:00:00 on is
// outside, which is on the safe side of "after 9 p.m.".
import { isZone, wallOf } from "../zone";
import { stateCode, stateZone } from "../messages/quiet-hours";
import { AREA_ZONES } from "./area-zones";

export interface WindowRule {
  /** "HH:MM", local time at the called party's location. */
  start: string;
  end: string;
  /** The law the rule comes from. */
  source: string;
}

/** 47 CFR § 64.1200(c)(1) (TCPA rules): no telephone solicitation before 8 a.m. or after 9 p.m. at the called party's location. */
export const FEDERAL_WINDOW: WindowRule = { start: "08:00", end: "21:00", source: "47 CFR 64.1200(c)(1)" };

/**
 * States whose telephone-solicitation laws allow fewer hours than the federal window, by the
 * state's code. These are rules for sales calls; whether they bind a given call is the
 * organization's (and its counsel's) question, which is why the dialer gets the facts and decides.
 * Add a state here, with its source, when one is found stricter.
 */
export const STATE_WINDOWS: Readonly<Record<string, WindowRule>> = {
  // Florida Telemarketing Act as amended in 2021 (SB 1120): 8 a.m. to 8 p.m. in the called person's zone.
  FL: { start: "08:00", end: "20:00", source: "Fla. Stat. 501.616(6)(a)" },
  // Oklahoma Telephone Solicitation Act of 2022 (HB 3168): 8 a.m. to 8 p.m.
  OK: { start: "08:00", end: "20:00", source: "Okla. Stat. tit. 15, 775C (Telephone Solicitation Act of 2022)" },
};

/** The window that applies to a lead in `state`. */
export function windowFor(state: string): WindowRule {
  const code = stateCode(state);
  return (code !== null && Object.hasOwn(STATE_WINDOWS, code) && STATE_WINDOWS[code]) || FEDERAL_WINDOW;
}

/** The zone of a North American number (10 digits, or 11 starting with 1) by its area code; null otherwise. */
export function areaZone(phone: string): string | null {
  const digits = phone.replace(/\D+/g, "");
  const national = digits.length === 10 ? digits : digits.length === 11 && digits[0] === "1" ? digits.slice(1) : null;
  if (national === null) return null;
  const zone = AREA_ZONES.get(national.slice(0, 3));
  return zone !== undefined && isZone(zone) ? zone : null;
}

/** The lead's zone: its state's, else its phone's area code's, else null. */
export const leadZone = (state: string, phone: string): string | null => stateZone(state) ?? areaZone(phone);

export interface LocalTime {
  /** Null when the zone is unknown. */
  zone: string | null;
  /** ISO-8601 with the zone's offset, to the second ("2026-03-08T07:59:59-05:00"); null when the zone is unknown. */
  localTime: string | null;
  /** Whether now is outside the window at the lead's location; false when the zone is unknown. */
  outsideWindow: boolean;
  window: WindowRule;
}

const MINUTE = 60_000;
const DAY = 86_400_000;
const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
const two = (n: number) => String(n).padStart(2, "0");

/** `wall` (the zone's clock, as if UTC) written with the offset `offsetMs`. */
function isoWithOffset(wall: number, offsetMs: number): string {
  const local = new Date(wall).toISOString().slice(0, 19);
  const minutes = Math.round(offsetMs / MINUTE);
  const sign = minutes < 0 ? "-" : "+";
  const abs = Math.abs(minutes);
  return `${local}${sign}${two(Math.floor(abs / 60))}:${two(abs % 60)}`;
}

/** The lead's local time at `now` (epoch ms) and whether it is outside the window there. */
export function localCallTime(now: number, lead: { state: string; phone: string }): LocalTime {
  const window = windowFor(lead.state);
  const zone = leadZone(lead.state, lead.phone);
  if (zone === null) return { zone: null, localTime: null, outsideWindow: false, window };
  // Whole seconds: the answer names a second, and the window's edges are whole minutes.
  const t = Math.floor(now / 1000) * 1000;
  const wall = wallOf(t, zone);
  const minute = Math.floor((((wall % DAY) + DAY) % DAY) / MINUTE);
  const inside = minute >= minutesOf(window.start) && minute < minutesOf(window.end);
  return { zone, localTime: isoWithOffset(wall, wall - t), outsideWindow: !inside, window };
}
