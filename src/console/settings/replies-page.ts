// The saved replies page's bodies: the list (name, channels, a one-line preview of the body), the
// add form, a reply's edit form with the merge-field help and a preview for a lead, and the
// confirmation a delete goes through.
import { REPLY_CHANNELS, type ReplyChannel, type SavedReply } from "../../replies/service";
import { html, type Html } from "../html";
import { orgPicker } from "./org-page";
import { checkField, flashOf, problemsBox, settingsTabs, textField } from "./page";
import { MERGE_FIELDS, MERGE_HELP, type OrgReplies, type ReplyForm } from "./replies-service";

const CHANNEL_NAMES: Record<ReplyChannel, string> = { sms: "SMS", email: "Email", note: "Note" };
const oneLine = (s: string) => {
  const line = s.replace(/\s+/g, " ").trim();
  return [...line].length > 80 ? `${[...line].slice(0, 79).join("")}…` : line;
};

export const formOf = (r: SavedReply): ReplyForm => ({ name: r.name, subject: r.subject, body: r.body, channels: r.channels });
const EMPTY: ReplyForm = { name: "", subject: "", body: "", channels: [...REPLY_CHANNELS] };

function mergeHelp(): Html {
  return html`<aside class="card" aria-labelledby="merge-h"><h3 id="merge-h">Merge fields</h3>
<p class="muted">Typed in braces, replaced for each lead when the message is sent (in the body and the email subject). Any other name is refused.</p>
<ul>${MERGE_FIELDS.map((f) => html`<li><code>{${f}}</code> ${MERGE_HELP[f] ?? ""}</li>`)}</ul></aside>`;
}

function replyFields(f: ReplyForm, p: string): Html {
  return html`${textField({ id: `${p}-name`, name: "name", label: "Name", value: f.name, hint: "Up to 60 characters; agents type / and its start in the composer" })}
<fieldset class="field"><legend>Channels</legend>${REPLY_CHANNELS.map((c) => checkField({ id: `${p}-ch-${c}`, name: `channel.${c}`, label: CHANNEL_NAMES[c], checked: f.channels.includes(c) }))}</fieldset>
${textField({ id: `${p}-subject`, name: "subject", label: "Email subject", value: f.subject, hint: "Email only; empty: the organization's default subject" })}
<div class="field"><label for="${p}-body">Body</label><textarea id="${p}-body" name="body" rows="6" aria-describedby="${p}-body-hint">${f.body}</textarea><p class="muted" id="${p}-body-hint">Up to 5000 characters. An email's body is HTML; SMS and notes are plain text.</p></div>`;
}

export function repliesBody(v: { o: OrgReplies; orgs: { id: number; name: string }[]; csrf: Html; problems: string[] | null; done: string | null; form: ReplyForm | null }): Html {
  const o = v.o;
  const base = `/console/settings/replies/${o.orgId}`;
  return html`${settingsTabs("replies", v.orgs.length > 0 ? `?org=${o.orgId}` : "")}
${v.orgs.length > 0 ? orgPicker(v.orgs, o.orgId, "/console/settings/replies") : ""}
${flashOf(v.done)}${problemsBox(v.problems)}
<p class="muted">${o.name}'s saved replies: texts agents pick in the composer, merged for the lead when sent.</p>
${o.replies.length === 0
    ? html`<p class="empty">No saved reply yet.</p>`
    : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Saved replies"><table class="data">
<thead><tr><th scope="col">Name</th><th scope="col">Channels</th><th scope="col">Body</th><th scope="col">Actions</th></tr></thead>
<tbody>${o.replies.map(
        (r) => html`<tr><td><a href="${base}/edit?reply=${r.id}">${r.name}</a></td><td>${r.channels.map((c) => CHANNEL_NAMES[c]).join(", ")}</td><td class="muted">${oneLine(r.body)}</td>
<td><a class="btn" href="${base}/edit?reply=${r.id}" aria-label="Edit ${r.name}">Edit</a> <a class="btn btn-danger" href="${base}/delete?reply=${r.id}" aria-label="Delete ${r.name}">Delete</a></td></tr>`,
      )}</tbody></table></div>`}
