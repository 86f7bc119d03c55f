// The Today page (managers, admins: the managers' home): the Today report of src/reports/ for a day
// of the organization (default its today), each figure beside the day before and the same weekday a
// week before, the day's people, a chart of the three days with its numbers, and the same figures
// as CSV. An admin picks the organization; nothing is read until they do. The organization's today
// refreshes its figures every minute (assets/today.js).
import { Type as t } from "@sinclair/typebox";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { TODAY_CSV_HEADER, todayCsvRows } from "../reports/csv";
import type { DayFigures, TodayReport } from "../reports/model";
import { todayReport } from "../reports/today";
import { talkTime } from "./calls";
import { chart } from "./chart";
import { csvAnswer, csvResponse } from "./csv";
import { clockTime, consoleHtml, html, HTMX_CONFIG, notFoundPage, POLL_HEADERS, type Html } from "./html";
import { dayParam, orgChoices, orgOf, orgSelect, queryOf, today, type OrgChoice } from "./period";
import { MANAGERS, pageQuery, pageSpec, type Viewer } from "./route";

const TodayQuery = t.Object({
  day: t.Optional(t.String({ description: "YYYY-MM-DD in the organization's zone; default its today" })),
  org: t.Optional(t.String({ description: "admins: the organization" })),
});

const count = (n: number) => n.toLocaleString("en-US");
const secs = (n: number | null) => (n === null ? "–" : talkTime(Math.round(n)));
const money = (n: number) => `$${n.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 4 })}`;

interface Figure {
  name: string;
  value: (d: DayFigures) => number | null;
  show: (n: number | null) => string;
  /** A sub-row (a part of the figure above it). */
  part?: boolean;
}

const num = (n: number | null) => (n === null ? "–" : count(n));

/** The figures in the order a manager reads the day (docs/reports.md defines each). */
function figures(r: TodayReport): Figure[] {
  const sources = [...new Set([r.today, r.yesterday, r.lastWeek].flatMap((d) => d.leads.bySource.map((s) => s.source)))].sort();
  const bySource = (d: DayFigures, s: string) => d.leads.bySource.find((x) => x.source === s)?.leads ?? 0;
  return [
    { name: "New leads", value: (d) => d.leads.total, show: num },
    ...sources.map((s): Figure => ({ name: s === "" ? "(no source)" : s, value: (d) => bySource(d, s), show: num, part: true })),
    { name: "Calls answered", value: (d) => d.calls.answered, show: num },
    { name: "Calls missed", value: (d) => d.calls.missed, show: num },
    { name: "Talk time", value: (d) => d.calls.talkSecs, show: secs },
    { name: "First responses", value: (d) => d.firstResponse.responses, show: num },
    { name: "Median time to first response", value: (d) => d.firstResponse.medianSecs, show: secs },
    { name: "90th percentile time to first response", value: (d) => d.firstResponse.p90Secs, show: secs },
    { name: "Still waiting for a first response", value: (d) => d.firstResponse.waiting, show: num },
    { name: "Appointments booked", value: (d) => d.appointments.booked, show: num },
    { name: "Appointments confirmed", value: (d) => d.appointments.confirmed, show: num },
    { name: "No-shows", value: (d) => d.appointments.noShows, show: num },
    { name: "Messages sent", value: (d) => d.messages.sent, show: num },
    { name: "SMS", value: (d) => d.messages.sms, show: num, part: true },
    { name: "Email", value: (d) => d.messages.email, show: num, part: true },
    { name: "Messages' cost", value: (d) => d.messages.cost, show: (n) => money(n ?? 0) },
    { name: "Inbound messages", value: (d) => d.messages.inbound, show: num },
    { name: "Conversations handled", value: (d) => d.conversations, show: num },
  ];
}

/** The page shows the organization's today: its figures refresh (assets/today.js), as of `asOf`. */
interface Live {
  href: string;
  asOf: string;
}

