// The KPI page (managers, admins): one metric by day as a chart, with its dimension filter and a
// date range. Points are the organization's own (an admin picks one, or sees every organization's
// and the house's points summed).
import { Type as t } from "@sinclair/typebox";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { kpiDimensions, kpiMetrics, kpiSeries, kpiSeriesByDim, type KpiMetric } from "../kpi/queries";
import { LABEL_MAX, setKpiLabel } from "../kpi/labels";
import { localDay } from "../kpi/service";
import { daysBefore } from "../reports/today";
import { chart, chartTable, daysBetween, type ChartSpec } from "./chart";
import { csvAnswer, csvResponse } from "./csv";
import { consoleHtml, html, seeOther, type Html } from "./html";
import { dayParam, orgChoices, orgOf, orgSelect, queryOf, textParam, today, zoneOf, type OrgChoice } from "./period";
import { formBody, MANAGERS, pageQuery, pageSpec, type Viewer } from "./route";

const KpiQuery = t.Object({
  metric: t.Optional(t.String()),
  dim: t.Optional(t.String({ description: "one dimension; `*` or absent: every dimension summed; empty: points without one" })),
  from: t.Optional(t.String({ description: "first day, YYYY-MM-DD" })),
  to: t.Optional(t.String({ description: "last day, inclusive" })),
  org: t.Optional(t.String({ description: "admins: one organization" })),
  preset: t.Optional(t.String({ description: "`today`, `7`, `30` or `90` days ending at the default end; ignored when from or to is given" })),
  stack: t.Optional(t.String({ description: "`dim`: the bars stacked by dimension (every dimension, each its own part); else one bar a day" })),
});

/** The presets: days ending at the default end (today: that day alone). */
export const KPI_PRESETS: readonly { id: string; label: string; days: number }[] = [
  { id: "today", label: "Today", days: 1 },
  { id: "7", label: "7 days", days: 7 },
  { id: "30", label: "30 days", days: 30 },
  { id: "90", label: "90 days", days: 90 },
];
const DEFAULT_DAYS = 30;

/**
 * The default range's last day: the later of the organization's today and the server's (a point
 * ingested without `day` is stored under the server's date, api-v1.md; when the organization's zone
 * is behind the server's, the server's date is already tomorrow for the organization, and a range
 * ending at the organization's today would hide what was just ingested).
 */
export function defaultEnd(now: number, zone: string): string {
  const org = today(now, zone);
  const server = localDay(new Date(now));
  return server > org ? server : org;
}

/** The longest range a chart shows: beyond it the bars are thinner than a pixel on a phone. */
export const MAX_KPI_DAYS = 366;
const ALL_DIMS = "*";
/**
 * The most dimensions a stacked bar shows one by one (each its own colour, chart-s0…); the rest are
 * summed as one part, "Other dimensions", so that a metric reported under hundreds of keys still
 * draws a readable bar and the legend stays short.
 */
export const MAX_STACKED = 7;
const OTHER_DIMS = "Other dimensions";

export interface KpiView {
  metrics: KpiMetric[];
  metric: KpiMetric | null;
  dims: string[];
  dim: string | null;
  from: string;
  to: string;
  days: string[];
  values: (number | null)[];
  /** The same number of days just before `from`, day by day. */
  previous: { from: string; to: string; values: (number | null)[] };
  preset: string | null;
  /** Stacked by dimension: each part's values, day by day (the largest parts first, the rest summed last); null: one bar a day. */
  stacked: { name: string; values: (number | null)[] }[] | null;
  /** The session's CSRF token, for the label form. */
  csrf: string;
  org: number | null;
  orgs: OrgChoice[];
}

const total = (vs: (number | null)[]) => vs.reduce<number>((a, v) => a + (v ?? 0), 0);
const figure = (n: number) => n.toLocaleString("en-US", { maximumFractionDigits: 2 });

const dimLabel = (d: string) => (d === "" ? "(no dimension)" : d);

/** The page's chart (its table is the CSV's rows, chartTable). */
export function kpiChart(v: KpiView): ChartSpec {
  const label = v.metric ? v.metric.label : "";
  const previous = { name: `Previous period (${v.previous.from} to ${v.previous.to}), same day of the period`, values: v.previous.values, line: true, tone: "chart-prev" };
  if (v.stacked)
    return {
      id: "kpi-chart",
      title: `${label} by day and dimension, ${v.from} to ${v.to}`,
      labels: v.days,
      series: [...v.stacked, previous],
      kind: "bar",
      stacked: true,
      totalColumn: true,
    };
  return { id: "kpi-chart", title: `${label} by day, ${v.from} to ${v.to}`, labels: v.days, series: [{ name: label, values: v.values }, previous], kind: "bar" };
}

