// The inbox's body as pure functions of its data (no database, no request): the views with their
// counts, the filters, one row per conversation with its bulk checkbox, the bulk actions, the
// pager, and the reading pane (src/console/conversation-view.ts) beside the list. Every action is a
// plain form; the inbox's script (assets/inbox.js) and htmx only make them quicker.
import { formatNumber } from "../dni/rules";
import type { Assignee } from "../workspace/assignees";
import { COUNT_CAP, type ViewCounts } from "../workspace/inbox";
import { LIST_CHANNELS, VIEWS, type InboxRow, type ListChannel, type View } from "../workspace/model";
import { html, raw, when, type Html } from "./html";

export const VIEW_LABELS: Record<View, string> = {
  mine: "Mine",
  unassigned: "Unassigned",
  open: "All open",
  snoozed: "Snoozed",
  closed: "Closed",
};

const CHANNEL_LABELS: Record<string, string> = { sms: "SMS", email: "Email", note: "Note" };

/** Where the list is: its view, filters and page; every link and form of the inbox carries it back. */
export interface ListState {
  view: View;
  channel: ListChannel | null;
  /** A user's id, or "none". */
  assignee: string | null;
  /** The page's keyset cursor (listCursorText), or null for the newest. */
  after: string | null;
}

/** The list's state from a query or form (each value checked; anything else is its default). */
export function listState(q: { view?: string; channel?: string; assignee?: string; after?: string }): ListState {
  const view = VIEWS.find((v) => v === q.view) ?? "mine";
  const channel = LIST_CHANNELS.find((c) => c === q.channel) ?? null;
  const assignee = q.assignee && /^[\w.@+-]{1,100}$/.test(q.assignee) ? q.assignee : null;
  const after = q.after && /^\d{1,17}\.\d{1,17}$/.test(q.after) ? q.after : null;
  return { view, channel, assignee, after };
}

/** The list's state carried by an action's form (stateFields). */
export const formState = (f: { view?: string; list_channel?: string; assignee?: string; after?: string }): ListState =>
  listState({ view: f.view, channel: f.list_channel, assignee: f.assignee, after: f.after });

/** The inbox's URL for `s` (with `open`, a conversation's id, or more query). Built from checked values only. */
export function inboxHref(s: ListState, extra: Record<string, string | number | null | undefined> = {}): string {
  const p = new URLSearchParams();
  p.set("view", s.view);
  if (s.channel) p.set("channel", s.channel);
  if (s.assignee) p.set("assignee", s.assignee);
  if (s.after) p.set("after", s.after);
  for (const [k, v] of Object.entries(extra)) if (v !== null && v !== undefined && v !== "") p.set(k, String(v));
  return `/console/inbox?${p.toString()}`;
}

/**
 * The hidden fields that carry the list's state through a form (an action returns to the same
 * list). The channel filter travels as `list_channel`: the composer's own `channel` is the send's.
 */
export function stateFields(s: ListState, open: number | null = null): Html {
  return html`<input type="hidden" name="view" value="${s.view}">${s.channel ? html`<input type="hidden" name="list_channel" value="${s.channel}">` : null}${
    s.assignee ? html`<input type="hidden" name="assignee" value="${s.assignee}">` : null
  }${s.after ? html`<input type="hidden" name="after" value="${s.after}">` : null}${open !== null ? html`<input type="hidden" name="open" value="${open}">` : null}`;
}

export const countText = (n: number) => (n > COUNT_CAP ? `${COUNT_CAP}+` : String(n));

/** "3h 05m", "2d 4h", "12m": how long since `since`. */
export function waited(since: number, now: number): string {
  const mins = Math.max(0, Math.floor((now - since) / 60_000));
  if (mins < 1) return "under a minute";
  if (mins < 60) return `${mins}m`;
  const hours = Math.floor(mins / 60);
  if (hours < 48) return `${hours}h ${String(mins % 60).padStart(2, "0")}m`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}

export const conversationName = (r: { name: string; phone: string }) => r.name || formatNumber(r.phone) || "Unnamed lead";

function viewNav(s: ListState, counts: ViewCounts): Html {
  return html`<nav class="views" aria-label="Inbox views"><ul id="view-counts">${VIEWS.map((v) => {
    const here = v === s.view;
    return html`<li><a href="${inboxHref({ view: v, channel: null, assignee: null, after: null })}"${here ? raw(' aria-current="page"') : ""} data-view="${v}">${VIEW_LABELS[v]} <span class="count" data-count="${v}">${countText(counts[v])}</span></a></li>`;
  })}</ul></nav>`;
}

function filters(s: ListState, people: Assignee[]): Html {
  return html`<form method="get" action="/console/inbox" class="inbox-filters" aria-label="Filter the list">
    <input type="hidden" name="view" value="${s.view}">
    <label for="f-channel">Channel</label>
    <select id="f-channel" name="channel"><option value="">Any</option>${LIST_CHANNELS.map(
      (c) => html`<option value="${c}"${c === s.channel ? raw(" selected") : ""}>${CHANNEL_LABELS[c]}</option>`,
    )}</select>
    <label for="f-assignee">Assignee</label>
    <select id="f-assignee" name="assignee"><option value="">Anyone</option><option value="none"${s.assignee === "none" ? raw(" selected") : ""}>Nobody</option>${people.map(
      (p) => html`<option value="${p.id}"${p.id === s.assignee ? raw(" selected") : ""}>${p.name}</option>`,
    )}</select>
    <button type="submit" class="btn">Filter</button>
  </form>`;
}