export function todayBody(r: TodayReport | null, orgs: OrgChoice[], org: number | null, day: string | null, csvLink: string, live: Live | null = null): Html {
  const form = html`<form class="filters" method="get" action="/console/today">
  <div><label for="t-day">Day</label><input id="t-day" name="day" type="date" value="${day ?? r?.day ?? ""}"></div>
  ${orgSelect(orgs, org)}
  <div><button class="btn btn-primary" type="submit">Show</button></div>
</form>`;
  if (r === null) return html`${form}<p class="empty">Pick an organization to see its day.</p>`;
  const cols = [
    { label: r.day, note: "the day", d: r.today },
    { label: r.yesterday.day, note: "day before", d: r.yesterday },
    { label: r.lastWeek.day, note: "week before", d: r.lastWeek },
  ];
  const threeDays = [r.lastWeek, r.yesterday, r.today];
  return html`${form}
<p class="muted">${r.org.name}, ${r.org.zone}. <a href="/console/today.csv${csvLink}">Download as CSV</a></p>${
  live
    ? html`
<div id="today-refresh" hidden hx-get="${live.href}" hx-trigger="today:refresh" hx-swap="none" hx-select-oob="#today-live" ${POLL_HEADERS}></div>`
    : null
}
<div id="today-live">${live ? html`<p class="muted" id="today-as-of">As of ${live.asOf}; the figures refresh every minute.</p>` : null}
<div class="table-wrap" tabindex="0" role="region" aria-label="The day's figures"><table class="data" id="today-figures">
  <caption>The day's figures beside the day before and the same weekday a week before</caption>
  <thead><tr><th scope="col">Figure</th>${cols.map((c) => html`<th scope="col" class="num">${c.label}<br><span class="muted">${c.note}</span></th>`)}</tr></thead>
  <tbody>${figures(r).map(
    (f) => html`<tr${f.part ? html` class="part"` : null}><th scope="row">${f.part ? html`<span class="muted">of which </span>` : null}${f.name}</th>${cols.map(
      (c) => html`<td class="num">${f.show(f.value(c.d))}</td>`,
    )}</tr>`,
  )}</tbody>
</table></div>
${chart({
  id: "today-chart",
  title: `Leads, calls and messages: ${r.lastWeek.day}, ${r.yesterday.day} and ${r.day}`,
  labels: threeDays.map((d) => d.day),
  kind: "bar",
  // Three days apart, not a period: a total of them would mean nothing.
  series: [
    { name: "New leads", total: false, values: threeDays.map((d) => d.leads.total) },
    { name: "Calls answered", total: false, values: threeDays.map((d) => d.calls.answered) },
    { name: "Calls missed", total: false, values: threeDays.map((d) => d.calls.missed) },
    { name: "Messages sent", total: false, values: threeDays.map((d) => d.messages.sent) },
  ],
})}
<h2>People, ${r.day}</h2>
${r.agents.length === 0
  ? html`<p class="empty">Nobody replied, called or spoke with a lead on this day.</p>`
  : html`<div class="table-wrap" tabindex="0" role="region" aria-label="People"><table class="data" id="today-agents">
  <thead><tr><th scope="col">Person</th><th scope="col" class="num">Conversations</th><th scope="col" class="num">Replies</th><th scope="col" class="num">Calls</th><th scope="col" class="num">Answered</th><th scope="col" class="num">Talk time</th><th scope="col" class="num">First responses</th><th scope="col" class="num">Median response</th></tr></thead>
  <tbody>${r.agents.map(
    (a) => html`<tr><th scope="row">${a.name || a.agent}</th><td class="num">${count(a.conversations)}</td><td class="num">${count(a.replies)}</td><td class="num">${count(a.calls)}</td><td class="num">${count(a.answered)}</td><td class="num">${secs(a.talkSecs)}</td><td class="num">${count(a.responses)}</td><td class="num">${secs(a.medianResponseSecs)}</td></tr>`,
  )}</tbody>
</table></div>`}
</div>`;
}

/** The report the query asks for; null: an admin who picked no organization; "missing": no such organization. */
async function reportOf(deps: Deps, viewer: Viewer, q: { day?: string; org?: string }): Promise<TodayReport | null | "missing"> {
  const org = orgOf(viewer, q);
  if (org === null) return null;
  // A day that is not a calendar day reads as absent (the organization's today), as every page's.
  const r = await todayReport(deps.sql, viewer.actor, { org, day: dayParam(q.day) }, new Date(deps.clock.now()));
  return r.ok ? r : "missing";
}

export function todayRoutes(deps: Deps): Route[] {
  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleToday",
        summary: "The day's figures (the managers' home)",
        method: "GET",
        path: "/console/today",
        roles: MANAGERS,
        query: pageQuery(TodayQuery),
      }),
      async ({ query: q }, { grant: viewer }) => {
        const [r, orgs] = await Promise.all([reportOf(deps, viewer, q), orgChoices(deps.sql, viewer)]);
        if (r === "missing") return notFoundPage(deps, viewer);
        const org = orgOf(viewer, q);
        const link = queryOf({ day: r?.day ?? null, org: viewer.actor.orgId === null ? org : null });
        const now = deps.clock.now();
        // Today's figures move as the day goes; another day's are settled.
        const live = r !== null && r.day === today(now, r.org.zone) ? { href: `/console/today${link}`, asOf: clockTime(now, r.org.zone) } : null;
        const body = todayBody(r, orgs, org, dayParam(q.day), link, live);
        return consoleHtml(deps, viewer, {
          title: "Today",
          nav: "today",
          body,
          styles: ["reports.css"],
          ...(live ? { scripts: ["htmx.min.js", "today.js"], head: HTMX_CONFIG } : {}),
        });
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        answers: csvAnswer("The day's figures as CSV: day, section, item, figure, value"),
        id: "consoleTodayCsv",
        summary: "The day's figures as CSV",
        description: "Every figure of the Today page, one a row, for the day, the day before and the same weekday a week before, then each person's. Admins name the organization (`org`), else the 404 page.",
        method: "GET",
        path: "/console/today.csv",
        roles: MANAGERS,
        query: pageQuery(TodayQuery),
      }),
      async ({ query: q }, { grant: viewer }) => {
        const r = await reportOf(deps, viewer, q);
        if (r === null || r === "missing") return notFoundPage(deps, viewer);
        const rows = (async function* () {
          yield todayCsvRows(r);
        })();
        return csvResponse(`today-${r.day}.csv`, TODAY_CSV_HEADER, rows, (row) => row);
      },
    ),
  ];
}
