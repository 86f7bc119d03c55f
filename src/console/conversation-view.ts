// The inbox's reading pane: one lead's conversation beside the list (full screen on a phone, with
// a way back) — who it is with `tel:` and `mailto:` links, the conversation's actions as plain
// forms (assign, snooze, close, reopen), the timeline oldest to newest with the newest at the
// bottom (older entries load upward), and the composer docked under it.
import type { KeyedEntry } from "../conversations/timeline";
import type { LeadProfile } from "../leads/profile";
import type { Assignee } from "../workspace/assignees";
import type { InboxRow } from "../workspace/model";
import type { ActorNames } from "./actor-names";
import { composerHtml, type ComposerState } from "./composer";
import { html, raw, when, type Html } from "./html";
import { badges, conversationName, inboxHref, stateFields, type ListState } from "./inbox-view";
import { contactLinks, entriesHtml, olderLink } from "./lead-view";

export interface PaneData {
  row: InboxRow;
  lead: LeadProfile;
  entries: KeyedEntry[];
  names: ActorNames;
  /** The polling mark of the newest entries shown; null on an older page. */
  mark: string | null;
  /** The cursor of the next older entries, when there are some. */
  older: string | null;
  people: Assignee[];
  me: string | null;
  composer: Omit<ComposerState, "action" | "extra" | "csrf">;
  csrf: Html;
  state: ListState;
}

const STATUS_WORDS = { open: "Open", snoozed: "Snoozed", closed: "Closed" } as const;

/** The datetime-local value an hour from `now` in `zone` (the chosen-time field's default). */
function localInput(at: number, zone: string): string {
  const parts = new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).formatToParts(at);
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? "00";
  return `${get("year")}-${get("month")}-${get("day")}T${get("hour")}:${get("minute")}`;
}

function actions(p: PaneData, now: number): Html {
  const r = p.row;
  const back = stateFields(p.state, r.id);
  const post = (path: string) => `/console/inbox/${r.id}/${path}`;
  return html`<div class="pane-actions" role="group" aria-label="Conversation actions">
    ${p.me && r.assignee !== p.me
      ? html`<form method="post" action="${post("assign")}">${p.csrf}${back}<input type="hidden" name="to" value="me"><button type="submit" class="btn" data-key="a">Assign to me</button></form>`
      : null}
    <form method="post" action="${post("assign")}" class="pane-assign">${p.csrf}${back}
      <label for="pane-to">Assignee</label>
      <select id="pane-to" name="to"><option value="none"${r.assignee === null ? raw(" selected") : ""}>Nobody</option>${p.people.map(
        (x) => html`<option value="${x.id}"${x.id === r.assignee ? raw(" selected") : ""}>${x.name}</option>`,
      )}</select>
      <button type="submit" class="btn">Assign</button>
    </form>
    <details class="pane-snooze" id="snooze"><summary class="btn" data-key="s">Snooze…</summary>
      <div class="snooze-menu">
        ${(
          [
            ["hour", "1 hour"],
            ["tomorrow", "Tomorrow 9:00"],
            ["next_week", "Next week (Monday 9:00)"],
          ] as const
        ).map(
          ([v, label]) =>
            html`<form method="post" action="${post("snooze")}">${p.csrf}${back}<input type="hidden" name="preset" value="${v}"><button type="submit" class="btn">${label}</button></form>`,
        )}
        <form method="post" action="${post("snooze")}" class="snooze-until">${p.csrf}${back}
          <label for="snooze-until">Until (${r.timezone})</label>
          <input id="snooze-until" name="until" type="datetime-local" required value="${localInput(now + 3_600_000, r.timezone)}">
          <button type="submit" class="btn">Snooze</button>
        </form>
      </div>
    </details>
    ${r.status === "closed"
      ? html`<form method="post" action="${post("reopen")}">${p.csrf}${back}<button type="submit" class="btn">Reopen</button></form>`
      : html`<form method="post" action="${post("close")}">${p.csrf}${back}<button type="submit" class="btn" data-key="e">Close</button></form>`}
    ${r.status === "snoozed" ? html`<form method="post" action="${post("reopen")}">${p.csrf}${back}<button type="submit" class="btn">Unsnooze</button></form>` : null}
  </div>`;
}

export function paneHtml(p: PaneData, now: number): Html {
  const r = p.row;
  const l = p.lead;
  const zone = l.timezone;
  return html`<section class="inbox-pane" id="pane" aria-labelledby="h-pane" data-conversation="${r.id}" data-lead="${l.id}">
    <p class="pane-back"><a href="${inboxHref(p.state)}#conv-${r.id}">← Conversations</a></p>
    <header class="pane-head">
      <h2 id="h-pane" tabindex="-1">${conversationName(r)}</h2>
      <div class="pane-who">
        ${contactLinks(l)}
        <a href="/console/leads/${l.id}">Lead page (queue dial, details)</a>
      </div>
      <div class="pane-status" id="pane-status"><span class="badge">${STATUS_WORDS[r.status]}</span>
        ${r.assignee ? html`<span>Assigned to ${r.assignee_name || r.assignee}</span>` : html`<span class="muted">Unassigned</span>`}${badges(r)}</div>
    </header>
    ${actions(p, now)}
    <div class="pane-timeline" id="pane-timeline" tabindex="0" role="region" aria-label="Timeline">
      ${p.entries.length > 0 ? olderLink(l.id, p.older, p.older === null ? null : `${inboxHref(p.state, { open: r.id, before: p.older })}#pane-timeline`) : null}
      ${p.mark === null
        ? html`<p class="muted">Older entries. <a href="${inboxHref(p.state, { open: r.id })}#composer">Back to the newest</a></p><ol class="timeline">${entriesHtml(p.entries, zone, p.names)}</ol>`
        : html`<ol id="timeline" class="timeline" aria-label="Messages, calls and events, oldest first" data-mark="${p.mark}" data-src="/console/api/leads/${l.id}/timeline">${entriesHtml(p.entries, zone, p.names)}</ol>`}
      ${p.entries.length === 0 ? html`<p class="empty" id="timeline-empty">Nothing yet.</p>` : null}
    </div>
    ${p.mark === null
      ? null
      : composerHtml({ ...p.composer, action: `/console/inbox/${r.id}/send`, extra: stateFields(p.state), csrf: p.csrf })}
    <p class="muted pane-updated">Last activity ${when(r.last_activity_at, zone)}.</p>
  </section>`;
}
