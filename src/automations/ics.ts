// The iCalendar event (RFC 5545) an appointment automation's email carries as `appointment.ics`,
// so the person can put the appointment in their calendar. Pure. Times are UTC (`Z`), which every
// calendar shows in its own zone; the UID is the appointment's, so a later email about the same
// appointment (a reminder after a move) updates the entry instead of adding a second one.

export interface IcsAppointment {
  id: number;
  /** Unix seconds. */
  start: number;
  minutes: number;
  /** pending: TENTATIVE; confirmed: CONFIRMED. */
  status: string;
  calendar: string;
  business: string;
  rescheduleUrl: string | null;
}

const utc = (ms: number) => new Date(ms).toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");

/** TEXT values: backslash, semicolon, comma and line breaks escaped (RFC 5545 §3.3.11). */
export const icsText = (s: string) => s.replace(/\\/g, "\\\\").replace(/;/g, "\\;").replace(/,/g, "\\,").replace(/\r\n|\r|\n/g, "\\n");

/** A content line folded at 75 octets, continuation lines starting with a space (§3.1), never inside a UTF-8 character. */
export function fold(line: string): string {
  const out: string[] = [];
  let cur = "";
  let octets = 0;
  for (const ch of line) {
    const n = Buffer.byteLength(ch);
    if (octets + n > (out.length === 0 ? 75 : 74)) {
      out.push(cur);
      cur = "";
      octets = 0;
    }
    cur += ch;
    octets += n;
  }
  out.push(cur);
  return out.join("\r\n ");
}

/** The event as an iCalendar text; `host` names this installation in the UID; `now` (ms) is the DTSTAMP. */
export function appointmentIcs(a: IcsAppointment, host: string, now: number): string {
  const title = [a.calendar, a.business].filter((s) => s.trim() !== "").join(" with ") || "Appointment";
  const lines = [
    "BEGIN:VCALENDAR",
    "VERSION:2.0",
    "PRODID:-//Leadline//Appointments//EN",
    "CALSCALE:GREGORIAN",
    "METHOD:PUBLISH",
    "BEGIN:VEVENT",
    `UID:appointment-${a.id}@${host}`,
    `DTSTAMP:${utc(now)}`,
    `DTSTART:${utc(a.start * 1000)}`,
    `DTEND:${utc((a.start + a.minutes * 60) * 1000)}`,
    `SUMMARY:${icsText(title)}`,
    `STATUS:${a.status === "confirmed" ? "CONFIRMED" : "TENTATIVE"}`,
    ...(a.rescheduleUrl ? [`DESCRIPTION:${icsText(`To move it: ${a.rescheduleUrl}`)}`, `URL:${a.rescheduleUrl}`] : []),
    "END:VEVENT",
    "END:VCALENDAR",
  ];
  return lines.map(fold).join("\r\n") + "\r\n";
}
