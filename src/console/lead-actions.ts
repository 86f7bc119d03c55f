// Acting on the lead from its page (issue 29): schedule a callback, cancel one or mark it done, and
// book an appointment on the lead's behalf. Plain forms (no JavaScript needed), each through its
// feature's service with the viewer's Actor: scheduleCallback / closeCallback
// (src/workspace/callbacks.ts) and bookOnBehalf (src/booking/on-behalf.ts), all audited and
// confined to the viewer's organization in SQL (another organization's lead, callback or calendar
// is the missing one's 404, and nothing changes). A refused callback comes back on its form with
// the values kept and the reason in words; a booking comes back as the lead's page with a message
// holding the reschedule link ready in its composer, which sends through the one send path.
import { Type as t } from "@sinclair/typebox";
import { behalfSlots, bookOnBehalf } from "../booking/on-behalf";
import type { Slot } from "../booking/slots";
import { AppError } from "../errors";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { idText } from "../http/fields";
import { idParam, type Route } from "../http/route";
import type { LeadProfile } from "../leads/profile";
import { closeCallback, findCallback, NOTE_MAX, scheduleCallback } from "../workspace/callbacks";
import { FURTHEST_MS, parseWall, zoneOr } from "../workspace/snooze";
import { instantOf, wallOf } from "../zone";
import { audit } from "./audit";
import { composerFacts } from "./composer-data";
import { consoleHtml, csrfField, html, notice, seeOther, when, type Html } from "./html";
import { leadOr404, leadResponse } from "./lead";
import type { CallbackFormState } from "./lead-actions-view";
import { leadDisplayName } from "./lead-view";
import { formBody, pageQuery, pageSpec, type Viewer } from "./route";

const CallbackForm = t.Object({
  at: t.Optional(t.String({ description: "YYYY-MM-DDTHH:MM, a wall time in the organization's zone (a datetime-local field)" })),
  note: t.Optional(t.String({ description: `at most ${NOTE_MAX} characters` })),
  assignee: t.Optional(t.String({ description: "a console user of the lead's organization; default the conversation's assignee, else the viewer" })),
  dial: t.Optional(t.String({ description: "yes: queue a dial of the lead for the assignee when the callback comes due" })),
});

const CloseForm = t.Object({
  from: t.Optional(t.String({ description: "work: back to My work; otherwise back to the lead's page" })),
});

const BookQuery = t.Object({
  calendar: t.Optional(t.String({ description: "a calendar of the lead's organization (its id)" })),
  done: t.Optional(t.String({ description: "the result of the last booking attempt" })),
});

const BookForm = t.Object({
  calendar: t.Optional(t.String({ description: "a calendar of the lead's organization (its id)" })),
  epoch: t.Optional(t.String({ description: "the chosen slot's start, Unix seconds (one of the calendar's open slots)" })),
});

/**
 * Why a callback time cannot be used, in words; null when it can. Checked before the service (which
 * would take a skipped wall time as the moment of the jump): a time a clock change skips is refused
 * here, so that nobody is called back at a time they were not told.
 */
export function callbackTimeProblem(text: string, zone: string, now: number): string | null {
  if (text.trim() === "") return "Give the date and the time of the callback.";
  let wall: number;
  try {
    wall = parseWall(text, "at");
  } catch {
    return "That is not a date and a time: give them as the form's field asks (year, month, day, hours, minutes).";
  }
  const at = instantOf(wall, zone);
  if (wallOf(at, zone) !== wall) return `That time does not exist in ${zone}: the clocks go forward then. Choose another time.`;
  if (at <= now) return `That time has passed (it is now ${when(now, zone)} in ${zone}). Choose a later time.`;
  if (at > now + FURTHEST_MS) return "A callback can be at most a year ahead.";
  return null;
}

