// The inbox (/console/inbox, the console's landing page): the organization's conversations, one
// row per lead, newest activity first, in the views Mine, Unassigned, All open, Snoozed and Closed
// (src/workspace/inbox.ts), with a reading pane beside the list (`?open=<id>`, rendered server-side;
// htmx swaps only the pane). Every action is a plain form through the workspace's services
// (src/workspace/actions.ts: audited, confined in SQL, one transaction); a reply goes through the
// one send path (consoleSend), whose trigger assigns an unassigned conversation to the sender.
import { Type as t } from "@sinclair/typebox";
import { parseCursor, cursorText, leadTimeline, markText } from "../conversations/timeline";
import { AppError } from "../errors";
import type { BodySpec } from "../http/define";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { idText } from "../http/fields";
import { fieldChecker } from "../http/input";
import { idParam, objectFields, type Route } from "../http/route";
import { assignConversation, bulkAssign, bulkClose, bulkSnooze, closeConversation, reopenConversation, snoozeConversation } from "../workspace/actions";
import { assignees } from "../workspace/assignees";
import { feedHead } from "../feed/queries";
import { conversationRow, inboxPage, viewCounts } from "../workspace/inbox";
import { listCursorText, parseListCursor, userOf } from "../workspace/model";
import type { SnoozeChoice } from "../workspace/snooze";
import { actorNames } from "./actor-names";
import { composerFacts, composerOf, composerReplies, replyDraft } from "./composer-data";
import { paneHtml, type PaneData } from "./conversation-view";
import { consoleHtml, csrfField, html, HTMX_CONFIG, notice, POLL_HEADERS, raw, seeOther, type Html } from "./html";
import { conversationName, countText, formState, inboxHref, listHtml, listState, VIEW_LABELS, type ListState } from "./inbox-view";
import { consoleSend, leadOr404, newOperationId, recipientZoneOf, refusedDraft, SendForm, TIMELINE_SHOWN, type LeadDraft } from "./lead";
import { CONSOLE_BODY_LIMIT, formBody, pageQuery, pageSpec, type Viewer } from "./route";
import { sentQuery, sentWords } from "./send-words";

export const INBOX_PAGE = 50;

const ListFields = {
  view: t.Optional(t.String({ description: "mine, unassigned, open, snoozed or closed (default mine)" })),
  channel: t.Optional(t.String({ description: "the last message's channel: sms, email or note" })),
  assignee: t.Optional(t.String({ description: "a user's id, or none" })),
  after: t.Optional(t.String({ description: "the keyset cursor of the page (the older link's)" })),
};

const InboxQuery = t.Object({
  ...ListFields,
  open: t.Optional(t.String({ description: "a conversation's id: shown in the reading pane" })),
  before: t.Optional(t.String({ description: "the reading pane's older timeline entries (its older link)" })),
  reply: t.Optional(t.String({ description: "a saved reply's id: the pane's composer filled with it, merged for the lead (the saved-reply menu without JavaScript)" })),
  reply_channel: t.Optional(t.String({ description: "the channel of that reply: sms, email or note" })),
  done: t.Optional(t.String({ description: "the result of the last action, as its redirect states it" })),
  n: t.Optional(t.String({ description: "how many conversations a bulk action changed" })),
  sent: t.Optional(t.String({ description: "the result of the composer's last send" })),
  until: t.Optional(t.String({ description: "a deferred send's Unix time" })),
});

/** The list's state as an action's form carries it back (inbox-view.ts stateFields). */
const StateFields = {
  view: ListFields.view,
  list_channel: t.Optional(t.String({ description: "the list's channel filter" })),
  assignee: ListFields.assignee,
  after: ListFields.after,
};

const ActionFields = { ...StateFields, open: t.Optional(t.String({ description: "the conversation open in the pane (return to it)" })) };
const AssignForm = t.Object({ ...ActionFields, to: t.Optional(t.String({ description: "me, none, or a user's id" })) });
const SnoozeForm = t.Object({
  ...ActionFields,
  preset: t.Optional(t.String({ description: "hour, tomorrow or next_week" })),
  until: t.Optional(t.String({ description: "a chosen time, YYYY-MM-DDTHH:MM in the organization's zone" })),
});
const PlainForm = t.Object(ActionFields);
const ReplyForm = t.Object({ ...ActionFields, ...SendForm.properties });

