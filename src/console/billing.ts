// The Billing page (managers, admins): each organization's credits, status and costs, and the
// credit ledger newest first in keyset pages.
import { Type as t } from "@sinclair/typebox";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { billingOf, LEDGER_PAGE, ledgerPage, type BillingRow, type LedgerRow } from "../messages/ledger";
import { consoleHtml, html, when, type Html } from "./html";
import { idParam, orgChoices, orgOf, orgSelect, queryOf, zoneOf, type OrgChoice } from "./period";
import { pageQuery, pageSpec } from "./route";

const BillingQuery = t.Object({
  org: t.Optional(t.String({ description: "admins: one organization" })),
  before: t.Optional(t.String({ description: "the last ledger entry id of the previous page" })),
});

export interface BillingView {
  billing: BillingRow[];
  ledger: LedgerRow[];
  next: number | null;
  paged: boolean;
  org: number | null;
  orgs: OrgChoice[];
  zones: Map<number, string>;
}

const money = (v: number) => v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 4 });

function billingCard(b: BillingRow, showOrg: boolean): Html {
  const ok = b.status === "active" && b.subscription === "active";
  return html`<div class="card">
  ${showOrg ? html`<h2>${b.org_name}</h2>` : null}
  <ul class="pool-figures">
    <li><strong>${money(b.credits)}</strong> credits</li>
    <li><strong>${money(b.sms_cost)}</strong> per SMS</li>
    <li><strong>${money(b.email_cost)}</strong> per email</li>
  </ul>
  <p>Billing <span class="badge ${b.status === "active" ? "badge-ok" : "badge-bad"}">${b.status}</span>
    subscription <span class="badge ${b.subscription === "active" ? "badge-ok" : "badge-bad"}">${b.subscription}</span>
    ${ok ? null : html`<span class="muted">— SMS and email sends are refused until both are active.</span>`}</p>
</div>`;
}

export function billingBody(v: BillingView): Html {
  const showOrg = v.orgs.length > 0;
  const org = showOrg ? v.org : null;
  return html`${showOrg ? html`<form class="filters" method="get" action="/console/billing">${orgSelect(v.orgs, v.org)}<div><button class="btn" type="submit">Show</button></div></form>` : null}
${v.billing.length === 0
  ? html`<p class="empty">Billing is not configured${showOrg && v.org === null ? " for any organization" : ""}: SMS and email sends are refused.</p>`
  : v.billing.map((b) => billingCard(b, showOrg))}
<h2>Credit ledger</h2>
${v.ledger.length === 0
  ? html`<p class="empty">No ledger entries${v.paged ? " on this page" : ""}.</p>`
  : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Credit ledger"><table class="data">
  <thead><tr><th scope="col">Time</th>${showOrg ? html`<th scope="col">Org</th>` : null}<th scope="col">Entry</th><th scope="col">Message</th>
    <th scope="col" class="num">Amount</th><th scope="col" class="num">Balance</th></tr></thead>
  <tbody>${v.ledger.map(
    (e) => html`<tr><td class="nowrap">${when(e.created_at, v.zones.get(e.org_id) ?? "UTC")}</td>${showOrg ? html`<td>${e.org_id}</td>` : null}
      <td>${e.kind}</td>
      <td>${e.message_id === null ? "–" : e.lead_id === null ? `${e.channel ?? ""} #${e.message_id}` : html`<a href="/console/leads/${e.lead_id}">${e.channel ?? "message"} #${e.message_id}</a>`}</td>
      <td class="num">${money(e.amount)}</td><td class="num">${money(e.balance)}</td></tr>`,
  )}</tbody>
</table></div>`}
<nav class="pager" aria-label="Pages of the ledger">
  ${v.paged ? html`<a href="/console/billing${queryOf({ org })}">Newest entries</a>` : null}
  ${v.next === null ? null : html`<a href="/console/billing${queryOf({ org, before: v.next })}" rel="next">Older entries</a>`}
</nav>`;
}

export function billingRoutes(deps: Deps): Route[] {
  const { sql } = deps;
  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleBilling",
        summary: "Credits and the credit ledger",
        method: "GET",
        path: "/console/billing",
        roles: ["admin", "manager"],
        query: pageQuery(BillingQuery),
      }),
      async ({ query }, { grant: viewer }) => {
        const org = orgOf(viewer, query);
        const before = idParam(query.before);
        const [billing, rows, orgs] = await Promise.all([billingOf(sql, org), ledgerPage(sql, org, before, LEDGER_PAGE), orgChoices(sql, viewer)]);
        const ledger = rows.slice(0, LEDGER_PAGE);
        const next = rows.length > LEDGER_PAGE ? ledger[ledger.length - 1].id : null;
        const zones = new Map<number, string>();
        for (const id of new Set(ledger.map((e) => e.org_id))) zones.set(id, await zoneOf(sql, id));
        const body = billingBody({ billing, ledger, next, paged: before !== null, org, orgs, zones });
        return consoleHtml(deps, viewer, { title: "Billing", nav: "billing", body, styles: ["reports.css"] });
      },
    ),
  ];
}
