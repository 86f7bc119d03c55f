// The Today report as CSV rows, one figure a row (long form, which a spreadsheet pivots and a
// script reads without knowing the figures in advance). The route that streams it comes with the
// Today screen (src/console/csv.ts csvResponse takes these rows as they are).
import type { DayFigures, TodayReport } from "./model";

export const TODAY_CSV_HEADER = ["day", "section", "item", "figure", "value"] as const;

export type CsvRow = [day: string, section: string, item: string, figure: string, value: number | string | null];

function dayRows(d: DayFigures): CsvRow[] {
  const at = (section: string, item: string, figure: string, value: number | null): CsvRow => [d.day, section, item, figure, value];
  return [
    at("leads", "", "new", d.leads.total),
    ...d.leads.bySource.map((s) => at("leads", s.source, "new", s.leads)),
    at("calls", "", "answered", d.calls.answered),
    at("calls", "", "missed", d.calls.missed),
    at("calls", "", "talk_secs", d.calls.talkSecs),
    at("first_response", "", "responses", d.firstResponse.responses),
    at("first_response", "", "median_secs", d.firstResponse.medianSecs),
    at("first_response", "", "p90_secs", d.firstResponse.p90Secs),
    at("first_response", "", "waiting", d.firstResponse.waiting),
    at("appointments", "", "booked", d.appointments.booked),
    at("appointments", "", "pending", d.appointments.pending),
    at("appointments", "", "confirmed", d.appointments.confirmed),
    at("appointments", "", "completed", d.appointments.completed),
    at("appointments", "", "no_show", d.appointments.noShows),
    at("appointments", "", "cancelled", d.appointments.cancelled),
    at("messages", "", "sent", d.messages.sent),
    at("messages", "sms", "sent", d.messages.sms),
    at("messages", "email", "sent", d.messages.email),
    at("messages", "", "cost", d.messages.cost),
    at("messages", "", "inbound", d.messages.inbound),
    at("messages", "", "replies", d.messages.replies),
    at("conversations", "", "handled", d.conversations),
  ];
}

/** Every figure of the report: the day, the day before, the same weekday a week before, then each person's day. */
export function todayCsvRows(r: TodayReport): CsvRow[] {
  const people = r.agents.flatMap((a): CsvRow[] => {
    const at = (figure: string, value: number | null): CsvRow => [r.day, "agent", a.agent, figure, value];
    return [
      [r.day, "agent", a.agent, "name", a.name],
      at("conversations", a.conversations),
      at("replies", a.replies),
      at("calls", a.calls),
      at("answered", a.answered),
      at("missed", a.missed),
      at("talk_secs", a.talkSecs),
      at("responses", a.responses),
      at("median_response_secs", a.medianResponseSecs),
    ];
  });
  return [...dayRows(r.today), ...dayRows(r.yesterday), ...dayRows(r.lastWeek), ...people];
}