const BulkFields = t.Object({
  ...StateFields,
  action: t.Optional(t.String({ description: "close, assign or snooze" })),
  to: t.Optional(t.String({ description: "assign: me, none, or a user's id" })),
  preset: t.Optional(t.String({ description: "snooze: hour, tomorrow or next_week" })),
});

/** The bulk form: its fields and one `c<id>=on` per ticked conversation (checkboxes of one form). */
interface BulkForm {
  fields: ReturnType<ReturnType<typeof fieldChecker<typeof BulkFields>>>;
  ids: string[];
}

const TICKED = /^c(\d{1,15})$/;

const bulkBody: BodySpec<BulkForm> = (() => {
  const check = fieldChecker(BulkFields);
  const schema = t.Object(
    { ...BulkFields.properties, _csrf: t.Optional(t.String({ description: "the session's CSRF token" })) },
    { additionalProperties: t.String({ description: "c<conversation id>=on for each ticked conversation (at most 500)" }) },
  );
  return {
    input: {
      schema,
      read: (value) => {
        const all = objectFields(value);
        const ids = Object.keys(all).flatMap((k) => TICKED.exec(k)?.[1] ?? []);
        return { fields: check(all), ids };
      },
    },
    limit: CONSOLE_BODY_LIMIT,
    form: true,
    malformed: "absent",
  };
})();

/** The notices of the inbox's actions (`?done=`): codes only, so a link cannot make the page say anything else. */
const DONE: Record<string, { text: string; kind: "ok" | "error" }> = {
  assigned: { text: "Assigned.", kind: "ok" },
  unassigned: { text: "Unassigned.", kind: "ok" },
  snoozed: { text: "Snoozed.", kind: "ok" },
  closed: { text: "Closed.", kind: "ok" },
  reopened: { text: "Reopened.", kind: "ok" },
  unchanged: { text: "Nothing to change: it already was.", kind: "ok" },
  snooze_invalid: { text: "Choose a time in the future, within a year.", kind: "error" },
  form_error: { text: "The form was incomplete or already used: reload the page and try again.", kind: "error" },
  bulk_none: { text: "Tick the conversations to act on first.", kind: "error" },
  bulk_closed: { text: "Closed: {n}.", kind: "ok" },
  bulk_assigned: { text: "Assigned: {n}.", kind: "ok" },
  bulk_snoozed: { text: "Snoozed: {n}.", kind: "ok" },
};

function doneNotice(done: string | undefined, n: string | undefined): Html | null {
  const d = done !== undefined && Object.hasOwn(DONE, done) ? DONE[done]! : null;
  if (!d) return null;
  const count = n && /^\d{1,4}$/.test(n) ? n : "0";
  return notice(d.text.replace("{n}", `${count} conversation${count === "1" ? "" : "s"}`), d.kind);
}

/** Where an action returns: the same list, with the conversation still open when it was. */
const backTo = (state: ListState, open: number | null, extra: Record<string, string | number>) => inboxHref(state, { open, ...extra });

const openOf = (form: { open?: string }, id: number) => (idText(form.open) === id ? id : null);

/** What the assign form's `to` names: the viewer (me), nobody (none), or a user's id. */
function assigneeOf(to: string | undefined, viewer: Viewer): string | null | undefined {
  if (to === undefined || to === "") return undefined;
  if (to === "none") return null;
  if (to === "me") return userOf(viewer.actor) ?? undefined;
  return /^[\w.@+-]{1,100}$/.test(to) ? to : undefined;
}

function snoozeChoice(form: { preset?: string; until?: string }): SnoozeChoice | null {
  if (form.preset === "hour" || form.preset === "tomorrow" || form.preset === "next_week") return { preset: form.preset };
  if (form.until) return { until: form.until };
  return null;
}

type Draft = LeadDraft;

