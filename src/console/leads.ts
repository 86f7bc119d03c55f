// The leads page (/console/leads): search by name, phone or email, filters, keyset pages, and the
// filtered set as CSV (/console/leads.csv), streamed from a cursor.
import { Type as t } from "@sinclair/typebox";
import { formatNumber } from "../dni/rules";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import {
  cursorText,
  dateOrNull,
  filterChoices,
  LEAD_CSV_COLUMNS,
  leadsForExport,
  parseCursor,
  searchLeads,
  textMatch,
  type LeadFilter,
  type LeadListRow,
} from "../leads/search";
import { FALLBACK_ZONE } from "../messages/quiet-hours";
import { csvAnswer } from "./csv";
import { auditedExport, mayExport } from "./exports";
import { consoleHtml, html, notFoundPage, notice, when, type Html } from "./html";
import { pageQuery, pageSpec, type Viewer } from "./route";

export const LEADS_PAGE = 50;

const FilterQuery = t.Object(
  {
    q: t.Optional(t.String({ description: "a name, a phone in any format (last 10 digits) or an email" })),
    campaign: t.Optional(t.String()),
    list: t.Optional(t.String()),
    status: t.Optional(t.String()),
    source: t.Optional(t.String({ description: "the lead's source as intake took it, exactly; `(none)`: leads without one" })),
    from: t.Optional(t.String({ description: "created on or after, YYYY-MM-DD in the organization's zone" })),
    to: t.Optional(t.String({ description: "created on or before, YYYY-MM-DD" })),
    after: t.Optional(t.String({ description: "the page's keyset cursor" })),
  },
  { additionalProperties: true },
);

type Query = Record<string, string | undefined>;

/** The viewer's zone for dates typed in the filter: their organization's (admins: New York). */
async function viewerZone(deps: Deps, viewer: Viewer): Promise<string> {
  if (viewer.actor.orgId === null) return FALLBACK_ZONE;
  const [org] = await deps.sql<{ timezone: string }[]>`select timezone from orgs where id = ${viewer.actor.orgId}`;
  return org?.timezone ?? FALLBACK_ZONE;
}

const opt = (s: string | undefined) => (s === undefined || s.trim() === "" ? null : s.trim().slice(0, 100));

/** The source filter's value for leads that came without a source (an empty value is no filter). */
export const NO_SOURCE = "(none)";

function sourceOf(v: string | undefined): string | null {
  if (v === undefined || v === "") return null;
  if (v === NO_SOURCE) return "";
  // NUL is no character PostgreSQL's text holds: no lead has it, so such a filter finds none.
  return v.replaceAll("\u0000", "").slice(0, 200);
}

export function filterOf(q: Query, zone: string): LeadFilter {
  const list = opt(q.list);
  return {
    q: (q.q ?? "").slice(0, 200),
    campaign: opt(q.campaign),
    list: list !== null && /^\d{1,15}$/.test(list) ? Number(list) : null,
    status: opt(q.status),
    source: sourceOf(q.source),
    from: dateOrNull(opt(q.from)),
    to: dateOrNull(opt(q.to)),
    zone,
  };
}

/** The filter as a query string (the pager's and the export's links keep it). */
function filterQuery(f: LeadFilter): URLSearchParams {
  const p = new URLSearchParams();
  if (f.q) p.set("q", f.q);
  if (f.campaign) p.set("campaign", f.campaign);
  if (f.list !== null) p.set("list", String(f.list));
  if (f.status) p.set("status", f.status);
  if (f.source != null) p.set("source", f.source === "" ? NO_SOURCE : f.source);
  if (f.from) p.set("from", f.from);
  if (f.to) p.set("to", f.to);
  return p;
}

interface LeadsPage {
  filter: LeadFilter;
  rows: LeadListRow[];
  next: string | null;
  paged: boolean;
  choices: Awaited<ReturnType<typeof filterChoices>>;
  /** The viewer may export (src/console/exports.ts): the export link is shown. */
  canExport: boolean;
}

/**
 * Where the lead came from, as a manager asks it: the source intake recorded (the sender's own word:
 * a form, a vendor, "console"), and under it the first touch DNI attributed (source / medium of the
 * visit before the call or form), when there is one. The filter is on the first.
 */
function sourceCell(r: LeadListRow): Html {
  const touch = [r.touch_source, r.touch_medium].filter((x) => x !== "").join(" / ");
  return html`${r.source === "" ? html`<span class="muted">(no source)</span>` : r.source}${touch === "" ? null : html`<br><span class="muted">first touch: ${touch}</span>`}`;
}

