// The inbox (/console/inbox, the console's landing page): inbound messages nobody has handled yet,
// newest first, each with its lead, its text, a reply box (an SMS through the one send path) and
// "mark handled". A reply that goes out (or is queued) handles the lead's inbound messages.
import { Type as t } from "@sinclair/typebox";
import { AppError } from "../errors";
import { formatNumber } from "../dni/rules";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { idText } from "../http/fields";
import { idParam, type Route } from "../http/route";
import { inboundLead, markHandled, unhandledInbound, type InboxRow } from "../messages/inbox";
import { audit } from "./audit";
import { consoleHtml, csrfField, html, notice, seeOther, when, type Html } from "./html";
import { leadProfile } from "../leads/profile";
import { FALLBACK_ZONE } from "../messages/quiet-hours";
import { consoleSend, newOperationId, recipientZoneOf } from "./lead";
import { formBody, pageQuery, pageSpec } from "./route";
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

const InboxQuery = t.Object({
  before: t.Optional(t.String({ description: "the keyset cursor: messages older than this id" })),
  lead: t.Optional(t.String({ description: "after a reply: the lead replied to, whose zone a deferral is told in" })),
  sent: t.Optional(t.String()),
  until: t.Optional(t.String()),
  done: t.Optional(t.String()),
});

const ReplyForm = t.Object({
  body: t.Optional(t.String()),
  operation_id: t.Optional(t.String({ description: "the form's idempotency identity" })),
});

const DONE: Record<string, string> = { handled: "Marked handled." };

export function inboxRoutes(deps: Deps): Route[] {
  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleInbox",
        summary: "Inbox: unhandled inbound messages, newest first",
        method: "GET",
        path: "/console/inbox",
        query: pageQuery(InboxQuery),
      }),
      async ({ query: q }, { grant: viewer }) => {
        const before = idText(q.before);
        const page = await unhandledInbound(deps.sql, viewer.actor.orgId, before, INBOX_PAGE);
        // A reply's deferral is stated in its lead's zone (the lead named by the redirect, if in scope).
        const lead = idText(q.lead);
        const replied = lead !== null ? await leadProfile(deps.sql, viewer.actor.orgId, lead) : null;
        const zone = replied ? recipientZoneOf(replied) : FALLBACK_ZONE;
        const sent = sentWords(q.sent, q.until, zone);
        const done = DONE[q.done ?? ""];
        return consoleHtml(deps, viewer, {
          title: "Inbox",
          nav: "inbox",
          styles: ["lead.css"],
          body: inboxBody({
            ...page,
            paged: before !== null,
            csrf: csrfField(viewer),
            notice: sent ? notice(sent.text, sent.kind) : done ? notice(done) : null,
          }),
        });
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleInboxHandled",
        summary: "Mark an inbound message handled (audited)",
        method: "POST",
        path: "/console/inbox/{id}/handled",
        params: idParam,
        body: formBody(t.Object({})),
      }),
      async ({ params: id }, { grant: viewer }) => {
        const done = await deps.sql.begin(async (tx) => {
          const m = await markHandled(tx, viewer.actor.orgId, id, new Date(deps.clock.now()));
          if (m !== null) await audit(tx, viewer.actor, "inbox.handled", `message:${id}`, { lead_id: m.lead_id }, m.org_id);
          return m;
        });
        // Already handled (by a colleague, or a second click) reads as done; someone else's is a 404.
        if (done === null && (await inboundLead(deps.sql, viewer.actor.orgId, id)) === null) throw new AppError("not_found");
        return seeOther("/console/inbox?done=handled");
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleInboxReply",
        summary: "Reply to an inbound message by SMS (the one send path)",
        method: "POST",
        path: "/console/inbox/{id}/reply",
        params: idParam,
        body: formBody(ReplyForm),
      }),
      async ({ params: id, body: form }, { grant: viewer }) => {
        const leadId = await inboundLead(deps.sql, viewer.actor.orgId, id);
        if (leadId === null) throw new AppError("not_found");
        const lead = await leadProfile(deps.sql, viewer.actor.orgId, leadId);
        if (lead === null) throw new AppError("not_found");
        const sent = await consoleSend(deps, viewer, lead, { ...form, channel: "sms" });
        if ("error" in sent) return seeOther(`/console/leads/${leadId}?done=form_error`);
        return seeOther(`/console/inbox?${sentQuery(sent.result, "sms")}&lead=${leadId}`);
      },
    ),
  ];
}
