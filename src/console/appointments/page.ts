// The appointments page's body, from its data: filters (calendar, start dates, status), the list
// with each appointment's status and the actions open to it now, as buttons of plain forms.
import { actionsFor, APPOINTMENT_STATUSES, type StatusAction, type StatusReason } from "../../booking/states";
import { html, notice, when, type Html } from "../html";
import type { AppointmentItem } from "./queries";

/** The filter as the viewer typed it (the form shows it back). */
export interface FilterForm {
  calendar: string;
  from: string;
  to: string;
  status: string;
}

export interface AppointmentsView {
  items: AppointmentItem[];
  calendars: { id: number; name: string }[];
  form: FilterForm;
  /** What the date fields mean: "in America/Chicago", "in UTC". */
  zoneNote: string;
  /** The next page's address, when there is one. */
  next: string | null;
  /** This page's address: where an action comes back to. */
  back: string;
  now: number;
  csrf: Html;
  done: string | null;
  error: string | null;
}

export const STATUS_TEXT: Record<string, string> = {
  pending: "Pending",
  confirmed: "Confirmed",
  cancelled: "Cancelled",
  completed: "Completed",
  no_show: "No-show",
};

const BADGE: Record<string, string> = {
  pending: "badge badge-warn",
  confirmed: "badge badge-ok",
  cancelled: "badge",
  completed: "badge badge-ok",
  no_show: "badge badge-bad",
};

const BUTTON: Record<StatusAction, { text: string; cls: string }> = {
  confirm: { text: "Confirm", cls: "btn btn-primary" },
  cancel: { text: "Cancel", cls: "btn btn-danger" },
  complete: { text: "Completed", cls: "btn" },
  no_show: { text: "No-show", cls: "btn" },
};

/** The notice after an action (`?done=` / `?error=` of the redirect): fixed texts, never the query's. */
export const DONE_TEXT: Record<StatusAction, string> = {
  confirm: "Appointment confirmed.",
  cancel: "Appointment cancelled; its slot is offered again on the booking page.",
  complete: "Appointment marked completed.",
  no_show: "Appointment marked as a no-show.",
};

export const ERROR_TEXT: Record<Exclude<StatusReason, "not_found">, string> = {
  not_allowed: "That change does not apply to the appointment's status (it may have changed meanwhile).",
  already_started: "The appointment has started: mark it completed or no-show instead.",
  not_started: "The appointment has not started yet: it can be confirmed or cancelled.",
};

/** Ten digits as (512) 555-0142; anything else as stored. */
const phoneText = (p: string) => (/^[0-9]{10}$/.test(p) ? `(${p.slice(0, 3)}) ${p.slice(3, 6)}-${p.slice(6)}` : p);

function filters(v: AppointmentsView): Html {
  const f = v.form;
  return html`<form class="filters" method="get" action="/console/appointments">
  <div><label for="f-calendar">Calendar</label>
    <select id="f-calendar" name="calendar"><option value="">All calendars</option>${v.calendars.map(
      (c) => html`<option value="${c.id}"${String(c.id) === f.calendar ? html` selected` : ""}>${c.name || `Calendar ${c.id}`}</option>`,
    )}</select></div>
  <div><label for="f-from">From</label><input id="f-from" type="date" name="from" value="${f.from}"></div>
  <div><label for="f-to">To</label><input id="f-to" type="date" name="to" value="${f.to}"></div>
  <div><label for="f-status">Status</label>
    <select id="f-status" name="status"><option value="">Any status</option>${APPOINTMENT_STATUSES.map(
      (s) => html`<option value="${s}"${s === f.status ? html` selected` : ""}>${STATUS_TEXT[s]}</option>`,
    )}</select></div>
  <div><button class="btn" type="submit">Show</button></div>
</form>
<p class="muted">Dates and times ${v.zoneNote}; "To" includes that day.</p>`;
}

function actionsCell(v: AppointmentsView, a: AppointmentItem): Html {
  const open = actionsFor(a.status, a.slot_epoch * 1000, v.now);
  if (open.length === 0) return html`<span class="muted">—</span>`;
  const who = `${a.name}, ${when(a.slot_epoch * 1000, a.zone)}`;
  // A form per action: a cancellation asks first (console.js reads data-confirm), the others do not.
  return html`<div class="row-actions">${open.map(
    (act) => html`<form method="post" action="/console/appointments/${a.id}/status"${act === "cancel" ? html` data-confirm="Cancel the appointment of ${who}? Its slot is offered again."` : ""}>${v.csrf}<input type="hidden" name="back" value="${v.back}"><button class="${BUTTON[act].cls}" type="submit" name="action" value="${act}" aria-label="${BUTTON[act].text}: ${who}">${BUTTON[act].text}</button></form>`,
  )}</div>`;
}

function row(v: AppointmentsView, a: AppointmentItem): Html {
  return html`<tr>
  <td>${when(a.slot_epoch * 1000, a.zone)}</td>
  <td>${a.calendar || `Calendar ${a.calendar_id}`}</td>
  <td>${a.lead_id === null ? a.name : html`<a href="/console/leads/${a.lead_id}">${a.name}</a>`}<br><span class="muted">${[phoneText(a.phone), a.email].filter(Boolean).join(" · ")}</span></td>
  <td><span class="${BADGE[a.status] ?? "badge"}">${STATUS_TEXT[a.status] ?? a.status}</span></td>
  <td>${actionsCell(v, a)}</td>
</tr>`;
}

export function appointmentsBody(v: AppointmentsView): Html {
  return html`${v.done ? notice(v.done) : ""}${v.error ? notice(v.error, "error") : ""}
${filters(v)}
${v.items.length === 0
    ? html`<p class="empty">No appointments match.</p>`
    : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Appointments"><table class="data">
<caption class="visually-hidden">Appointments by start time</caption>
<thead><tr><th scope="col">Starts</th><th scope="col">Calendar</th><th scope="col">Person</th><th scope="col">Status</th><th scope="col">Actions</th></tr></thead>
<tbody>${v.items.map((a) => row(v, a))}</tbody>
</table></div>`}
${v.next ? html`<nav class="pager" aria-label="Pages"><a class="btn" href="${v.next}">Later appointments</a></nav>` : ""}`;
}