/** The reading pane's data for conversation `id` (not_found outside the viewer's organization). */
async function loadPane(
  deps: Deps,
  viewer: Viewer,
  id: number,
  state: ListState,
  before: string | undefined,
  draft: Draft | null,
  reply: { id?: string; channel?: string } = {},
): Promise<PaneData> {
  const now = deps.clock.now();
  const row = await conversationRow(deps.sql, viewer.actor, id, now);
  if (row === null) throw new AppError("not_found");
  const lead = await leadOr404(deps, viewer, row.lead_id);
  const older = parseCursor(before ?? null);
  const [timeline, facts, people, picked] = await Promise.all([
    leadTimeline(deps.sql, viewer.actor.orgId, lead.id, TIMELINE_SHOWN, null, older),
    composerFacts(deps, viewer, lead),
    assignees(deps.sql, viewer.actor),
    draft === null ? replyDraft(deps, viewer, lead.id, reply.id, reply.channel) : Promise.resolve(null),
  ]);
  if (!timeline) throw new AppError("not_found");
  return {
    row,
    lead,
    entries: timeline.entries,
    names: await actorNames(deps.sql, timeline.entries),
    mark: older === null ? markText(timeline.mark) : null,
    older: timeline.older === null ? null : cursorText(timeline.older),
    people,
    me: userOf(viewer.actor),
    composer: composerOf(
      facts,
      newOperationId(),
      draft ?? picked,
      composerReplies(facts, lead.id, (reply, channel) => `${inboxHref(state, { open: id, reply, reply_channel: channel })}#composer`),
    ),
    csrf: csrfField(viewer),
    state,
  };
}

interface InboxRequest {
  state: ListState;
  open: number | null;
  before?: string;
  notice: Html | null;
  draft?: Draft | null;
  /** A saved reply picked without JavaScript: its id and channel. */
  reply?: { id?: string; channel?: string };
}

/** The whole inbox page: the views and list, and the reading pane when a conversation is open. */
async function inboxResponse(deps: Deps, viewer: Viewer, r: InboxRequest): Promise<Response> {
  const now = deps.clock.now();
  const { state } = r;
  // Read before the page's data: the tab's stream starts after it, so a change between the two
  // is delivered (and at worst refreshes what already shows), never missed.
  const head = await feedHead(deps.sql);
  const [page, counts, people, pane] = await Promise.all([
    inboxPage(deps.sql, viewer.actor, { view: state.view, channel: state.channel, assignee: state.assignee }, parseListCursor(state.after), INBOX_PAGE, now),
    viewCounts(deps.sql, viewer.actor),
    assignees(deps.sql, viewer.actor),
    r.open === null ? Promise.resolve(null) : loadPane(deps, viewer, r.open, state, r.before, r.draft ?? null, r.reply),
  ]);
  const viewTitle = `${counts[state.view] > 0 ? `(${countText(counts[state.view])}) ` : ""}Inbox · ${VIEW_LABELS[state.view]}`;
  const here = inboxHref(state, { open: r.open });
  const list = listHtml({
    title: `${viewTitle}${pane ? ` · ${conversationName(pane.row)}` : ""} · Leadline`,
    state,
    rows: page.rows,
    next: page.next === null ? null : listCursorText(page.next),
    counts,
    people,
    me: userOf(viewer.actor),
    open: r.open,
    now,
    csrf: csrfField(viewer),
  });
  return consoleHtml(deps, viewer, {
    title: `${viewTitle}${pane ? ` · ${conversationName(pane.row)}` : ""}`,
    heading: "Inbox",
    nav: "inbox",
    styles: ["lead.css", "inbox.css"],
    scripts: ["htmx.min.js", "htmx-sse.min.js", "inbox.js", "composer.js", "older.js", "notify.js"],
    head: HTMX_CONFIG,
    // htmx (assets/inbox.js): the stream on #inbox-live; each change refreshes this page's live
    // parts out of band (counts, list, the open conversation, the navigation's count).
    // The refresher is inside #inbox-split, which opening a conversation swaps: it always asks for
    // the page as it now is.
    // #inbox-changes (outside the part that opening a conversation swaps) is where the stream's
    // `change` and `reset` events land; assets/inbox.js turns changes into refreshes, never
    // dropping the last of a burst (htmx's own throttle drops whatever comes within its window).
    body: html`<div id="inbox-live" hx-ext="sse" sse-connect="/console/inbox/stream?after=${head}" data-me="${userOf(viewer.actor) ?? ""}">
      <span id="inbox-changes" hidden hx-trigger="sse:change, sse:reset"></span>${r.notice}<p class="inbox-notify" id="inbox-notify" hidden><label><input type="checkbox" id="notify-toggle"> Notify me of new messages</label>
        <span class="muted" id="notify-status" aria-live="polite"></span></p><div class="inbox-split${pane ? " has-open" : ""}" id="inbox-split">
      <div id="inbox-refresh" hidden hx-get="${here}" hx-trigger="inbox:refresh, every 10s" hx-swap="none" ${POLL_HEADERS}
        hx-select-oob="#view-counts,#conv-list,#pane-status,#timeline,#nav-inbox"></div>${list}${
        pane ? paneHtml(pane, now) : html`<section class="inbox-pane inbox-pane-empty" id="pane" aria-label="Conversation"><p class="muted">Choose a conversation to read it here.</p></section>`
      }</div></div>`,
  });
}


