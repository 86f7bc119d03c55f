// The Number insertion page (managers, admins): per pool, numbers held and free now, peak use and
// fallbacks over the last 30 days as a chart, an exhaustion warning with the pool size that would
// have sufficed (src/dni/usage.ts), the script tag to paste; and the attribution report
// (src/dni/report.ts) over a date range.
import { Type as t } from "@sinclair/typebox";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { dniReport, type ReportRow } from "../dni/report";
import { dniScriptTag } from "../dni/script";
import { poolsNow, poolsUsage, USAGE_DAYS, type PoolNow, type PoolUsage } from "../dni/usage";
import { chart } from "./chart";
import { consoleHtml, html, when, type Html } from "./html";
import { dayParam, instantsOf, orgChoices, orgOf, orgSelect, textParam, today, zoneOf, type OrgChoice } from "./period";
import { pageQuery, pageSpec } from "./route";

const DniQuery = t.Object({
  from: t.Optional(t.String({ description: "the report's first day, YYYY-MM-DD" })),
  to: t.Optional(t.String({ description: "the report's last day, inclusive" })),
  pool: t.Optional(t.String({ description: "the report's pool" })),
  org: t.Optional(t.String({ description: "admins: one organization" })),
});

export interface PoolView {
  pool: PoolNow;
  usage: PoolUsage;
  zone: string;
  tag: string;
}

export interface DniView {
  pools: PoolView[];
  report: ReportRow[];
  from: string;
  to: string;
  reportPool: string | null;
  org: number | null;
  orgs: OrgChoice[];
}

/**
 * The exhaustion warning of a pool (src/dni/usage.ts sufficient), or null: shown here and on the
 * pool's settings page (src/console/settings/pools.ts).
 */
export function exhaustionWarning(v: PoolView): Html | null {
  const { pool, usage } = v;
  const s = usage.sufficient;
  return s === null
    ? null
    : html`<div class="card" role="note"><p><span class="badge badge-warn">Pool exhausted</span>
  In the hour from ${when(s.hour, v.zone)}, ${s.refused} ${s.refused === 1 ? "visitor" : "visitors"} got the fallback number
  beside ${s.peak} ${s.peak === 1 ? "number" : "numbers"} held at the peak.
  <strong>A pool of ${s.size} numbers would have sufficed</strong> (it has ${pool.numbers} now${
    pool.numbers >= s.size ? ", enough for that hour" : `: ${s.size - pool.numbers} more`}).</p></div>`;
}

function poolSection(v: PoolView, i: number): Html {
  const { pool, usage } = v;
  const warning = exhaustionWarning(v);
  return html`<section class="card" aria-labelledby="pool-${i}">
  <h2 id="pool-${i}">${pool.name || pool.key} <span class="muted">(${pool.key})</span></h2>
  <ul class="pool-figures">
    <li><strong>${pool.numbers}</strong> numbers</li>
    <li><strong>${pool.held}</strong> held now</li>
    <li><strong>${pool.free}</strong> free now</li>
    <li><strong>${usage.served}</strong> fallbacks in ${USAGE_DAYS} days</li>
  </ul>
  ${warning}
  ${chart({
    id: `pool-chart-${i}`,
    title: `${pool.name || pool.key}: peak numbers held and fallbacks served per day, last ${USAGE_DAYS} days`,
    labels: usage.days.map((d) => d.day),
    series: [
      { name: "Peak held at once", values: usage.days.map((d) => d.peak), total: false },
      { name: "Fallbacks served", values: usage.days.map((d) => d.served) },
    ],
    kind: "bar",
  })}
  <h3 id="tag-${i}">Script tag to paste</h3>
  <p class="muted">Put it on every page of the site, with the placeholder number written where the tracked number should appear.</p>
  <code class="snippet" id="tag-code-${i}">${v.tag}</code>
  <p><button type="button" class="btn" data-copy="tag-code-${i}" hidden>Copy the tag</button> <span id="tag-code-${i}-status" role="status"></span></p>
</section>`;
}