/** The service's refusals in words (its messages name the field at fault). */
function callbackRefusal(err: AppError): string {
  if (err.code === "not_found")
    return /agent/.test(err.message)
      ? "You can queue a dial only for yourself: choose yourself, or leave the dial unticked."
      : "Choose someone of the lead's organization for the callback.";
  if (err.message.startsWith("note:")) return `The note is too long: at most ${NOTE_MAX} characters.`;
  if (err.message.startsWith("dial:")) return "A callback with a dial needs someone it is for: choose a person, or leave the dial unticked.";
  if (err.message.startsWith("at:")) return "Choose a time in the future, at most a year ahead.";
  return "The callback could not be scheduled: check the form.";
}

export function leadActionRoutes(deps: Deps): Route[] {
  const closeRoute = (to: "done" | "cancelled", id: string, verb: string) =>
    defineRoute(
      deps,
      pageSpec(deps, {
        id,
        summary: `${verb} a callback (audited callback.${to === "done" ? "done" : "cancel"}; its pending job dropped)`,
        description: "Form: from (`work` goes back to My work, else the lead's page). A callback done or cancelled already changes nothing.",
        method: "POST",
        path: `/console/callbacks/{id}/${to === "done" ? "done" : "cancel"}`,
        params: idParam,
        body: formBody(CloseForm),
      }),
      async ({ params: cbId, body: form }, { grant: viewer }) => {
        const cb = await findCallback(deps.sql, viewer.actor, cbId);
        if (!cb) throw new AppError("not_found");
        const { changed } = await closeCallback(deps.sql, viewer.actor, cbId, to, deps.clock.now());
        const done = !changed ? "callback_closed" : to === "done" ? "callback_done" : "callback_cancelled";
        return seeOther(form.from === "work" ? `/console/my-work?done=${done}` : `/console/leads/${cb.lead_id}?done=${done}`);
      },
    );
  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleLeadCallback",
        summary: "Schedule a callback of the lead (scheduleCallback: audited, its job queued)",
        description:
          "Form: at (a wall time in the organization's zone), note, assignee, dial (`yes`). A time past, more than a year ahead, or skipped by a clock " +
          "change, an assignee outside the lead's organization, a dial without an assignee (or an agent's dial for someone else) come back on the form, kept, with the reason.",
        method: "POST",
        path: "/console/leads/{id}/callbacks",
        params: idParam,
        body: formBody(CallbackForm),
      }),
      async ({ params: id, body: form }, { grant: viewer }) => {
        const lead = await leadOr404(deps, viewer, id);
        const now = deps.clock.now();
        const state: CallbackFormState = { at: form.at ?? "", note: form.note ?? "", assignee: form.assignee ?? "", dial: form.dial === "yes", refusal: "" };
        let refusal = callbackTimeProblem(state.at, zoneOr(lead.timezone), now);
        if (refusal === null) {
          try {
            await scheduleCallback(deps.sql, viewer.actor, { leadId: id, at: state.at, note: state.note, assignee: state.assignee || null, dial: state.dial }, now);
          } catch (err) {
            if (!(err instanceof AppError) || (err.code !== "invalid_input" && err.code !== "not_found")) throw err;
            refusal = callbackRefusal(err);
          }
        }
        if (refusal !== null) return leadResponse(deps, viewer, id, {}, null, { ...state, refusal });
        return seeOther(`/console/leads/${id}?done=callback_scheduled`);
      },
    ),
    closeRoute("cancelled", "consoleCallbackCancel", "Cancel"),
    closeRoute("done", "consoleCallbackDone", "Mark done"),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleLeadBookPage",
        summary: "The open times of a calendar of the lead's organization, to book one on the lead's behalf",
        description: "Query: calendar (its id). A calendar of another organization, or one without a booking link, is the missing one's 404.",
        method: "GET",
        path: "/console/leads/{id}/book",
        params: idParam,
        query: pageQuery(BookQuery),
      }),
      async ({ params: id, query: q }, { grant: viewer }) => {
        const lead = await leadOr404(deps, viewer, id);
        const calendarId = idText(q.calendar);
        if (calendarId === null) return seeOther(`/console/leads/${id}`);
        const found = await behalfSlots(deps.sql, viewer.actor, lead, calendarId, deps.clock.now());
        if (!found) throw new AppError("not_found");
        const text = BOOK_DONE[q.done ?? ""];
        return consoleHtml(deps, viewer, {
          title: `Book for ${leadDisplayName(lead)}`,
          nav: "leads",
          styles: ["lead.css"],
          body: bookBody(lead, found.calendar, found.slots, csrfField(viewer), text ? notice(text, "error") : null),
        });
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleLeadBook",
        summary: "Book an appointment for the lead (the booking engine's rules, appointment.booked, automations, a reschedule token; audited)",
        description:
          "Form: calendar, epoch (one of its open slots). The lead exists: no lead is matched or made. Answered with the lead's page, a message " +
          "with the reschedule link ready in its composer; a slot taken meanwhile or not offered goes back to the open times.",
        method: "POST",
        path: "/console/leads/{id}/book",
        params: idParam,
        body: formBody(BookForm),
      }),
      async ({ params: id, body: form }, { grant: viewer }) => {
        const lead = await leadOr404(deps, viewer, id);
        const calendarId = idText(form.calendar);
        if (calendarId === null) throw new AppError("not_found");
        const epoch = idText(form.epoch) ?? 0;
        const by = { actor: viewer.actor, name: viewer.user.name || viewer.user.email };
        const booked = await bookOnBehalf(deps.sql, by, lead, calendarId, epoch, deps.clock.now(), deps.config.baseUrl, (tx, apptId) =>
          audit(tx, viewer.actor, "appointment.book", `lead:${id}`, { appt_id: apptId, calendar_id: calendarId, epoch }, lead.org_id),
        );
        if (booked === null) throw new AppError("not_found");
        if (!booked.ok) {
          const done = booked.error === "already_booked" ? "already" : booked.error === "bad_epoch" && epoch === 0 ? "pick" : "taken";
          return seeOther(`/console/leads/${id}/book?calendar=${calendarId}&done=${done}`);
        }
        // The reschedule link exists only now (the token is stored hashed): it is offered as a message
        // ready in the composer, on a channel the lead can be reached on, sent only if the person sends it.
        const facts = await composerFacts(deps, viewer, lead);
        const channel = !facts.blocked.sms ? "sms" : !facts.blocked.email ? "email" : null;
        if (channel === null) return leadResponse(deps, viewer, id, { done: "appointment_booked_unreachable" }, null);
        const body = `Your appointment: ${booked.label}. To change it: ${booked.reschedule_url}`;
        return leadResponse(deps, viewer, id, { done: "appointment_booked_link" }, { channel, subject: "Your appointment", body, refusal: "" });
      },
    ),
  ];
}