export function inboxRoutes(deps: Deps): Route[] {
  const post = <B>(id: string, summary: string, path: string, body: BodySpec<B>, description?: string) =>
    pageSpec(deps, { id, summary, description, method: "POST", path: `/console/inbox/{id}/${path}`, params: idParam, body });
  const now = () => deps.clock.now();
  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleInbox",
        summary: "Inbox: the organization's conversations by view, newest activity first, and one open beside the list",
        description: "Views Mine, Unassigned, All open, Snoozed, Closed with their counts; filters by channel and assignee; keyset pages; `open` shows a conversation in the reading pane (another organization's is a 404 like a missing one).",
        method: "GET",
        path: "/console/inbox",
        query: pageQuery(InboxQuery),
      }),
      async ({ query: q }, { grant: viewer }) => {
        const open = q.open === undefined ? null : idText(q.open);
        if (q.open !== undefined && open === null) throw new AppError("not_found");
        let shown = doneNotice(q.done, q.n);
        if (q.sent !== undefined && open !== null) {
          const row = await conversationRow(deps.sql, viewer.actor, open, now());
          const lead = row && (await leadOr404(deps, viewer, row.lead_id));
          const words = lead ? sentWords(q.sent, q.until, recipientZoneOf(lead)) : null;
          if (words) shown = notice(words.text, words.kind);
        }
        return inboxResponse(deps, viewer, { state: listState(q), open, before: q.before, notice: shown, reply: { id: q.reply, channel: q.reply_channel } });
      },
    ),
    defineRoute(deps, post("consoleInboxAssign", "Assign a conversation to me, to a user of its organization, or to nobody (audited)", "assign", formBody(AssignForm)), async ({ params: id, body: form }, { grant: viewer }) => {
      const to = assigneeOf(form.to, viewer);
      const state = formState(form);
      if (to === undefined) return seeOther(backTo(state, openOf(form, id), { done: "form_error" }));
      const r = await assignConversation(deps.sql, viewer.actor, id, to, now());
      return seeOther(backTo(state, openOf(form, id), { done: !r.changed ? "unchanged" : to === null ? "unassigned" : "assigned" }));
    }),
    defineRoute(
      deps,
      post("consoleInboxSnooze", "Snooze a conversation: 1 hour, tomorrow 9:00, next week, or a chosen time in the organization's zone (audited)", "snooze", formBody(SnoozeForm)),
      async ({ params: id, body: form }, { grant: viewer }) => {
        const state = formState(form);
        const choice = snoozeChoice(form);
        if (choice === null) return seeOther(backTo(state, openOf(form, id), { done: "snooze_invalid" }));
        try {
          const r = await snoozeConversation(deps.sql, viewer.actor, id, choice, now());
          return seeOther(backTo(state, openOf(form, id), { done: r.changed ? "snoozed" : "unchanged" }));
        } catch (err) {
          if (err instanceof AppError && err.code === "invalid_input") return seeOther(backTo(state, openOf(form, id), { done: "snooze_invalid" }));
          throw err;
        }
      },
    ),
    defineRoute(deps, post("consoleInboxClose", "Close a conversation (audited; ends the lead's wait)", "close", formBody(PlainForm)), async ({ params: id, body: form }, { grant: viewer }) => {
      const r = await closeConversation(deps.sql, viewer.actor, id, now());
      return seeOther(backTo(formState(form), openOf(form, id), { done: r.changed ? "closed" : "unchanged" }));
    }),
    defineRoute(deps, post("consoleInboxReopen", "Reopen a closed or snoozed conversation (audited)", "reopen", formBody(PlainForm)), async ({ params: id, body: form }, { grant: viewer }) => {
      const r = await reopenConversation(deps.sql, viewer.actor, id, now());
      return seeOther(backTo(formState(form), openOf(form, id), { done: r.changed ? "reopened" : "unchanged" }));
    }),
    defineRoute(
      deps,
      post(
        "consoleInboxSend",
        "Reply in a conversation: SMS, email or a note for its lead (the one send path)",
        "send",
        formBody(ReplyForm),
        "A reply sent by a console user assigns an unassigned conversation to them (sql/0023's trigger, in the send's transaction). A refused send answers the page again with the draft kept and the reason in words.",
      ),
      async ({ params: id, body: form }, { grant: viewer }) => {
        const state = formState(form);
        const row = await conversationRow(deps.sql, viewer.actor, id, now());
        if (row === null) throw new AppError("not_found");
        const lead = await leadOr404(deps, viewer, row.lead_id);
        const sent = await consoleSend(deps, viewer, lead, form);
        if ("error" in sent) return seeOther(backTo(state, id, { done: "form_error" }));
        // Refused: nothing was recorded, so the draft comes back with the reason (a fresh operation id).
        const draft = refusedDraft(sent.result, form, recipientZoneOf(lead));
        if (draft) return inboxResponse(deps, viewer, { state, open: id, notice: null, draft });
        return seeOther(`${backTo(state, id, {})}&${sentQuery(sent.result, sent.channel)}#composer`);
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleInboxBulk",
        summary: "Close, assign or snooze the ticked conversations (audited; only the organization's are touched)",
        description: "Form: action (close, assign, snooze), to (assign: me, none or a user's id), preset (snooze), and `c<id>=on` per ticked conversation, at most 500. Ids of another organization are never read, locked or changed.",
        method: "POST",
        path: "/console/inbox/bulk",
        body: bulkBody,
      }),
      async ({ body: form }, { grant: viewer }) => {
        const state = formState(form.fields);
        if (form.ids.length === 0) return seeOther(backTo(state, null, { done: "bulk_none" }));
        if (form.ids.length > 500) return seeOther(backTo(state, null, { done: "form_error" }));
        const f = form.fields;
        let changed: number[];
        let done: string;
        if (f.action === "close") {
          ({ changed } = await bulkClose(deps.sql, viewer.actor, form.ids, now()));
          done = "bulk_closed";
        } else if (f.action === "assign") {
          const to = assigneeOf(f.to, viewer);
          if (to === undefined) return seeOther(backTo(state, null, { done: "form_error" }));
          ({ changed } = await bulkAssign(deps.sql, viewer.actor, form.ids, to, now()));
          done = "bulk_assigned";
        } else if (f.action === "snooze") {
          const choice = snoozeChoice({ preset: f.preset });
          if (choice === null) return seeOther(backTo(state, null, { done: "snooze_invalid" }));
          ({ changed } = await bulkSnooze(deps.sql, viewer.actor, form.ids, choice, now()));
          done = "bulk_snoozed";
        } else return seeOther(backTo(state, null, { done: "form_error" }));
        return seeOther(backTo(state, null, { done, n: changed.length }));
      },
    ),
  ];
}
