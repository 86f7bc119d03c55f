// The attribution report page (managers, admins who pick an organization): per first touch of the
// DNI visitors (source / medium / campaign / landing page) over a period of the organization's days,
// visitors, calls, answered calls, leads, appointments booked and their recorded value (src/reports/attribution.ts), as a
// table and as CSV. Presets as the KPI page's; a range of at most a year.
import { Type as t } from "@sinclair/typebox";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { attributionCurrency, attributionReport, type AttributionRow } from "../reports/attribution";
import { daysBefore } from "../reports/today";
import { daysBetween } from "./chart";
import { csvAnswer, csvResponse } from "./csv";
import { consoleHtml, html, type Html } from "./html";
import { defaultEnd, KPI_PRESETS } from "./kpi";
import { dayParam, orgChoices, orgOf, orgSelect, queryOf, zoneOf, type OrgChoice } from "./period";
import { MANAGERS, pageQuery, pageSpec, type Viewer } from "./route";

const AttributionQuery = t.Object({
  from: t.Optional(t.String({ description: "first day, YYYY-MM-DD" })),
  to: t.Optional(t.String({ description: "last day, inclusive" })),
  preset: t.Optional(t.String({ description: "`today`, `7`, `30` or `90` days; ignored when from or to is given" })),
  org: t.Optional(t.String({ description: "admins: the organization" })),
});

const MAX_DAYS = 366;
const FIGURES = ["visitors", "calls", "answered", "leads", "appointments"] as const;
const CSV_HEADER = ["source", "medium", "campaign", "landing", ...FIGURES, "value", "currency"] as const;

/** A value in the organization's currency when it has one, else a plain number; two decimals either way. */
export function valueText(v: number, currency: string | null): string {
  const two = { minimumFractionDigits: 2, maximumFractionDigits: 2 };
  return currency === null ? v.toLocaleString("en-US", two) : new Intl.NumberFormat("en-US", { style: "currency", currency, ...two }).format(v);
}
const none = (v: string) => (v === "" ? html`<span class="muted">(none)</span>` : v);

interface Period {
  org: number | null;
  from: string;
  to: string;
  preset: string | null;
}

async function periodOf(deps: Deps, viewer: Viewer, q: { from?: string; to?: string; preset?: string; org?: string }): Promise<Period & { zone: string }> {
  const org = orgOf(viewer, q);
  const zone = await zoneOf(deps.sql, org);
  const preset = q.from === undefined && q.to === undefined ? (KPI_PRESETS.find((p) => p.id === q.preset) ?? null) : null;
  let to = dayParam(q.to) ?? defaultEnd(deps.clock.now(), zone);
  let from = dayParam(q.from) ?? daysBefore(to, (preset?.days ?? 30) - 1);
  if (from > to) [from, to] = [to, from];
  const days = daysBetween(from, to);
  if (days.length > MAX_DAYS) from = days[days.length - MAX_DAYS];
  return { org, zone, from, to, preset: preset?.id ?? null };
}

export function attributionBody(p: Period, rows: AttributionRow[] | null, orgs: OrgChoice[], currency: string | null = null): Html {
  const q = (extra: Record<string, string | null>) => queryOf({ org: orgs.length ? p.org : null, ...extra });
  return html`<form class="filters" method="get" action="/console/reports/attribution">
  <div><label for="a-from">From</label><input id="a-from" name="from" type="date" value="${p.from}"></div>
  <div><label for="a-to">To</label><input id="a-to" name="to" type="date" value="${p.to}"></div>
  ${orgSelect(orgs, p.org)}
  <div><button class="btn btn-primary" type="submit">Show</button></div>
</form>
<ul class="presets" aria-label="Periods">${KPI_PRESETS.map(
    (x) => html`<li><a href="/console/reports/attribution${q({ preset: x.id })}"${x.id === p.preset ? html` aria-current="true"` : null}>${x.label}</a></li>`,
  )}</ul>
${rows === null
  ? html`<p class="empty">Pick an organization to see its attribution.</p>`
  : html`<p class="muted">${p.from} to ${p.to}. <a href="/console/reports/attribution.csv${q({ from: p.from, to: p.to })}">Download as CSV</a></p>
${rows.length === 0
  ? html`<p class="empty">No visitors, calls, leads or appointments with a first touch in this period.</p>`
  : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Attribution"><table class="data" id="attribution">
  <thead><tr><th scope="col">Source</th><th scope="col">Medium</th><th scope="col">Campaign</th><th scope="col">Landing page</th>${FIGURES.map(
    (f) => html`<th scope="col" class="num">${f[0].toUpperCase() + f.slice(1)}</th>`,
  )}<th scope="col" class="num">Value${currency ? ` (${currency})` : ""}</th></tr></thead>
  <tbody>${rows.map(
    (r) => html`<tr><th scope="row">${none(r.source)}</th><td>${none(r.medium)}</td><td>${none(r.campaign)}</td><td class="cell-clip">${none(r.landing)}</td>${FIGURES.map(
      (f) => html`<td class="num">${r[f].toLocaleString("en-US")}</td>`,
    )}<td class="num">${valueText(r.value, currency)}</td></tr>`,
  )}</tbody>
</table></div>`}`}`;
}

export function attributionRoutes(deps: Deps): Route[] {
  const run = async (viewer: Viewer, q: Record<string, string | undefined>) => {
    const p = await periodOf(deps, viewer, q);
    if (p.org === null) return { p, rows: null, currency: null };
    const [rows, currency] = await Promise.all([attributionReport(deps.sql, p.org, p.from, p.to), attributionCurrency(deps.sql, p.org)]);
    return { p, rows, currency };
  };
  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleAttributionReport",
        summary: "Visitors, calls, leads and appointments by first touch",
        method: "GET",
        path: "/console/reports/attribution",
        roles: MANAGERS,
        query: pageQuery(AttributionQuery),
      }),
      async ({ query }, { grant: viewer }) => {
        const [{ p, rows, currency }, orgs] = await Promise.all([run(viewer, query), orgChoices(deps.sql, viewer)]);
        return consoleHtml(deps, viewer, { title: "Attribution", nav: "kpi", body: attributionBody(p, rows, orgs, currency), styles: ["reports.css"] });
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        answers: csvAnswer("The attribution report as CSV"),
        id: "consoleAttributionReportCsv",
        summary: "The attribution report as CSV",
        description: "One row per first touch: source, medium, campaign, landing, visitors, calls, answered, leads, appointments, value (two decimals) and the organization's currency (empty when it has none). Admins name the organization (`org`), else the header alone.",
        method: "GET",
        path: "/console/reports/attribution.csv",
        roles: MANAGERS,
        query: pageQuery(AttributionQuery),
      }),
      async ({ query }, { grant: viewer }) => {
        const { p, rows, currency } = await run(viewer, query);
        const all = (async function* () {
          if (rows && rows.length) yield rows;
        })();
        return csvResponse(`attribution-${p.from}-${p.to}.csv`, CSV_HEADER, all, (r: AttributionRow) => [
          r.source, r.medium, r.campaign, r.landing, ...FIGURES.map((f) => r[f]), r.value.toFixed(2), currency ?? "",
        ]);
      },
    ),
  ];
}
