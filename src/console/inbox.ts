// The inbox (/console/inbox, the console's landing page): inbound messages nobody has handled yet,
// newest first, each with its lead, its text, a reply box (an SMS through the one send path) and
// "mark handled". A reply that goes out (or is queued) handles the lead's inbound messages.
import { Type as t } from "@sinclair/typebox";
import { AppError } from "../errors";
import { formatNumber } from "../dni/rules";
import type { Deps } from "../http/deps";
import type { Route } from "../http/route";
import { inboundLead, markHandled, unhandledInbound, type InboxRow } from "../messages/inbox";
import { audit } from "./audit";
import { consoleHtml, csrfField, html, notice, seeOther, when, type Html } from "./html";
import { leadProfile } from "../leads/profile";
import { FALLBACK_ZONE } from "../messages/quiet-hours";
import { consoleSend, newOperationId, recipientZoneOf } from "./lead";
import { consolePage, formOf } from "./route";
import { sentQuery, sentWords } from "./send-words";

export const INBOX_PAGE = 50;

interface InboxPage {
  rows: InboxRow[];
  next: number | null;
  paged: boolean;
  csrf: Html;
  notice: Html | null;
}

function item(m: InboxRow, csrf: Html): Html {
  const reply = `reply-${m.id}`;
  return html`<li class="card inbox-item">
    <div class="inbox-head">
      <a id="from-${m.id}" href="/console/leads/${m.lead_id}"><strong>${m.name || formatNumber(m.phone)}</strong></a>
      <span class="muted">${formatNumber(m.phone)}</span>
      <span class="badge">${m.channel.toUpperCase()}</span>
      <time datetime="${m.created_at.toISOString()}">${when(m.created_at, m.timezone)}</time>
    </div>
    <div class="inbox-body">${m.body}</div>
    <div class="inbox-actions">
      <form method="post" action="/console/inbox/${m.id}/reply" class="reply">
        ${csrf}
        <input type="hidden" name="operation_id" value="${newOperationId()}">
        <label for="${reply}">Reply by SMS</label>
        <div class="reply-row"><textarea id="${reply}" name="body" rows="2" required></textarea>
        <button type="submit" class="btn btn-primary">Send</button></div>
      </form>
      <form method="post" action="/console/inbox/${m.id}/handled">
        ${csrf}
        <button type="submit" class="btn">Mark handled</button>
      </form>
    </div>
  </li>`;
}

export function inboxBody(p: InboxPage): Html {
  return html`${p.notice}
    ${p.rows.length === 0
      ? html`<p class="empty">Nothing waiting: every inbound message has been handled.</p>`
      : html`<ol class="inbox" aria-label="Unhandled messages, newest first">${p.rows.map((m) => item(m, p.csrf))}</ol>`}
    <nav class="pager" aria-label="Pages">
      ${p.paged ? html`<a href="/console/inbox">Newest</a>` : null}
      ${p.next !== null ? html`<a href="/console/inbox?before=${p.next}" rel="next">Older</a>` : null}
    </nav>`;
}

const messageIdOf = (param: string | undefined): number => {
  if (param === undefined || !/^\d{1,15}$/.test(param)) throw new AppError("not_found");
  return Number(param);
};

const DONE: Record<string, string> = { handled: "Marked handled." };

export function inboxRoutes(deps: Deps): Route[] {
  return [
    consolePage(
      deps,
      { id: "consoleInbox", summary: "Inbox: unhandled inbound messages, newest first", method: "GET", path: "/console/inbox", query: t.Object({ before: t.Optional(t.String()) }, { additionalProperties: true }) },
      async (viewer, request) => {
        const q = new URL(request.url).searchParams;
        const before = /^\d{1,15}$/.test(q.get("before") ?? "") ? Number(q.get("before")) : null;
        const page = await unhandledInbound(deps.sql, viewer.actor.orgId, before, INBOX_PAGE);
        // A reply's deferral is stated in its lead's zone (the lead named by the redirect, if in scope).
        const replied = /^\d{1,15}$/.test(q.get("lead") ?? "") ? await leadProfile(deps.sql, viewer.actor.orgId, Number(q.get("lead"))) : null;
        const zone = replied ? recipientZoneOf(replied) : FALLBACK_ZONE;
        const sent = sentWords(q.get("sent") ?? undefined, q.get("until") ?? undefined, zone);
        const done = DONE[q.get("done") ?? ""];
        return consoleHtml(deps, viewer, {
          title: "Inbox",
          nav: "inbox",
          styles: ["lead.css"],
          body: inboxBody({ ...page, paged: before !== null, csrf: csrfField(viewer), notice: sent ? notice(sent.text, sent.kind) : done ? notice(done) : null }),
        });
      },
    ),
    consolePage(deps, { id: "consoleInboxHandled", summary: "Mark an inbound message handled (audited)", method: "POST", path: "/console/inbox/{id}/handled" }, async (viewer, _request, selected) => {
      const id = messageIdOf(selected.params.id);
      const done = await deps.sql.begin(async (tx) => {
        const m = await markHandled(tx, viewer.actor.orgId, id, new Date(deps.clock.now()));
        if (m !== null) await audit(tx, viewer.actor, "inbox.handled", `message:${id}`, { lead_id: m.lead_id }, m.org_id);
        return m;
      });
      // Already handled (by a colleague, or a second click) reads as done; someone else's is a 404.
      if (done === null && (await inboundLead(deps.sql, viewer.actor.orgId, id)) === null) throw new AppError("not_found");
      return seeOther("/console/inbox?done=handled");
    }),
    consolePage(deps, { id: "consoleInboxReply", summary: "Reply to an inbound message by SMS (the one send path)", method: "POST", path: "/console/inbox/{id}/reply" }, async (viewer, request, selected) => {
      const id = messageIdOf(selected.params.id);
      const leadId = await inboundLead(deps.sql, viewer.actor.orgId, id);
      if (leadId === null) throw new AppError("not_found");
      const lead = await leadProfile(deps.sql, viewer.actor.orgId, leadId);
      if (lead === null) throw new AppError("not_found");
      const form = await formOf(request);
      const sent = await consoleSend(deps, viewer, lead, { ...form, channel: "sms" });
      if ("error" in sent) return seeOther(`/console/leads/${leadId}?done=form_error`);
      return seeOther(`/console/inbox?${sentQuery(sent.result, "sms")}&lead=${leadId}`);
    }),
  ];
}