export function kpiBody(v: KpiView): Html {
  const label = v.metric ? v.metric.label : "";
  return html`<p><a href="/console/reports/attribution${queryOf({ org: v.orgs.length ? v.org : null })}">Attribution report</a>: visitors, calls, leads and appointments by source, medium, campaign and landing page.</p>
${v.metrics.length === 0
  ? html`<p class="empty">No KPI points have been reported yet (POST /hooks/kpi_ingest.php).</p>`
  : html`<form class="filters" method="get" action="/console/kpi">
  <div><label for="k-metric">Metric</label><select id="k-metric" name="metric">${v.metrics.map(
    (m) => html`<option value="${m.key}"${m.key === v.metric?.key ? html` selected` : null}>${m.label}</option>`,
  )}</select></div>
  <div><label for="k-dim">Dimension</label><select id="k-dim" name="dim"><option value="${ALL_DIMS}">Every dimension, summed</option>${v.dims.map(
    (d) => html`<option value="${d}"${d === v.dim ? html` selected` : null}>${dimLabel(d)}</option>`,
  )}</select></div>
  <div><label for="k-stack">Bars</label><select id="k-stack" name="stack"><option value="">One bar a day</option><option value="dim"${v.stacked ? html` selected` : null}>Stacked by dimension</option></select></div>
  <div><label for="k-from">From</label><input id="k-from" name="from" type="date" value="${v.from}"></div>
  <div><label for="k-to">To</label><input id="k-to" name="to" type="date" value="${v.to}"></div>
  ${orgSelect(v.orgs, v.org)}
  <div><button class="btn btn-primary" type="submit">Show</button></div>
</form>
<ul class="presets" aria-label="Periods">${KPI_PRESETS.map(
    (p) => html`<li><a href="/console/kpi${queryOf({ metric: v.metric?.key, dim: v.dim, stack: v.stacked ? "dim" : null, org: v.orgs.length ? v.org : null, preset: p.id })}"${p.id === v.preset ? html` aria-current="true"` : null}>${p.label}</a></li>`,
  )}</ul>
${v.metric === null
  ? null
  : html`<h2>${label}${v.dim === null ? null : html` <span class="muted">· ${dimLabel(v.dim)}</span>`}</h2>
<form class="filters" method="post" action="/console/kpi/labels"><input type="hidden" name="_csrf" value="${v.csrf}"><input type="hidden" name="metric" value="${v.metric.key}">${
  v.orgs.length && v.org !== null ? html`<input type="hidden" name="org" value="${v.org}">` : null}
  <div><label for="k-label">Label of ${v.metric.key}${v.orgs.length && v.org === null ? " (every organization's default)" : ""}</label><input id="k-label" name="label" maxlength="${LABEL_MAX}" value="${label}"></div>
  <div><button class="btn" type="submit">Save label</button></div>
</form>
<p class="muted"><a href="/console/kpi.csv${queryOf({ metric: v.metric.key, dim: v.dim, stack: v.stacked ? "dim" : null, from: v.from, to: v.to, org: v.orgs.length ? v.org : null })}">Download the chart's numbers as CSV</a></p>
<dl class="totals" id="kpi-totals">
  <div><dt>${v.from} to ${v.to}</dt><dd>${figure(total(v.values))}</dd></div>
  <div><dt>Previous period, ${v.previous.from} to ${v.previous.to}</dt><dd>${figure(total(v.previous.values))}</dd></div>
</dl>
${chart(kpiChart(v))}`}`}`;
}

/**
 * The stacked parts: each dimension's values day by day, the largest over the period first; beyond
 * MAX_STACKED, the smaller ones summed as one last part.
 */
export function stackOf(points: { day: string; dim: string; value: number }[], days: string[]): NonNullable<KpiView["stacked"]> {
  const byDim = new Map<string, Map<string, number>>();
  for (const p of points) {
    const m = byDim.get(p.dim) ?? new Map<string, number>();
    m.set(p.day, (m.get(p.day) ?? 0) + p.value);
    byDim.set(p.dim, m);
  }
  const sum = (m: Map<string, number>) => [...m.values()].reduce((a, v) => a + v, 0);
  const ranked = [...byDim.entries()].sort((a, b) => sum(b[1]) - sum(a[1]) || (a[0] < b[0] ? -1 : 1));
  const shown = ranked.length > MAX_STACKED ? ranked.slice(0, MAX_STACKED - 1) : ranked;
  const parts = shown.map(([d, m]) => ({ name: dimLabel(d), values: days.map((day) => m.get(day) ?? null) }));
  const rest = ranked.slice(shown.length);
  if (rest.length)
    parts.push({
      name: `${OTHER_DIMS} (${rest.length})`,
      values: days.map((day) => {
        const vs = rest.map(([, m]) => m.get(day)).filter((v): v is number => v !== undefined);
        return vs.length ? vs.reduce((a, v) => a + v, 0) : null;
      }),
    });
  return parts;
}

type KpiParams = { metric?: string; dim?: string; from?: string; to?: string; org?: string; preset?: string; stack?: string };

