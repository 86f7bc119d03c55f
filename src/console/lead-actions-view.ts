// The lead page's actions on the lead (issue 29, "acting on the lead"), as pure functions of their
// data: its open callbacks with a cancel button each, the form that schedules one, and the choice
// of a calendar to book on the lead's behalf. Both forms sit collapsed in the side column (the
// timeline and its composer stay the page's main thing on a phone); a refused callback opens its
// form again with the values kept and the reason in words.
import type { LeadCalendar } from "../booking/on-behalf";
import type { Callback } from "../workspace/callbacks";
import { NOTE_MAX } from "../workspace/callbacks";
import { html, raw, when, type Html } from "./html";

/** A callback form as posted (kept when refused), and the refusal in words. */
export interface CallbackFormState {
  at: string;
  note: string;
  assignee: string;
  dial: boolean;
  refusal: string;
}

export interface LeadActions {
  leadId: number;
  /** The organization's zone: the callback's time is read in it. */
  zone: string;
  /** Scheduled or due, soonest first. */
  callbacks: Callback[];
  /** Who a callback may be for: the console users of the lead's organization. */
  users: { id: string; name: string }[];
  /** The assignee the form offers first: the conversation's, else the viewer. */
  defaultAssignee: string | null;
  calendars: LeadCalendar[];
  /** A refused callback, put back into its form. */
  form: CallbackFormState | null;
}

const STATUS_WORDS: Record<string, string> = { scheduled: "Scheduled", due: "Due now" };

function callbackItem(a: LeadActions, cb: Callback, csrf: Html): Html {
  return html`<li class="callback" id="callback-${cb.id}"><div><strong>${when(cb.due_at, a.zone)}</strong>
    <span class="badge ${cb.status === "due" ? "badge-warn" : "badge-ok"}">${STATUS_WORDS[cb.status] ?? cb.status}</span>${cb.dial ? html` <span class="badge">with a dial</span>` : null}
    <div class="muted">for ${cb.assignee_name || cb.assignee || "nobody"}</div>
    ${cb.note ? html`<div class="tl-body">${cb.note}</div>` : null}</div>
    <div class="callback-buttons">${cb.status === "due"
      ? html`<form method="post" action="/console/callbacks/${cb.id}/done" class="inline-form">${csrf}<input type="hidden" name="from" value="lead">
      <button type="submit" class="btn btn-small" aria-label="Mark the callback of ${when(cb.due_at, a.zone)} done">Done</button></form>`
      : null}
    <form method="post" action="/console/callbacks/${cb.id}/cancel" class="inline-form">${csrf}<input type="hidden" name="from" value="lead">
      <button type="submit" class="btn btn-small" aria-label="Cancel the callback of ${when(cb.due_at, a.zone)}">Cancel</button></form></div>
  </li>`;
}

function callbackForm(a: LeadActions, csrf: Html): Html {
  const f = a.form;
  const chosen = f ? f.assignee : (a.defaultAssignee ?? "");
  return html`<details class="action-form" id="callback-form"${f ? raw(" open") : ""}><summary>Schedule a callback</summary>
    <form method="post" action="/console/leads/${a.leadId}/callbacks">${csrf}
      ${f?.refusal ? html`<p class="notice notice-error" role="alert" id="callback-refusal">${f.refusal}</p>` : null}
      <p><label for="cb-at">Date and time (${a.zone})</label><br>
        <input id="cb-at" name="at" type="datetime-local" required value="${f?.at ?? ""}"></p>
      <p><label for="cb-assignee">For</label><br>
        <select id="cb-assignee" name="assignee">${a.users.map(
          (u) => html`<option value="${u.id}"${u.id === chosen ? raw(" selected") : ""}>${u.name}</option>`,
        )}</select></p>
      <p><label for="cb-note">Note (optional)</label><br>
        <textarea id="cb-note" name="note" rows="2" maxlength="${NOTE_MAX}">${f?.note ?? ""}</textarea></p>
      <p><label><input type="checkbox" name="dial" value="yes"${f?.dial ? raw(" checked") : ""}> Also queue a dial at that time for the person it is for</label></p>
      <p><button type="submit" class="btn btn-primary">Schedule</button></p>
    </form></details>`;
}

function bookForm(a: LeadActions): Html {
  if (a.calendars.length === 0) return html`<p class="muted" id="book-none">No calendar of this organization has a booking link.</p>`;
  return html`<details class="action-form" id="book-form"><summary>Book an appointment</summary>
    <form method="get" action="/console/leads/${a.leadId}/book">
      <p><label for="book-calendar">Calendar</label><br>
        <select id="book-calendar" name="calendar">${a.calendars.map((c) => html`<option value="${c.id}">${c.name || `Calendar ${c.id}`} (${c.timezone})</option>`)}</select></p>
      <p><button type="submit" class="btn">See open times</button></p>
    </form></details>`;
}

/** The side column's card: callbacks, then booking. */
export function leadActionsHtml(a: LeadActions, csrf: Html): Html {
  return html`<section class="card" aria-labelledby="h-actions"><h2 id="h-actions">Callbacks and booking</h2>
    ${a.callbacks.length === 0
      ? html`<p class="empty" id="callbacks-none">No callback scheduled.</p>`
      : html`<ul class="plain" id="callbacks">${a.callbacks.map((cb) => callbackItem(a, cb, csrf))}</ul>`}
    ${callbackForm(a, csrf)}
    ${bookForm(a)}
  </section>`;
}