export function dniBody(v: DniView): Html {
  const showPool = v.pools.length > 1 || v.orgs.length > 0;
  return html`${v.orgs.length > 0
  ? html`<form class="filters" method="get" action="/console/dni">${orgSelect(v.orgs, v.org)}<div><button class="btn" type="submit">Show</button></div></form>`
  : null}
${v.pools.length === 0 ? html`<p class="empty">No number pools are provisioned.</p>` : v.pools.map(poolSection)}
<section aria-labelledby="report-h">
  <h2 id="report-h">Attribution report</h2>
  <p class="muted">Visitors (by their last visit), page views, forms and calls, by the first touch's source, medium and campaign.</p>
  <form class="filters" method="get" action="/console/dni">
    <div><label for="r-from">From</label><input id="r-from" name="from" type="date" value="${v.from}"></div>
    <div><label for="r-to">To</label><input id="r-to" name="to" type="date" value="${v.to}"></div>
    <div><label for="r-pool">Pool</label><select id="r-pool" name="pool"><option value="">Every pool</option>${v.pools.map(
      (p) => html`<option value="${p.pool.key}"${p.pool.key === v.reportPool ? html` selected` : null}>${p.pool.name || p.pool.key}</option>`,
    )}</select></div>
    ${v.org !== null && v.orgs.length > 0 ? html`<input type="hidden" name="org" value="${v.org}">` : null}
    <div><button class="btn btn-primary" type="submit">Show report</button></div>
  </form>
  ${v.report.length === 0
    ? html`<p class="empty">No visitors, page views, forms or calls in this range.</p>`
    : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Attribution report"><table class="data">
    <thead><tr>${showPool ? html`<th scope="col">Pool</th>` : null}<th scope="col">Source</th><th scope="col">Medium</th><th scope="col">Campaign</th>
      <th scope="col" class="num">Visitors</th><th scope="col" class="num">Page views</th><th scope="col" class="num">Forms</th><th scope="col" class="num">Calls</th></tr></thead>
    <tbody>${v.report.map(
      (r) => html`<tr>${showPool ? html`<td>${r.pool}</td>` : null}<td>${r.utm_source || html`<span class="muted">(direct)</span>`}</td>
        <td>${r.utm_medium || "–"}</td><td>${r.utm_campaign || "–"}</td><td class="num">${r.visitors}</td><td class="num">${r.pageviews}</td>
        <td class="num">${r.forms}</td><td class="num">${r.calls}</td></tr>`,
    )}</tbody>
  </table></div>`}
</section>`;
}

/** Every pool of the organization (null: every pool) with its usage, each pool's days in its own organization's zone. */
export async function poolViews(deps: Deps, org: number | null, zone: string, now: number): Promise<PoolView[]> {
  const { sql } = deps;
  const pools = await poolsNow(sql, org, new Date(now));
  // An admin may see several organizations' pools.
  const zones = new Map<number | null, string>([[org, zone]]);
  for (const p of pools) if (!zones.has(p.org_id)) zones.set(p.org_id, await zoneOf(sql, p.org_id));
  const usage = await poolsUsage(
    sql,
    pools.map((p) => ({ key: p.key, zone: zones.get(p.org_id)! })),
    now,
  );
  return pools.map((pool) => ({ pool, zone: zones.get(pool.org_id)!, usage: usage.get(pool.key)!, tag: dniScriptTag(deps.config.baseUrl, pool.key) }));
}

export function dniRoutes(deps: Deps): Route[] {
  const { sql } = deps;
  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleDni",
        summary: "Number insertion: pools and the attribution report",
        method: "GET",
        path: "/console/dni",
        roles: ["admin", "manager"],
        query: pageQuery(DniQuery),
      }),
      async ({ query: q }, { grant: viewer }) => {
        const org = orgOf(viewer, q);
        const now = deps.clock.now();
        const zone = await zoneOf(sql, org);
        const from = dayParam(q.from) ?? today(now, zone, USAGE_DAYS - 1);
        const to = dayParam(q.to) ?? today(now, zone);
        const pools = await poolViews(deps, org, zone, now);
        // The report's pool must be one of the viewer's: another organization's key shows nothing.
        const asked = textParam(q.pool, 48);
        const reportPool = asked !== null && pools.some((p) => p.pool.key === asked) ? asked : null;
        const range = instantsOf(from, to, zone);
        const [report, orgs] = await Promise.all([
          dniReport(sql, { pool: reportPool, since: range.from, until: range.to, orgId: org }),
          orgChoices(sql, viewer),
        ]);
        const body = dniBody({ pools, report, from, to, reportPool, org, orgs });
        return consoleHtml(deps, viewer, { title: "Number insertion", nav: "dni", body, styles: ["reports.css"], scripts: ["copy-tag.js"] });
      },
    ),
  ];
}