export function leadsBody(p: LeadsPage): Html {
  const f = p.filter;
  const match = textMatch(f.q);
  const exportHref = `/console/leads.csv?${filterQuery(f)}`;
  const nextHref =
    p.next === null
      ? null
      : `/console/leads?${(() => {
          const q = filterQuery(f);
          q.set("after", p.next);
          return q;
        })()}`;
  return html`<p><a href="/console/new-lead">New lead</a> (a walk-in or phone caller)</p>
    <form method="get" action="/console/leads" class="filters" role="search">
      <div><label for="q">Name, phone or email</label><input id="q" name="q" type="search" value="${f.q}" autocomplete="off"></div>
      <div><label for="campaign">Campaign</label><select id="campaign" name="campaign"><option value="">Any</option>${p.choices.campaigns.map(
        (c) => html`<option value="${c.id}"${c.id === f.campaign ? html` selected` : null}>${c.name ? `${c.name} (${c.id})` : c.id}</option>`,
      )}</select></div>
      <div><label for="list">List</label><select id="list" name="list"><option value="">Any</option>${p.choices.lists.map(
        (l) => html`<option value="${l.id}"${l.id === f.list ? html` selected` : null}>${l.name ? `${l.name} (${l.id})` : String(l.id)}</option>`,
      )}</select></div>
      <div><label for="source">Source</label><select id="source" name="source"><option value="">Any</option>${p.choices.sources.map(
        (s) => html`<option value="${s === "" ? NO_SOURCE : s}"${s === f.source ? html` selected` : null}>${s === "" ? "(no source)" : s}</option>`,
      )}</select></div>
      <div><label for="status">Status</label><input id="status" name="status" type="text" value="${f.status ?? ""}" size="10"></div>
      <div><label for="from">Created from</label><input id="from" name="from" type="date" value="${f.from ?? ""}"></div>
      <div><label for="to">Created to</label><input id="to" name="to" type="date" value="${f.to ?? ""}"></div>
      <div><button type="submit" class="btn btn-primary">Search</button></div>
    </form>
    ${match.kind === "short_phone" ? notice("Type at least 10 digits to find a phone number.", "error") : null}
    ${p.canExport ? html`<p class="export"><a class="btn" href="${exportHref}" download>Export these leads as CSV</a></p>` : null}
    ${p.rows.length === 0
      ? html`<p class="empty">No lead matches.</p>`
      : html`<div class="table-wrap"><table class="data leads-table">
          <caption class="muted">Newest first${p.paged ? ", continued" : ""}</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Phone</th><th scope="col">Email</th><th scope="col">Status</th><th scope="col">Source</th><th scope="col">Campaign</th><th scope="col">List</th><th scope="col">Created</th></tr></thead>
          <tbody>${p.rows.map(
            (r) => html`<tr><td><a href="/console/leads/${r.id}">${r.name || html`<span class="muted">(no name)</span>`}</a></td>
              <td>${formatNumber(r.phone)}</td><td>${r.email}</td><td>${r.status}</td><td>${sourceCell(r)}</td><td>${r.campaign_id}</td><td>${r.list_id}</td>
              <td>${when(r.created_at, r.timezone)}</td></tr>`,
          )}</tbody></table></div>`}
    <nav class="pager" aria-label="Pages">
      ${p.paged ? html`<a href="/console/leads?${filterQuery(f)}">First page</a>` : null}
      ${nextHref ? html`<a href="${nextHref}" rel="next">Next page</a>` : null}
    </nav>`;
}

export function leadsRoutes(deps: Deps): Route[] {
  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleLeads",
        summary: "Leads: search, filters, keyset pages",
        method: "GET",
        path: "/console/leads",
        query: pageQuery(FilterQuery),
      }),
      async ({ query: q }, { grant: viewer }) => {
        const filter = filterOf(q, await viewerZone(deps, viewer));
        const cursor = parseCursor(q.after);
        const [found, choices, canExport] = await Promise.all([
          searchLeads(deps.sql, viewer.actor.orgId, filter, cursor, LEADS_PAGE),
          filterChoices(deps.sql, viewer.actor.orgId),
          mayExport(deps.sql, viewer),
        ]);
        return consoleHtml(deps, viewer, {
          title: "Leads",
          nav: "leads",
          styles: ["lead.css"],
          body: leadsBody({ filter, rows: found.rows, next: found.next && cursorText(found.next), paged: cursor !== null, choices, canExport }),
        });
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        answers: csvAnswer("The leads as CSV (RFC 4180), formula-like cells prefixed with '"),
        id: "consoleLeadsCsv",
        summary: "The filtered leads as CSV, streamed",
        description:
          "Managers and admins; agents where their organization grants it (`agents_export`), else the 404 page. Audited as export.leads (the filter, the rows sent).",
        method: "GET",
        path: "/console/leads.csv",
        query: pageQuery(FilterQuery),
      }),
      async ({ query: q }, { grant: viewer }) => {
        if (!(await mayExport(deps.sql, viewer))) return notFoundPage(deps, viewer);
        const filter = filterOf(q, await viewerZone(deps, viewer));
        const day = new Date(deps.clock.now()).toISOString().slice(0, 10);
        return auditedExport(deps.sql, viewer, {
          what: "leads",
          filter: { q: filter.q, campaign: filter.campaign, list: filter.list, status: filter.status, source: filter.source, from: filter.from, to: filter.to },
          orgId: viewer.actor.orgId,
          filename: `leads-${day}.csv`,
          header: LEAD_CSV_COLUMNS,
          rows: leadsForExport(deps.sql, viewer.actor.orgId, filter),
          cells: (r) => LEAD_CSV_COLUMNS.map((c) => r[c]),
        });
      },
    ),
  ];
}
