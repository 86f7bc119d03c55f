// The KPI page (managers, admins): one metric by day as a chart, with its dimension filter and a
// date range. Points are the organization's own (an admin picks one, or sees every organization's
// and the house's points summed).
import { Type as t } from "@sinclair/typebox";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { kpiDimensions, kpiMetrics, kpiSeries, type KpiMetric } from "../kpi/queries";
import { LABEL_MAX, setKpiLabel } from "../kpi/labels";
import { localDay } from "../kpi/service";
import { daysBefore } from "../reports/today";
import { chart, daysBetween } from "./chart";
import { consoleHtml, html, seeOther, type Html } from "./html";
import { dayParam, orgChoices, orgOf, orgSelect, queryOf, textParam, today, zoneOf, type OrgChoice } from "./period";
import { formBody, MANAGERS, pageQuery, pageSpec } from "./route";

const KpiQuery = t.Object({
  metric: t.Optional(t.String()),
  dim: t.Optional(t.String({ description: "one dimension; `*` or absent: every dimension summed; empty: points without one" })),
  from: t.Optional(t.String({ description: "first day, YYYY-MM-DD" })),
  to: t.Optional(t.String({ description: "last day, inclusive" })),
  org: t.Optional(t.String({ description: "admins: one organization" })),
  preset: t.Optional(t.String({ description: "`today`, `7`, `30` or `90` days ending at the default end; ignored when from or to is given" })),
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
  /** The session's CSRF token, for the label form. */
  csrf: string;
  org: number | null;
  orgs: OrgChoice[];
}

const total = (vs: (number | null)[]) => vs.reduce<number>((a, v) => a + (v ?? 0), 0);
const figure = (n: number) => n.toLocaleString("en-US", { maximumFractionDigits: 2 });

const dimLabel = (d: string) => (d === "" ? "(no dimension)" : d);

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
  <div><label for="k-from">From</label><input id="k-from" name="from" type="date" value="${v.from}"></div>
  <div><label for="k-to">To</label><input id="k-to" name="to" type="date" value="${v.to}"></div>
  ${orgSelect(v.orgs, v.org)}
  <div><button class="btn btn-primary" type="submit">Show</button></div>
</form>
<ul class="presets" aria-label="Periods">${KPI_PRESETS.map(
    (p) => html`<li><a href="/console/kpi${queryOf({ metric: v.metric?.key, dim: v.dim, org: v.orgs.length ? v.org : null, preset: p.id })}"${p.id === v.preset ? html` aria-current="true"` : null}>${p.label}</a></li>`,
  )}</ul>
${v.metric === null
  ? null
  : html`<h2>${label}${v.dim === null ? null : html` <span class="muted">· ${dimLabel(v.dim)}</span>`}</h2>
<form class="filters" method="post" action="/console/kpi/labels"><input type="hidden" name="_csrf" value="${v.csrf}"><input type="hidden" name="metric" value="${v.metric.key}">${
  v.orgs.length && v.org !== null ? html`<input type="hidden" name="org" value="${v.org}">` : null}
  <div><label for="k-label">Label of ${v.metric.key}${v.orgs.length && v.org === null ? " (every organization's default)" : ""}</label><input id="k-label" name="label" maxlength="${LABEL_MAX}" value="${label}"></div>
  <div><button class="btn" type="submit">Save label</button></div>
</form>
<dl class="totals" id="kpi-totals">
  <div><dt>${v.from} to ${v.to}</dt><dd>${figure(total(v.values))}</dd></div>
  <div><dt>Previous period, ${v.previous.from} to ${v.previous.to}</dt><dd>${figure(total(v.previous.values))}</dd></div>
</dl>
${chart({
  id: "kpi-chart",
  title: `${label} by day, ${v.from} to ${v.to}`,
  labels: v.days,
  series: [
    { name: label, values: v.values },
    { name: `Previous period (${v.previous.from} to ${v.previous.to}), same day of the period`, values: v.previous.values, line: true, tone: "chart-prev" },
  ],
  kind: "bar",
})}`}`}`;
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
        if (metric) {
          dims = await kpiDimensions(sql, org, metric.key);
          // Only a dimension the metric has: anything else is every dimension summed.
          dim = q.dim !== undefined && q.dim !== ALL_DIMS && dims.includes(q.dim) ? q.dim : null;
          const series = new Map((await kpiSeries(sql, { orgId: org, metric: metric.key, dim, from, to })).map((p) => [p.day, p.value]));
          values = days.map((d) => series.get(d) ?? null);
          const before = new Map((await kpiSeries(sql, { orgId: org, metric: metric.key, dim, from: prevDays[0], to: prevTo })).map((p) => [p.day, p.value]));
          prevValues = prevDays.map((d) => before.get(d) ?? null);
        }
        const previous = { from: prevDays[0], to: prevTo, values: prevValues };
        const body = kpiBody({ metrics, metric, dims, dim, from, to, days, values, previous, preset: preset?.id ?? null, csrf: viewer.csrf, org, orgs });
        return consoleHtml(deps, viewer, { title: "KPIs", nav: "kpi", body, styles: ["reports.css"] });
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