<section class="card" aria-labelledby="add-h"><h2 id="add-h">Add a saved reply</h2>
<form method="post" action="${base}/add" class="settings-form">${v.csrf}
${replyFields(v.form ?? EMPTY, "r")}
<button class="btn btn-primary" type="submit">Add saved reply</button>
</form></section>
${mergeHelp()}`;
}

export interface PreviewView {
  leadId: string;
  channel: ReplyChannel;
  result: { ok: true; subject: string; body: string } | { ok: false; why: string } | null;
}

export function editReplyBody(v: { o: OrgReplies; reply: SavedReply; csrf: Html; problems: string[] | null; done: string | null; form: ReplyForm; preview: PreviewView }): Html {
  const base = `/console/settings/replies/${v.o.orgId}`;
  const r = v.reply;
  const pv = v.preview;
  return html`${settingsTabs("replies")}<p><a href="${base}">Back to the saved replies</a></p>
${flashOf(v.done)}${problemsBox(v.problems)}
<section class="card" aria-labelledby="edit-h"><h2 id="edit-h">Edit ${r.name}</h2>
<form method="post" action="${base}/edit" class="settings-form">${v.csrf}<input type="hidden" name="reply" value="${r.id}">
${replyFields(v.form, "e")}
<button class="btn btn-primary" type="submit">Save</button> <a class="btn btn-danger" href="${base}/delete?reply=${r.id}">Delete</a>
</form></section>
${mergeHelp()}
<section class="card" aria-labelledby="pv-h"><h2 id="pv-h">Preview for a lead</h2>
<p class="muted">The saved text as the send path merges it for the lead (save first to preview a change).</p>
<form method="get" action="${base}/edit" class="filters"><input type="hidden" name="reply" value="${r.id}">
<div class="field"><label for="pv-pick">Recent lead</label><select id="pv-pick" name="pick"><option value="">(type an id instead)</option>${v.o.leads.map(
    (l) => html`<option value="${l.id}"${String(l.id) === pv.leadId ? html` selected` : ""}>${l.label}</option>`,
  )}</select></div>
${textField({ id: "pv-lead", name: "lead", label: "Or a lead id", value: v.o.leads.some((l) => String(l.id) === pv.leadId) ? "" : pv.leadId, type: "text" })}
<div class="field"><label for="pv-channel">Channel</label><select id="pv-channel" name="channel">${REPLY_CHANNELS.map(
    (c) => html`<option value="${c}"${c === pv.channel ? html` selected` : ""}>${CHANNEL_NAMES[c]}</option>`,
  )}</select></div>
<button class="btn" type="submit">Preview</button></form>
${pv.result === null
    ? ""
    : pv.result.ok
      ? html`<div class="preview" id="preview">${pv.channel === "email" ? html`<p><strong>Subject:</strong> ${pv.result.subject}</p>` : ""}<pre class="message-body">${pv.result.body}</pre></div>`
      : html`<p class="notice notice-error" role="alert">${pv.result.why}</p>`}
</section>`;
}

export function deleteReplyPage(o: OrgReplies, r: SavedReply, csrf: Html): Html {
  const base = `/console/settings/replies/${o.orgId}`;
  return html`${settingsTabs("replies")}<p><a href="${base}">Back to the saved replies</a></p>
<section class="card" aria-labelledby="rm-h"><h2 id="rm-h">Delete the saved reply ${r.name}?</h2>
<p>Agents can no longer pick it. Messages already sent with it are kept.</p>
<form method="post" action="${base}/delete" class="settings-form">${csrf}<input type="hidden" name="reply" value="${r.id}">
${checkField({ id: "rm-confirm", name: "confirm", label: `Yes, delete ${r.name}`, checked: false })}
<button class="btn btn-danger" type="submit">Delete saved reply</button>
</form>
</section>`;
}