const BOOK_DONE: Record<string, string> = {
  pick: "Choose one of the open times.",
  taken: "That time was just taken or is no longer offered: choose another.",
  already: "The lead already has this time in this calendar (the form was sent twice): see the lead's appointments.",
};

function bookBody(lead: LeadProfile, calendar: { id: number; name: string; timezone: string }, slots: Slot[], csrf: Html, shown: Html | null): Html {
  const days = new Map<string, Slot[]>();
  for (const s of slots) days.set(s.dayKey, [...(days.get(s.dayKey) ?? []), s]);
  return html`<p><a href="/console/leads/${lead.id}">← ${leadDisplayName(lead)}</a></p>
  ${shown}
  <p>${calendar.name || `Calendar ${calendar.id}`}: times in <strong>${calendar.timezone}</strong>, as the public booking page offers them.</p>
  ${slots.length === 0
    ? html`<p class="empty" id="no-slots">No open time in this calendar's horizon.</p>`
    : html`<form method="post" action="/console/leads/${lead.id}/book">${csrf}
    <input type="hidden" name="calendar" value="${calendar.id}">
    ${[...days.values()].map(
      (list) => html`<fieldset class="slot-day"><legend>${list[0].day}</legend><div class="slots">${list.map(
        (s) => html`<label><input type="radio" name="epoch" value="${s.epoch}" required> ${s.time}</label>`,
      )}</div></fieldset>`,
    )}
    <p><button type="submit" class="btn btn-primary">Book for ${leadDisplayName(lead)}</button></p>
  </form>`}`;
}