/** The badges of a row: opted out per channel, in quiet hours now, a callback due, snoozed until. */
export function badges(r: InboxRow): Html {
  return html`${r.sms_opted_out ? html`<span class="badge badge-bad">SMS opted out</span>` : null}${
    r.email_opted_out ? html`<span class="badge badge-bad">Email opted out</span>` : null
  }${r.quiet_until !== null ? html`<span class="badge badge-warn" title="A text sent now goes at ${when(r.quiet_until, r.timezone)}">Quiet hours</span>` : null}${
    r.callback_due ? html`<span class="badge badge-warn">Callback due</span>` : null
  }${r.status === "snoozed" && r.snoozed_until ? html`<span class="badge">Snoozed until ${when(r.snoozed_until, r.timezone)}</span>` : null}${
    r.status === "closed" ? html`<span class="badge">Closed</span>` : null
  }`;
}

/**
 * One conversation of the list. Its link has an id so that htmx puts the focus back on it when a
 * live refresh replaces the list (a keyboard or screen-reader user on a conversation lost their
 * place to the page's body at each change); the checkbox has one for the same reason.
 */
export function rowHtml(r: InboxRow, s: ListState, now: number, open: number | null): Html {
  const name = conversationName(r);
  const channel = r.last_channel ? CHANNEL_LABELS[r.last_channel] ?? r.last_channel : null;
  const dir = r.last_direction === "in" ? "in" : r.last_direction === "out" ? "out" : null;
  return html`<li class="conv${open === r.id ? " conv-open" : ""}${r.waiting_since ? " conv-waiting" : ""}" id="conv-${r.id}" data-id="${r.id}">
    <input type="checkbox" form="bulk" name="c${r.id}" value="on" class="conv-pick" id="pick-${r.id}" hx-preserve="true" aria-label="Select ${name}">
    <div class="conv-main">
      <div class="conv-top"><a class="conv-link" id="open-${r.id}" href="${inboxHref(s, { open: r.id })}" hx-get="${inboxHref(s, { open: r.id })}" hx-select="#inbox-split" hx-target="#inbox-split" hx-swap="outerHTML show:none" hx-push-url="true"${open === r.id ? raw(' aria-current="true"') : ""}>${name}</a>
        <time class="conv-time" datetime="${r.last_activity_at.toISOString()}">${when(r.last_activity_at, r.timezone)}</time></div>
      <div class="conv-snippet">${channel ? html`<span class="conv-channel">${channel} ${dir === "in" ? "in" : dir === "out" ? "out" : ""}</span> ` : null}${r.snippet || html`<span class="muted">No messages</span>`}</div>
      <div class="conv-meta">${r.waiting_since ? html`<span class="conv-wait">Waiting ${waited(r.waiting_since.getTime(), now)}</span>` : null}
        <span class="conv-assignee">${r.assignee ? r.assignee_name || r.assignee : html`<span class="muted">Unassigned</span>`}</span>${badges(r)}</div>
    </div>
  </li>`;
}

export interface ListPage {
  /** The tab's title, which the live list carries (the title follows the counts). */
  title: string;
  state: ListState;
  rows: InboxRow[];
  /** The next page's cursor, or null on the last. */
  next: string | null;
  counts: ViewCounts;
  people: Assignee[];
  /** The signed-in user may be assigned (a console user of an organization). */
  me: string | null;
  open: number | null;
  now: number;
  csrf: Html;
}

const EMPTY: Record<View, string> = {
  mine: "Nothing is waiting for you.",
  unassigned: "No conversation is waiting for someone to take it.",
  open: "No open conversations.",
  snoozed: "Nothing is snoozed.",
  closed: "No closed conversations.",
};

/** The bulk actions over the ticked rows: one form, the rows' checkboxes belong to it (form="bulk"). */
function bulkForm(p: ListPage): Html {
  return html`<form id="bulk" method="post" action="/console/inbox/bulk" class="bulk" aria-label="Act on the selected conversations">
    ${p.csrf}${stateFields(p.state)}
    <span class="muted">Selected:</span>
    <button type="submit" name="action" value="close" class="btn">Close</button>
    <label for="bulk-to" class="visually-hidden">Assign the selected to</label>
    <select id="bulk-to" name="to">${p.me ? html`<option value="me">Me</option>` : null}${p.people.filter((x) => x.id !== p.me).map(
      (x) => html`<option value="${x.id}">${x.name}</option>`,
    )}<option value="none">Nobody</option></select>
    <button type="submit" name="action" value="assign" class="btn">Assign</button>
    <label for="bulk-preset" class="visually-hidden">Snooze the selected until</label>
    <select id="bulk-preset" name="preset"><option value="hour">1 hour</option><option value="tomorrow">Tomorrow 9:00</option><option value="next_week">Next week</option></select>
    <button type="submit" name="action" value="snooze" class="btn">Snooze</button>
  </form>`;
}

export function listHtml(p: ListPage): Html {
  const label = `${VIEW_LABELS[p.state.view]}, newest activity first`;
  return html`<section class="inbox-list" aria-labelledby="h-list">
    <h2 id="h-list" class="visually-hidden">Conversations</h2>
    ${viewNav(p.state, p.counts)}
    ${filters(p.state, p.people)}
    ${p.rows.length === 0 ? null : bulkForm(p)}
    <div id="conv-list" data-title="${p.title}">${p.rows.length === 0
      ? html`<p class="empty">${EMPTY[p.state.view]}</p>`
      : html`<ol class="convs" aria-label="${label}">${p.rows.map((r) => rowHtml(r, p.state, p.now, p.open))}</ol>`}</div>
    <nav class="pager" aria-label="Pages">
      ${p.state.after ? html`<a href="${inboxHref({ ...p.state, after: null })}">Newest</a>` : null}
      ${p.next !== null ? html`<a href="${inboxHref({ ...p.state, after: p.next })}" rel="next">Older</a>` : null}
    </nav>
  </section>`;
}
