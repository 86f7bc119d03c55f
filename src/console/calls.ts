// The Calls page: the call log with DNI attribution, filters, keyset pages, and its CSV export.
// Agents see their own calls (reported with their user id as `agent`), as they see their own
// dials; managers their organization's; admins every organization's, or one they pick.
import { Type as t } from "@sinclair/typebox";
import { agentChoices, allCalls, callTotals, CALLS_PAGE, listCalls, parseCursor, type CallFilter, type CallRow, type CallTotals, type Choice } from "../calls/log";
import { formatNumber } from "../dni/rules";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { poolsNow, type PoolNow } from "../dni/usage";
import { csvAnswer } from "./csv";
import { auditedExport, mayExport } from "./exports";
import { consoleHtml, html, notFoundPage, when, type Html } from "./html";
import { dayParam, instantsOf, orgChoices, orgOf, orgSelect, queryOf, textParam, zoneOf, type OrgChoice } from "./period";
import { pageQuery, pageSpec, type Viewer } from "./route";

const CallQuery = t.Object({
  from: t.Optional(t.String({ description: "first day, YYYY-MM-DD, in the organization's time zone" })),
  to: t.Optional(t.String({ description: "last day, YYYY-MM-DD, inclusive" })),
  agent: t.Optional(t.String()),
  pool: t.Optional(t.String()),
  source: t.Optional(t.String({ description: "utm_source of the call's attribution" })),
  status: t.Optional(t.String()),
  org: t.Optional(t.String({ description: "admins: one organization" })),
  after: t.Optional(t.String({ description: "where the previous page ended: its last call's time (epoch µs) and id, `µs.id`" })),
});

export interface CallParams {
  from: string | null;
  to: string | null;
  agent: string | null;
  pool: string | null;
  source: string | null;
  status: string | null;
  org: number | null;
}

export function callParams(viewer: Viewer, q: Record<string, string | undefined>): CallParams {
  return {
    from: dayParam(q.from),
    to: dayParam(q.to),
    // An agent's own calls only: an agent filter would say nothing more.
    agent: viewer.actor.agent === null ? textParam(q.agent, 100) : null,
    pool: textParam(q.pool, 48),
    source: textParam(q.source),
    status: textParam(q.status, 100),
    org: orgOf(viewer, q),
  };
}

const filterOf = (p: CallParams, zone: string): CallFilter => ({
  ...instantsOf(p.from, p.to, zone),
  agent: p.agent,
  pool: p.pool,
  source: p.source,
  status: p.status,
  org: p.org,
});

export const duration = (secs: number): string => `${Math.floor(secs / 60)}:${String(secs % 60).padStart(2, "0")}`;

/** A talk time as a clock reads it: "m:ss" under an hour, "h:mm:ss" from an hour on. */
export function talkTime(secs: number): string {
  if (secs < 3600) return duration(secs);
  const h = Math.floor(secs / 3600);
  return `${h.toLocaleString("en-US")}:${duration(secs % 3600).padStart(5, "0")}`;
}

const count = (n: number) => n.toLocaleString("en-US");

/** The filters as a link's query; the organization only where the viewer picks it (admins). */
const paramsQuery = (p: CallParams, picks: boolean) => ({
  from: p.from,
  to: p.to,
  agent: p.agent,
  pool: p.pool,
  source: p.source,
  status: p.status,
  org: picks ? p.org : null,
});

export interface CallsView {
  params: CallParams;
  rows: CallRow[];
  /** The cursor to continue after, when there is an older page. */
  next: string | null;
  paged: boolean;
  agents: Choice[] | null;
  pools: PoolNow[];
  orgs: OrgChoice[];
  /** The viewer may export (src/console/exports.ts): the export link is shown. */
  canExport: boolean;
  /** Every call of the filters, not only this page's. */
  totals: CallTotals;
}

const dash = (v: string | null | undefined) => (v ? v : "–");

