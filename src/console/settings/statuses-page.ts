// The statuses page's bodies: the list with lead counts, a rename form per status, the add form;
// the confirmation a removal goes through (or the reason it cannot be removed).
import { html, type Html } from "../html";
import { orgPicker } from "./org-page";
import { checkField, flashOf, problemsBox, settingsTabs, textField } from "./page";
import type { OrgStatuses } from "./statuses-service";

export function statusesBody(v: { o: OrgStatuses; orgs: { id: number; name: string }[]; csrf: Html; problems: string[] | null; done: string | null; form: { code: string; label: string } | null }): Html {
  const o = v.o;
  const base = `/console/settings/statuses/${o.orgId}`;
  return html`${settingsTabs("statuses", v.orgs.length > 0 ? `?org=${o.orgId}` : "")}
${v.orgs.length > 0 ? orgPicker(v.orgs, o.orgId, "/console/settings/statuses") : ""}
${flashOf(v.done)}${problemsBox(v.problems)}
<p class="muted">The statuses (dispositions) of ${o.name}'s leads, in order${o.stored === null ? " (the default list, until you change it)" : ""}. A status's code is what the API and exports use; its label is what people read.</p>
<div class="table-wrap" tabindex="0" role="region" aria-label="Statuses"><table class="data">
<thead><tr><th scope="col">Code</th><th scope="col">Label</th><th scope="col">Leads</th><th scope="col">Actions</th></tr></thead>
<tbody>${o.statuses.map(
    (s) => html`<tr><td><code>${s.code}</code></td>
<td><form method="post" action="${base}/rename" class="row-actions">${v.csrf}<input type="hidden" name="code" value="${s.code}"><label class="visually-hidden" for="label-${s.code}">Label of ${s.code}</label><input id="label-${s.code}" name="label" value="${s.label}" maxlength="60"><button class="btn" type="submit" aria-label="Rename ${s.code}">Rename</button></form></td>
<td>${s.leads}</td>
<td>${s.code === "NEW" ? html`<span class="muted">every lead starts here</span>` : html`<a class="btn btn-danger" href="${base}/remove?code=${s.code}" aria-label="Remove ${s.code}">Remove</a>`}</td></tr>`,
  )}</tbody></table></div>
${o.strays.length > 0 ? html`<p class="muted">Codes leads still have that are no longer in the list: ${o.strays.map((x) => html`<code>${x.code}</code> (${x.leads}) `)}</p>` : ""}
<section class="card" aria-labelledby="add-h"><h2 id="add-h">Add a status</h2>
<form method="post" action="${base}/add" class="settings-form">${v.csrf}
${textField({ id: "s-code", name: "code", label: "Code", value: v.form?.code ?? "", hint: "A-Z, 0-9 and _, starting with a letter, up to 32 characters (typed in any case)" })}
${textField({ id: "s-label", name: "label", label: "Label", value: v.form?.label ?? "" })}
<button class="btn btn-primary" type="submit">Add status</button>
</form></section>`;
}

export function removeStatusPage(o: OrgStatuses, code: string, refusal: string | null, csrf: Html): Html {
  const base = `/console/settings/statuses/${o.orgId}`;
  return html`${settingsTabs("statuses")}<p><a href="${base}">Back to the statuses</a></p>
<section class="card" aria-labelledby="rm-h"><h2 id="rm-h">Remove the status ${code}?</h2>
${refusal
    ? html`<p class="notice notice-error" role="alert">It cannot be removed: ${refusal}</p>`
    : html`<p>No lead has it. It leaves the list, and leads can no longer be given it.</p>
<form method="post" action="${base}/remove" class="settings-form">${csrf}<input type="hidden" name="code" value="${code}">
${checkField({ id: "rm-confirm", name: "confirm", label: `Yes, remove ${code}`, checked: false })}
<button class="btn btn-danger" type="submit">Remove status</button>
</form>`}
</section>`;
}