/** What the KPI page shows for a query (and its CSV writes). */
async function kpiView(deps: Deps, viewer: Viewer, q: KpiParams): Promise<KpiView> {
  const { sql } = deps;
  const org = orgOf(viewer, q);
  const now = deps.clock.now();
  const zone = await zoneOf(sql, org);
  const end = defaultEnd(now, zone);
  const preset = q.from === undefined && q.to === undefined ? (KPI_PRESETS.find((p) => p.id === q.preset) ?? null) : null;
  let to = dayParam(q.to) ?? end;
  let from = dayParam(q.from) ?? daysBefore(to, (preset?.days ?? DEFAULT_DAYS) - 1);
  if (from > to) [from, to] = [to, from];
  let days = daysBetween(from, to);
  if (days.length > MAX_KPI_DAYS) {
    days = days.slice(-MAX_KPI_DAYS);
    from = days[0];
  }
  const [metrics, orgs] = await Promise.all([kpiMetrics(sql, org), orgChoices(sql, viewer)]);
  const asked = textParam(q.metric, 60);
  const metric = metrics.find((m) => m.key === asked) ?? metrics[0] ?? null;
  let dims: string[] = [];
  let dim: string | null = null;
  let values: (number | null)[] = [];
  const prevTo = daysBefore(from, 1);
  const prevDays = daysBetween(daysBefore(from, days.length), prevTo);
  let prevValues: (number | null)[] = [];
  let stacked: KpiView["stacked"] = null;
  if (metric) {
    dims = await kpiDimensions(sql, org, metric.key);
    // Only a dimension the metric has: anything else is every dimension summed. Stacked bars are
    // every dimension, each a part, so a one-dimension filter does not apply to them.
    const stack = q.stack === "dim";
    dim = !stack && q.dim !== undefined && q.dim !== ALL_DIMS && dims.includes(q.dim) ? q.dim : null;
    if (stack) stacked = stackOf(await kpiSeriesByDim(sql, { orgId: org, metric: metric.key, from, to }), days);
    const series = new Map((await kpiSeries(sql, { orgId: org, metric: metric.key, dim, from, to })).map((p) => [p.day, p.value]));
    values = days.map((d) => series.get(d) ?? null);
    const before = new Map((await kpiSeries(sql, { orgId: org, metric: metric.key, dim, from: prevDays[0], to: prevTo })).map((p) => [p.day, p.value]));
    prevValues = prevDays.map((d) => before.get(d) ?? null);
  }
  const previous = { from: prevDays[0], to: prevTo, values: prevValues };
  return { metrics, metric, dims, dim, from, to, days, values, previous, preset: preset?.id ?? null, stacked, csrf: viewer.csrf, org, orgs };
}

export function kpiRoutes(deps: Deps): Route[] {
  const { sql } = deps;
  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleKpi",
        summary: "KPIs by day",
        method: "GET",
        path: "/console/kpi",
        roles: ["admin", "manager"],
        query: pageQuery(KpiQuery),
      }),
      async ({ query: q }, { grant: viewer }) => {
        const v = await kpiView(deps, viewer, q);
        return consoleHtml(deps, viewer, { title: "KPIs", nav: "kpi", body: kpiBody(v), styles: ["reports.css"] });
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        answers: csvAnswer("The KPI chart's numbers as CSV"),
        id: "consoleKpiCsv",
        summary: "The KPI chart's numbers as CSV",
        description: "The table beside the KPI page's chart for the same query: the day, the metric (or each dimension and their total when `stack=dim`), then the previous period's value. No metric: the header alone.",
        method: "GET",
        path: "/console/kpi.csv",
        roles: MANAGERS,
        query: pageQuery(KpiQuery),
      }),
      async ({ query: q }, { grant: viewer }) => {
        const v = await kpiView(deps, viewer, q);
        const table = v.metric ? chartTable(kpiChart(v)) : { header: ["Day"], rows: [] };
        const rows = (async function* () {
          if (table.rows.length) yield table.rows;
        })();
        return csvResponse(`kpi-${v.metric?.key ?? "none"}-${v.from}-${v.to}.csv`, table.header, rows, (r) => r);
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleKpiLabel",
        summary: "Set (or with an empty label remove) the organization's label of a metric key",
        method: "POST",
        path: "/console/kpi/labels",
        roles: MANAGERS,
        body: formBody(t.Object({ metric: t.Optional(t.String()), label: t.Optional(t.String()), org: t.Optional(t.String()) })),
      }),
      async ({ body: form }, { grant: viewer }) => {
        const org = orgOf(viewer, { org: form.org });
        const metric = form.metric ?? "";
        // A refusal (a bad key or label, an unknown organization) shows the page again unchanged.
        await setKpiLabel(sql, viewer.actor, { org, metric, label: form.label ?? "" }, new Date(deps.clock.now()));
        return seeOther(`/console/kpi${queryOf({ metric, org: viewer.actor.orgId === null ? org : null })}`);
      },
    ),
  ];
}