/** A landing page as a person reads it: host and path, without scheme or query (the whole address in its title). */
export function landingLabel(url: string): string {
  const short = url.replace(/^https?:\/\//i, "").replace(/[?#].*$/, "");
  return short.length > 60 ? `${short.slice(0, 59)}…` : short;
}

function row(r: CallRow, showOrg: boolean): Html {
  const attribution = [r.utm_source, r.utm_medium, r.utm_campaign].filter((v) => v).join(" / ");
  return html`<tr>
    <td class="nowrap">${when(r.occurred_at, r.timezone)}</td>
    ${showOrg ? html`<td>${r.org_id ?? "–"}</td>` : null}
    <td>${
      r.lead_id !== null
        ? html`<a href="/console/leads/${r.lead_id}">${r.lead_name || `Lead ${r.lead_id}`}</a>`
        : r.phone
          ? html`<span class="muted">none</span> <a href="/console/new-lead?phone=${r.phone}">Create lead</a>`
          : html`<span class="muted">none</span>`
    }</td>
    <td class="nowrap">${r.phone ? formatNumber(r.phone) : "–"}</td>
    <td class="nowrap">${r.to_number ? formatNumber(r.to_number) : "–"}</td>
    <td>${r.agent_name || dash(r.agent)}</td>
    <td class="num">${duration(r.secs)}</td>
    <td>${dash(r.status)}</td>
    <td>${dash(r.dni_pool)}</td>
    <td>${attribution || "–"}</td>
    <td class="cell-clip">${r.landing ? html`<span title="${r.landing}">${landingLabel(r.landing)}</span>` : "–"}</td>
  </tr>`;
}

/** The filtered set's totals, above its first page. */
export function totalsLine(t: CallTotals): Html {
  return html`<section aria-labelledby="calls-totals"><h2 id="calls-totals" class="visually-hidden">Totals of these calls</h2>
<dl class="totals">
  <div><dt>Calls</dt><dd>${count(t.answered + t.missed)}</dd></div>
  <div><dt>Answered</dt><dd>${count(t.answered)}</dd></div>
  <div><dt>Missed</dt><dd>${count(t.missed)}</dd></div>
  <div><dt>Talk time</dt><dd>${talkTime(t.talkSecs)}</dd></div>
</dl></section>`;
}

export function callsBody(v: CallsView): Html {
  const p = v.params;
  const showOrg = v.orgs.length > 0;
  const q = paramsQuery(p, showOrg);
  return html`<form class="filters" method="get" action="/console/calls">
  <div><label for="f-from">From</label><input id="f-from" name="from" type="date" value="${p.from ?? ""}"></div>
  <div><label for="f-to">To</label><input id="f-to" name="to" type="date" value="${p.to ?? ""}"></div>
  ${v.agents === null ? null : html`<div><label for="f-agent">Agent</label><select id="f-agent" name="agent"><option value="">Every agent</option>${v.agents.map(
    (a) => html`<option value="${a.value}"${a.value === p.agent ? html` selected` : null}>${a.label}</option>`,
  )}</select></div>`}
  <div><label for="f-pool">Number pool</label><select id="f-pool" name="pool"><option value="">Any pool</option>${v.pools.map(
    (x) => html`<option value="${x.key}"${x.key === p.pool ? html` selected` : null}>${x.name || x.key}</option>`,
  )}</select></div>
  <div><label for="f-source">Source</label><input id="f-source" name="source" value="${p.source ?? ""}" placeholder="e.g. google"></div>
  <div><label for="f-status">Status</label><input id="f-status" name="status" value="${p.status ?? ""}" placeholder="e.g. ANSWERED"></div>
  ${orgSelect(v.orgs, p.org)}
  <div><button class="btn btn-primary" type="submit">Show calls</button></div>
</form>
${totalsLine(v.totals)}
${v.canExport ? html`<p><a class="btn" href="/console/calls.csv${queryOf(q)}" download>Export these calls as CSV</a></p>` : null}
${v.rows.length === 0
  ? html`<p class="empty">No calls${v.paged ? " on this page" : " match these filters"}.</p>`
  : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Calls"><table class="data">
  <caption class="muted">Newest first${v.paged ? ", continued" : ""}.</caption>
  <thead><tr><th scope="col">Time</th>${showOrg ? html`<th scope="col">Org</th>` : null}<th scope="col">Lead</th><th scope="col">Caller</th><th scope="col">Number called</th>
    <th scope="col">Agent</th><th scope="col" class="num">Duration</th><th scope="col">Status</th><th scope="col">Pool</th>
    <th scope="col">Source / medium / campaign</th><th scope="col">Landing page</th></tr></thead>
  <tbody>${v.rows.map((r) => row(r, showOrg))}</tbody>
</table></div>`}
<nav class="pager" aria-label="Pages of calls">
  ${v.paged ? html`<a href="/console/calls${queryOf(q)}">Newest calls</a>` : null}
  ${v.next === null ? null : html`<a href="/console/calls${queryOf({ ...q, after: v.next })}" rel="next">Older calls</a>`}
</nav>`;
}

export const CSV_HEADER = [
  "call_id",
  "occurred_at",
  "org_id",
  "lead_id",
  "lead_name",
  "phone",
  "to_number",
  "agent",
  "agent_name",
  "secs",
  "status",
  "dni_pool",
  "utm_source",
  "utm_medium",
  "utm_campaign",
  "landing",
  "gclid",
];

const csvCells = (r: CallRow): unknown[] => [
  r.id,
  r.occurred_at,
  r.org_id,
  r.lead_id,
  r.lead_name,
  r.phone,
  r.to_number,
  r.agent,
  r.agent_name,
  r.secs,
  r.status,
  r.dni_pool,
  r.utm_source,
  r.utm_medium,
  r.utm_campaign,
  r.landing,
  r.gclid,
];

export function callRoutes(deps: Deps): Route[] {
  const { sql } = deps;
  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleCalls",
        summary: "The call log",
        description: "Calls newest first with their DNI attribution; agents see their own calls.",
        method: "GET",
        path: "/console/calls",
        roles: ["admin", "manager", "agent"],
        query: pageQuery(CallQuery),
      }),
      async ({ query }, { grant: viewer }) => {
        const params = callParams(viewer, query);
        const after = parseCursor(query.after);
        const zone = await zoneOf(sql, params.org);
        const filter = filterOf(params, zone);
        const [rows, totals, agents, pools, orgs, canExport] = await Promise.all([
          listCalls(sql, viewer.actor, filter, after, CALLS_PAGE),
          callTotals(sql, viewer.actor, filter, { from: params.from, to: params.to }),
          viewer.actor.agent === null ? agentChoices(sql, params.org) : Promise.resolve(null),
          poolsNow(sql, params.org, new Date(deps.clock.now())),
          orgChoices(sql, viewer),
          mayExport(sql, viewer),
        ]);
        const page = rows.slice(0, CALLS_PAGE);
        const next = rows.length > CALLS_PAGE ? page[page.length - 1].cursor : null;
        const body = callsBody({ params, rows: page, next, paged: after !== null, agents, pools, orgs, canExport, totals });
        return consoleHtml(deps, viewer, { title: "Calls", nav: "calls", body, styles: ["reports.css"] });
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        answers: csvAnswer("The filtered calls as CSV, streamed"),
        id: "consoleCallsCsv",
        summary: "The call log as CSV",
        description:
          "Every call of the filters, streamed; cells a spreadsheet would read as formulas are prefixed with a quote. Managers and admins; " +
          "agents (their own calls) where their organization grants it (`agents_export`), else the 404 page. Audited as export.calls (the filter, the rows sent).",
        method: "GET",
        path: "/console/calls.csv",
        roles: ["admin", "manager", "agent"],
        query: pageQuery(CallQuery),
      }),
      async ({ query }, { grant: viewer }) => {
        if (!(await mayExport(sql, viewer))) return notFoundPage(deps, viewer);
        const params = callParams(viewer, query);
        const zone = await zoneOf(sql, params.org);
        return auditedExport(sql, viewer, {
          what: "calls",
          filter: { ...params },
          orgId: params.org,
          filename: "calls.csv",
          header: CSV_HEADER,
          rows: allCalls(sql, viewer.actor, filterOf(params, zone)),
          cells: csvCells,
        });
      },
    ),
  ];
}
