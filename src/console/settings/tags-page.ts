// The tags page's bodies: the organization's tags with how many leads carry each and a rename form
// per tag (a name the organization already has merges the two); the confirmation a delete goes through.
import type { OrgTag } from "../../leads/tags";
import { html, type Html } from "../html";
import { orgPicker } from "./org-page";
import { checkField, flashOf, problemsBox, settingsTabs } from "./page";

export interface TagsView {
  orgId: number;
  name: string;
  tags: OrgTag[];
}

const leadsOf = (n: number) => `${n} ${n === 1 ? "lead" : "leads"}`;

export function tagsBody(v: { o: TagsView; orgs: { id: number; name: string }[]; csrf: Html; problems: string[] | null; done: string | null; typed: { key: string; to: string } | null }): Html {
  const o = v.o;
  const base = `/console/settings/tags/${o.orgId}`;
  return html`${settingsTabs("tags", v.orgs.length > 0 ? `?org=${o.orgId}` : "")}
${v.orgs.length > 0 ? orgPicker(v.orgs, o.orgId, "/console/settings/tags") : ""}
${flashOf(v.done)}${problemsBox(v.problems)}
<p class="muted">The tags on ${o.name}'s leads. Renaming a tag changes it on every lead that carries it; renaming it to a tag the organization already has merges the two (a lead carrying both keeps one). Tags are compared regardless of case.</p>
${o.tags.length === 0
    ? html`<p class="empty">No lead carries a tag yet.</p>`
    : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Tags"><table class="data">
<thead><tr><th scope="col">Tag</th><th scope="col">Leads</th><th scope="col">Rename or merge</th><th scope="col">Actions</th></tr></thead>
<tbody>${o.tags.map((t, i) => {
        const value = v.typed?.key === t.key ? v.typed.to : t.tag;
        return html`<tr><td>${t.tag}</td><td>${t.leads}</td>
<td><form method="post" action="${base}/rename" class="row-actions">${v.csrf}<input type="hidden" name="tag" value="${t.key}"><label class="visually-hidden" for="tag-${i}">New name of ${t.tag}</label><input id="tag-${i}" name="to" value="${value}" maxlength="40"><button class="btn" type="submit" aria-label="Rename ${t.tag}">Rename</button></form></td>
<td><a class="btn btn-danger" href="${base}/delete?tag=${encodeURIComponent(t.key)}" aria-label="Delete ${t.tag}">Delete</a></td></tr>`;
      })}</tbody></table></div>`}`;
}

export function deleteTagPage(o: TagsView, t: OrgTag, csrf: Html): Html {
  const base = `/console/settings/tags/${o.orgId}`;
  return html`${settingsTabs("tags")}<p><a href="${base}">Back to the tags</a></p>
<section class="card" aria-labelledby="rm-h"><h2 id="rm-h">Delete the tag ${t.tag}?</h2>
<p>It is removed from the ${leadsOf(t.leads)} that carry it. The leads themselves stay.</p>
<form method="post" action="${base}/delete" class="settings-form">${csrf}<input type="hidden" name="tag" value="${t.key}">
${checkField({ id: "rm-confirm", name: "confirm", label: `Yes, remove ${t.tag} from ${leadsOf(t.leads)}`, checked: false })}
<button class="btn btn-danger" type="submit">Delete tag</button>
</form>
</section>`;
}
