// The DNI pools pages' bodies: the list (with the number-insertion page's exhaustion warning), one
// pool's form with its numbers, and the confirmation page of deactivating a number.
import { html, type Html } from "../html";
import { exhaustionWarning, type PoolView } from "../dni";
import { checkField, flashOf, problemsBox, selectField, textField } from "./page";
import type { PoolForm, PoolRow } from "./pools-service";

const path = (key: string) => `/console/settings/pools/${encodeURIComponent(key)}`;

export const formOf = (p: PoolRow): PoolForm => ({ name: p.name, fallback: p.fallback, placeholder: p.placeholder, ttl_seconds: String(p.ttl_seconds) });

export type AddForm = PoolForm & { key?: string; org?: string };

function addForm(v: { csrf: Html; orgs: { id: number; name: string }[] | null; form: AddForm | null; problems: string[] | null }): Html {
  const f = v.form ?? {};
  return html`<section class="card" aria-labelledby="add-h"><h2 id="add-h">Add a pool</h2>${problemsBox(v.problems)}
<form method="post" action="/console/settings/pools" class="settings-form">${v.csrf}
${textField({ id: "a-key", name: "key", label: "Key", value: f.key ?? "", hint: "Letters, digits, _ and -, up to 64: the script tag names the pool by it, so it must be unused by every organization" })}
${v.orgs ? selectField({ id: "a-org", name: "org", label: "Organization", value: f.org ?? "", options: [["", "House (platform)"], ...v.orgs.map((o) => [String(o.id), `${o.id} · ${o.name}`] as const)] }) : ""}
${textField({ id: "a-name", name: "name", label: "Name", value: f.name ?? "" })}
${textField({ id: "a-fallback", name: "fallback", label: "Fallback number", value: f.fallback ?? "", type: "tel", hint: "10 digits, empty for none" })}
${textField({ id: "a-placeholder", name: "placeholder", label: "Placeholder number", value: f.placeholder ?? "", type: "tel", hint: "10 digits, empty for none" })}
${textField({ id: "a-ttl", name: "ttl_seconds", label: "Hold (seconds)", value: f.ttl_seconds ?? "", type: "number", hint: "30 to 2592000; empty: 1800" })}
<button class="btn btn-primary" type="submit">Add pool</button>
</form></section>`;
}

export function listBody(v: { pools: PoolRow[]; views: Map<string, PoolView>; admin: boolean; done: string | null; add: Parameters<typeof addForm>[0] }): Html {
  return html`${flashOf(v.done)}
<p class="muted">Numbers shown to a site's visitors by the number-insertion script; usage and the script tag are on the <a href="/console/dni">Number insertion</a> page. New pools start with no numbers: add them on the pool's page.</p>
${v.pools.length === 0
    ? html`<p class="empty">No number pools are provisioned.</p>`
    : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Number pools"><table class="data">
<thead><tr><th scope="col">Pool</th><th scope="col">Name</th>${v.admin ? html`<th scope="col">Organization</th>` : ""}<th scope="col" class="num">Active numbers</th><th scope="col">Fallback</th><th scope="col" class="num">Hold (seconds)</th></tr></thead>
<tbody>${v.pools.map(
        (p) => html`<tr><td><a href="${path(p.key)}"><code>${p.key}</code></a></td><td>${p.name || html`<span class="muted">unnamed</span>`}</td>${v.admin ? html`<td>${p.org_id ?? "House"}</td>` : ""}<td class="num">${p.numbers.length}</td><td>${p.fallback || html`<span class="muted">none</span>`}</td><td class="num">${p.ttl_seconds}</td></tr>`,
      )}</tbody></table></div>
${v.pools.map((p) => {
        const view = v.views.get(p.key);
        const warning = view ? exhaustionWarning(view) : null;
        return warning ? html`<h2>${p.name || p.key}</h2>${warning}` : "";
      })}`}
${addForm(v.add)}`;
}

export function editBody(v: { pool: PoolRow; view: PoolView | null; form: PoolForm; number: string; csrf: Html; problems: string[] | null; numberProblems: string[] | null; done: string | null }): Html {
  const p = v.pool;
  return html`<p><a href="/console/settings/pools">Back to the pools</a> · ${p.org_id === null ? "House (platform)" : `Organization ${p.org_id}`}</p>
${flashOf(v.done)}${v.view ? exhaustionWarning(v.view) : ""}
<section class="card" aria-labelledby="pool-h"><h2 id="pool-h">Pool <code>${p.key}</code></h2>${problemsBox(v.problems)}
<form method="post" action="${path(p.key)}" class="settings-form">${v.csrf}
${textField({ id: "p-name", name: "name", label: "Name", value: v.form.name ?? "" })}
${textField({ id: "p-fallback", name: "fallback", label: "Fallback number", value: v.form.fallback ?? "", type: "tel", hint: "Shown when every number is held; 10 digits, empty for none" })}
${textField({ id: "p-placeholder", name: "placeholder", label: "Placeholder number", value: v.form.placeholder ?? "", type: "tel", hint: "The number written in the page that the script replaces; 10 digits, empty for none" })}
${textField({ id: "p-ttl", name: "ttl_seconds", label: "Hold (seconds)", value: v.form.ttl_seconds ?? "", type: "number", hint: "How long a visitor keeps a number after their last visit or heartbeat: 30 to 2592000" })}
<button class="btn btn-primary" type="submit">Save pool</button>
</form></section>
<section class="card" aria-labelledby="numbers-h"><h2 id="numbers-h">Numbers</h2>
${p.numbers.length === 0
    ? html`<p class="empty">No active numbers.</p>`
    : html`<ul class="pool-numbers">${p.numbers.map(
        (n) => html`<li><code>${n}</code> <a class="btn" href="${path(p.key)}/deactivate?number=${n}">Deactivate<span class="visually-hidden"> ${n}</span></a></li>`,
      )}</ul>`}
${problemsBox(v.numberProblems)}
<form method="post" action="${path(p.key)}/numbers" class="settings-form">${v.csrf}
${textField({ id: "p-number", name: "number", label: "Add a number", value: v.number, type: "tel", hint: "10 digits, not active in another pool" })}
<button class="btn" type="submit">Add number</button>
</form></section>`;
}

export function confirmBody(p: PoolRow, number: string, csrf: Html): Html {
  return html`<section class="card" aria-labelledby="confirm-h">
<h2 id="confirm-h">Deactivate ${number} in pool ${p.name || p.key}?</h2>
<p>Visitors are no longer given this number. Its calls and history stay, and adding it again makes it active again.</p>
<form method="post" action="${path(p.key)}/deactivate" class="settings-form">${csrf}
<input type="hidden" name="number" value="${number}">
${checkField({ id: "confirm", name: "confirm", label: "Yes, deactivate the number", checked: false })}
<div class="row-actions"><button class="btn btn-danger" type="submit">Deactivate the number</button><a class="btn" href="${path(p.key)}">Cancel</a></div>
</form>
</section>`;
}
