// The KPI page (managers, admins): one metric by day as a chart, with its dimension filter and a
// date range. Points are the organization's own (an admin picks one, or sees every organization's
// and the house's points summed).
import { Type as t } from "@sinclair/typebox";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { kpiDimensions, kpiMetrics, kpiSeries, type KpiMetric } from "../kpi/queries";
import { chart, daysBetween } from "./chart";
import { consoleHtml, html, type Html } from "./html";
import { dayParam, orgChoices, orgOf, orgSelect, textParam, today, zoneOf, type OrgChoice } from "./period";
import { pageQuery, pageSpec } from "./route";

const KpiQuery = t.Object({
  metric: t.Optional(t.String()),
  dim: t.Optional(t.String({ description: "one dimension; `*` or absent: every dimension summed; empty: points without one" })),
  from: t.Optional(t.String({ description: "first day, YYYY-MM-DD" })),
  to: t.Optional(t.String({ description: "last day, inclusive" })),
  org: t.Optional(t.String({ description: "admins: one organization" })),
});

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
  org: number | null;
  orgs: OrgChoice[];
}

const dimLabel = (d: string) => (d === "" ? "(no dimension)" : d);

export function kpiBody(v: KpiView): Html {
  const label = v.metric ? v.metric.label : "";
  return html`${v.metrics.length === 0
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
${v.metric === null
  ? null
  : html`<h2>${label}${v.dim === null ? null : html` <span class="muted">· ${dimLabel(v.dim)}</span>`}</h2>
${chart({ id: "kpi-chart", title: `${label} by day, ${v.from} to ${v.to}`, labels: v.days, series: [{ name: label, values: v.values }], kind: "bar" })}`}`}`;
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
        let to = dayParam(q.to) ?? today(now, zone);
        let from = dayParam(q.from) ?? today(now, zone, 29);
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
        if (metric) {
          dims = await kpiDimensions(sql, org, metric.key);
          // Only a dimension the metric has: anything else is every dimension summed.
          dim = q.dim !== undefined && q.dim !== ALL_DIMS && dims.includes(q.dim) ? q.dim : null;
          const series = new Map((await kpiSeries(sql, { orgId: org, metric: metric.key, dim, from, to })).map((p) => [p.day, p.value]));
          values = days.map((d) => series.get(d) ?? null);
        }
        const body = kpiBody({ metrics, metric, dims, dim, from, to, days, values, org, orgs });
        return consoleHtml(deps, viewer, { title: "KPIs", nav: "kpi", body, styles: ["c2.css"] });
      },
    ),
  ];
}
