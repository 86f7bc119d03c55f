// A lead's page (/console/leads/{id}): its fields, timeline (polled for new entries), composer,
// do-not-contact list, consent, appointments, DNI first touch, dial (with the lead's local time), and
// its callbacks and booking on its behalf (their forms: lead-actions.ts). Every read is confined to the viewer's
// organization in SQL; another organization's lead is the same 404 as a missing one. Every change
// goes through the feature's own service with the viewer's Actor and writes its audit row.
import { randomUUID } from "node:crypto";
import { Type as t } from "@sinclair/typebox";
import { leadAppointments } from "../booking/by-lead";
import { cursorText, leadTimeline, markText, parseCursor, parseMark } from "../conversations/timeline";
import { localCallTime } from "../cti/calling-window";
import { agentsOf } from "../cti/queries";
import { queueDialFor } from "../cti/service";
import { leadFirstTouch } from "../dni/attribution";
import { AppError } from "../errors";
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { idParam, type Route } from "../http/route";
import { CONSENT_REASON_MAX, CONSENT_VALUES, leadConsent, setConsent, type ConsentValue } from "../leads/consent";
import { addToDnc, dncAddress, dncStatus, DNC_KINDS, DNC_NOTE_MAX } from "../leads/dnc";
import { leadProfile, type LeadProfile } from "../leads/profile";
import { parseSendInput, type MessageResult, type SendInput } from "../messages/model";
import { recipientZone } from "../messages/quiet-hours";
import { sendEnv, sendMessage, type Recorded } from "../messages/service";
import { actorNames } from "./actor-names";
import { audit } from "./audit";
import type { ComposerChannel } from "./composer";
import { composerFacts, composerOf, composerReplies, replyDraft, replyText } from "./composer-data";
import { consoleHtml, csrfField, HTMX_CONFIG, notice, seeOther } from "./html";
import { LEAD_ACTION_NOTICES, leadActionsOf } from "./lead-actions-data";
import { leadActionsHtml, type CallbackFormState } from "./lead-actions-view";
import { entriesHtml, leadBody, leadDisplayName } from "./lead-view";
import { formBody, jsonSpec, pageQuery, pageSpec, strictJson, type Viewer } from "./route";
import { sentQuery, sentWords } from "./send-words";

/**
 * The entries a page of the timeline shows; older ones are a link away. A page of 50 answers in a
 * quarter of the time 200 took (bench/console.ts, a 600-entry timeline) and is what fits a screen
 * or two; "Show older entries" walks the rest, however long.
 */
export const TIMELINE_SHOWN = 50;
/** The most new entries one poll brings (a page left open through a busy hour catches up in one). */
export const TIMELINE_POLLED = 200;

const LeadQuery = t.Object({
  before: t.Optional(t.String({ description: "show the timeline's entries older than this one (its older-entries link)" })),
  sent: t.Optional(t.String({ description: "the result of the composer's last send, as its redirect states it" })),
  until: t.Optional(t.String({ description: "a deferred send's Unix time" })),
  done: t.Optional(t.String({ description: "the result of the page's last form" })),
  dial: t.Optional(t.String({ description: "the dial just queued" })),
  reply: t.Optional(t.String({ description: "a saved reply's id: the composer filled with it, merged for the lead (the saved-reply menu without JavaScript)" })),
  reply_channel: t.Optional(t.String({ description: "the channel of that reply: sms, email or note" })),
});

/** The composer's form (the inbox's reply sends the same fields, its channel SMS). */
export const SendForm = t.Object({
  channel: t.Optional(t.String({ description: "sms, email or note" })),
  subject: t.Optional(t.String()),
  body: t.Optional(t.String()),
  operation_id: t.Optional(t.String({ description: "made when the form was rendered: a double submit sends once" })),
});

const ConsentForm = t.Object({
  channel: t.Optional(t.String({ description: "sms or email" })),
  consent: t.Optional(t.String({ description: CONSENT_VALUES.join(", ") })),
  reason: t.Optional(t.String({ description: "required to change a channel that opted out" })),
});

const DialForm = t.Object({
  agent: t.Optional(t.String({ description: "the agent's user id" })),
  confirm_outside: t.Optional(t.String({ description: "yes: queue it though the lead's local time is outside the calling window" })),
});

const DncForm = t.Object({
  kind: t.Optional(t.String({ description: "phone or email" })),
  note: t.Optional(t.String()),
});

export async function leadOr404(deps: Deps, viewer: Viewer, id: number): Promise<LeadProfile> {
  const lead = await leadProfile(deps.sql, viewer.actor.orgId, id);
  if (!lead) throw new AppError("not_found");
  return lead;
}

/** A new idempotency identity for a composer: made when the form is rendered, so a double submit sends once. */
export const newOperationId = () => `console-${randomUUID()}`;

/** The zone a quiet-hours deferral is stated in: the recipient's, as the gate computes it (the profile carries its organization's zone). */
export const recipientZoneOf = (lead: LeadProfile): string => recipientZone(lead.state, lead.org_id === null ? "" : lead.timezone);

/**
 * A send from the console: the one send function, as the viewer, its audit row written in the
 * transaction that records the message (a replay of the same form or a refusal records nothing and
 * audits nothing). A reply answers the lead's unhandled inbound messages, which leave the inbox (in
 * their own transaction, with its audit row).
 */
export async function consoleSend(
  deps: Deps,
  viewer: Viewer,
  lead: { id: number; org_id: number | null },
  form: Readonly<Record<string, string | undefined>>,
): Promise<{ result: MessageResult; channel: string } | { error: string }> {
  const leadId = lead.id;
  let input: SendInput;
  try {
    input = parseSendInput({
      lead_id: leadId,
      channel: form.channel,
      body: form.body ?? "",
      subject: form.channel === "email" ? form.subject || null : null,
      operation_id: form.operation_id,
    });
  } catch (err) {
    if (err instanceof AppError)
      return { error: err.code === "bad_operation_id" ? "The form was incomplete: reload the page and try again." : "Choose SMS, email or note." };
    throw err;
  }
  const audited: Recorded = (tx, messageId, deferUntil) =>
    audit(
      tx,
      viewer.actor,
      "message.send",
      `lead:${leadId}`,
      {
        channel: input.channel,
        operation_id: input.operationId,
        message_id: messageId,
        ...(deferUntil !== null ? { defer_until: Math.floor(deferUntil / 1000) } : {}),
      },
      lead.org_id,
    );
  let result: MessageResult;
  try {
    result = await sendMessage(deps.sql, viewer.actor, input, deps.clock.now(), sendEnv(deps), undefined, audited);
  } catch (err) {
    if (err instanceof AppError && err.code === "operation_id_conflict") return { error: "This form was already used for another message: reload the page." };
    throw err;
  }
  return { result, channel: input.channel };
}

const TimelineAnswer = t.Object(
  {
    ok: t.Literal(true),
    after: t.String({ description: "the mark to send next time" }),
    count: t.Integer({ minimum: 0 }),
    html: t.String({ description: "the new entries as list items, rendered as the page renders them" }),
  },
  { additionalProperties: false },
);

const ReplyAnswer = t.Union([
  t.Object(
    {
      ok: t.Literal(true),
      channel: t.Union([t.Literal("sms"), t.Literal("email"), t.Literal("note")]),
      subject: t.String({ description: "an email's merged subject; empty otherwise" }),
      body: t.String({ description: "the merged text (an email's as text)" }),
    },
    { additionalProperties: false },
  ),
  t.Object({ ok: t.Literal(false), reason: t.Literal("not_for_channel") }, { additionalProperties: false }),
]);

export type LeadQueryFields = { before?: string; sent?: string; until?: string; done?: string; reply?: string; reply_channel?: string };

/** A refused send's draft, put back into the composer with the reason. */
export interface LeadDraft {
  channel: ComposerChannel;
  subject: string;
  body: string;
  refusal: string;
}

/**
 * The lead's page (its query's notices; `draft`: a refused send, whose text comes back, or a
 * message made ready to send; `callback`: a refused callback, put back into its form).
 */
export async function leadResponse(
  deps: Deps,
  viewer: Viewer,
  id: number,
  q: LeadQueryFields,
  draft: LeadDraft | null,
  callback: CallbackFormState | null = null,
): Promise<Response> {
  const lead = await leadOr404(deps, viewer, id);
  const before = parseCursor(q.before ?? null);
  const [timeline, consent, appointments, firstTouch, agents, dnc, facts, actions, picked] = await Promise.all([
    leadTimeline(deps.sql, viewer.actor.orgId, id, TIMELINE_SHOWN, null, before),
    leadConsent(deps.sql, id),
    leadAppointments(deps.sql, id),
    leadFirstTouch(deps.sql, id),
    viewer.user.role === "agent"
      ? Promise.resolve([{ id: viewer.user.id, name: viewer.user.name }])
      : lead.org_id === null
        ? Promise.resolve([])
        : agentsOf(deps.sql, lead.org_id),
    dncStatus(deps.sql, viewer.actor, id),
    composerFacts(deps, viewer, lead),
    leadActionsOf(deps, viewer, lead, callback),
    draft === null ? replyDraft(deps, viewer, id, q.reply, q.reply_channel) : Promise.resolve(null),
  ]);
  if (!timeline || !dnc) throw new AppError("not_found");
  const sent = sentWords(q.sent, q.until, recipientZoneOf(lead));
  const done = DONE[q.done ?? ""];
  const shown = sent ? notice(sent.text, sent.kind) : done ? notice(done.text, done.kind) : null;
  return consoleHtml(deps, viewer, {
    title: leadDisplayName(lead),
    nav: "leads",
    scripts: ["htmx.min.js", "timeline.js", "composer.js", "older.js"],
    head: HTMX_CONFIG,
    styles: ["lead.css", "inbox.css"],
    body: leadBody(
      {
        lead,
        entries: timeline.entries,
        names: await actorNames(deps.sql, timeline.entries),
        mark: before === null ? markText(timeline.mark) : null,
        older: timeline.older === null ? null : cursorText(timeline.older),
        consent,
        appointments,
        firstTouch,
        agents,
        composer: composerOf(
          facts,
          newOperationId(),
          draft ?? picked,
          composerReplies(facts, id, (reply, channel) => `/console/leads/${id}?reply=${reply}&reply_channel=${channel}#composer`),
        ),
        csrf: csrfField(viewer),
        notice: shown,
        mayLiftOptOut: viewer.user.role !== "agent",
        dnc,
        callTime: localCallTime(deps.clock.now(), lead),
        actions: leadActionsHtml(actions, csrfField(viewer)),
      },
      viewer.user.role === "agent",
    ),
  });
}

/**
 * A send the send path refused (nothing recorded): its draft and the reason in words, for the
 * composer to show again; null for anything else (sent, queued, a note, or in doubt).
 */
export function refusedDraft(result: MessageResult, form: Readonly<Record<string, string | undefined>>, zone: string): LeadDraft | null {
  if (result.ok || result.reason === undefined || result.reason === "in_progress" || result.reason === "outcome_unknown") return null;
  const channel = (["sms", "email", "note"] as const).find((c) => c === form.channel) ?? "sms";
  const words = sentWords(result.reason, undefined, zone);
  return { channel, subject: form.subject ?? "", body: form.body ?? "", refusal: words?.text ?? "Not sent." };
}

export function leadPageRoutes(deps: Deps): Route[] {
  const page = (path: string) => `/console/leads/{id}${path}`;
  return [
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleLead",
        summary: "A lead: fields, timeline, composer, consent, appointments, first touch, dial",
        method: "GET",
        path: page(""),
        params: idParam,
        query: pageQuery(LeadQuery),
      }),
      async ({ params: id, query: q }, { grant: viewer }) => leadResponse(deps, viewer, id, q, null),
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleLeadSend",
        summary: "Send an SMS or email, or save a note, for the lead (the one send path)",
        method: "POST",
        path: page("/send"),
        params: idParam,
        body: formBody(SendForm),
      }),
      async ({ params: id, body: form }, { grant: viewer }) => {
        const lead = await leadOr404(deps, viewer, id);
        const sent = await consoleSend(deps, viewer, lead, form);
        if ("error" in sent) return seeOther(`/console/leads/${id}?done=form_error`);
        // Refused: the page again, the draft in the composer and the reason above it.
        const draft = refusedDraft(sent.result, form, recipientZoneOf(lead));
        if (draft) return leadResponse(deps, viewer, id, {}, draft);
        return seeOther(`/console/leads/${id}?${sentQuery(sent.result, sent.channel)}`);
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleLeadConsent",
        summary: "Change the lead's consent on a channel (audited)",
        description: `Form: channel, consent, reason. While the channel is opted out (a STOP), only a manager or an admin may change it, with a reason (up to ${CONSENT_REASON_MAX} characters), audited with it.`,
        method: "POST",
        path: page("/consent"),
        params: idParam,
        body: formBody(ConsentForm),
      }),
      async ({ params: id, body: form }, { grant: viewer }) => {
        const lead = await leadOr404(deps, viewer, id);
        const channel = form.channel === "sms" || form.channel === "email" ? form.channel : null;
        const value = CONSENT_VALUES.includes(form.consent as ConsentValue) ? (form.consent as ConsentValue) : null;
        if (channel === null || value === null) return seeOther(`/console/leads/${id}?done=consent_invalid`);
        const reason = (form.reason ?? "").replace(/\s+/g, " ").trim();
        if (reason.length > CONSENT_REASON_MAX) return seeOther(`/console/leads/${id}?done=consent_reason`);
        // After an opt-out only a manager may record a new consent, and says why (issue 27.15).
        const manager = viewer.user.role !== "agent";
        const changed = await deps.sql.begin(async (tx) => {
          const who = { name: viewer.user.name || viewer.user.email, source: `console:${viewer.user.id}`, note: reason };
          const r = await setConsent(tx, id, channel, value, who, new Date(deps.clock.now()), manager && reason !== "");
          if (r.ok) {
            const lifted = r.liftedOptOut ? { lifted_opt_out: true, reason } : {};
            await audit(tx, viewer.actor, "consent.change", `lead:${id}`, { channel, consent: value, leads: r.leads, ...lifted }, lead.org_id);
          }
          return r;
        });
        if (changed.ok) return seeOther(`/console/leads/${id}?done=consent_changed`);
        if (changed.reason === "no_address") return seeOther(`/console/leads/${id}?done=consent_no_address`);
        return seeOther(`/console/leads/${id}?done=${manager ? "consent_reason" : "consent_manager_only"}`);
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleLeadDial",
        summary: "Queue a dial of the lead for an agent (an agent: only to themselves)",
        description:
          "Form: agent, confirm_outside. Outside the lead's calling window (its local 8:00–21:00, or its state's stricter hours) the dial is " +
          "queued only with `confirm_outside=yes` (the page's checkbox), and the audit row says so.",
        method: "POST",
        path: page("/dial"),
        params: idParam,
        body: formBody(DialForm),
      }),
      async ({ params: id, body: form }, { grant: viewer }) => {
        const lead = await leadOr404(deps, viewer, id);
        const agent = form.agent ?? "";
        // Decided when the form arrives, not when the page was drawn: the clock may have crossed an edge since.
        const outside = localCallTime(deps.clock.now(), lead).outsideWindow;
        if (outside && form.confirm_outside !== "yes") return seeOther(`/console/leads/${id}?done=dial_outside_window`);
        const dial = await deps.sql.begin(async (tx) => {
          const d = await queueDialFor(tx, viewer.actor, agent, lead.phone, lead.org_id);
          await audit(tx, viewer.actor, "dial.queue", `lead:${id}`, { dial_id: d.id, agent, ...(outside ? { outside_window: true } : {}) }, lead.org_id);
          return d;
        });
        return seeOther(`/console/leads/${id}?done=dial_queued&dial=${dial.id}`);
      },
    ),
    defineRoute(
      deps,
      pageSpec(deps, {
        id: "consoleLeadDnc",
        summary: "Put the lead's phone or email on its organization's do-not-contact list (audited)",
        description: `Form: kind (phone or email), note (up to ${DNC_NOTE_MAX} characters). Source \`console:<user>\`. Taking an address off the list is \`leadline dnc remove\`.`,
        method: "POST",
        path: page("/dnc"),
        params: idParam,
        body: formBody(DncForm),
      }),
      async ({ params: id, body: form }, { grant: viewer }) => {
        const lead = await leadOr404(deps, viewer, id);
        const kind = DNC_KINDS.find((k) => k === form.kind);
        const address = kind === undefined ? null : dncAddress(kind, kind === "phone" ? lead.phone : lead.email);
        if (kind === undefined || address === null || lead.org_id === null) return seeOther(`/console/leads/${id}?done=dnc_invalid`);
        const note = (form.note ?? "").replace(/\s+/g, " ").trim();
        if (note.length > DNC_NOTE_MAX) return seeOther(`/console/leads/${id}?done=dnc_invalid`);
        const orgId = lead.org_id;
        await deps.sql.begin((tx) => addToDnc(tx, viewer.actor, orgId, [{ kind, address, note }], `console:${viewer.user.id}`, new Date(deps.clock.now())));
        return seeOther(`/console/leads/${id}?done=dnc_added`);
      },
    ),
    defineRoute(
      deps,
      jsonSpec(deps, {
        id: "consoleLeadReply",
        summary: "A saved reply merged for the lead on a channel (the composer's picker fills itself with it)",
        description:
          "The send path's own merge (previewSavedReply): an email's subject and its text. `ok: false` with `not_for_channel` when the reply is not " +
          "for that channel. Another organization's reply or lead is `not_found` like a missing one.",
        method: "GET",
        path: "/console/api/leads/{id}/reply",
        params: idParam,
        query: strictJson(
          t.Object({ reply: t.String({ pattern: "^[0-9]{1,15}$" }), channel: t.Union([t.Literal("sms"), t.Literal("email"), t.Literal("note")]) }, { additionalProperties: false }),
          "query",
        ),
        answer: ReplyAnswer,
      }),
      async ({ params: id, query }, { grant: viewer }) => {
        await leadOr404(deps, viewer, id);
        const text = await replyText(deps, viewer, id, Number(query.reply), query.channel);
        return text === null ? { ok: false as const, reason: "not_for_channel" as const } : { ok: true as const, ...text };
      },
    ),
    defineRoute(
      deps,
      jsonSpec(deps, {
        id: "consoleLeadTimeline",
        summary: "The lead's timeline entries recorded after a mark (the page polls this)",
        description: "`after` is the mark the page or the previous answer gave; the answer's `html` holds the new entries as list items.",
        method: "GET",
        path: "/console/api/leads/{id}/timeline",
        params: idParam,
        query: strictJson(t.Object({ after: t.Optional(t.String({ pattern: "^\\d{1,15}\\.\\d{1,15}\\.\\d{1,15}$" })) }), "query"),
        answer: TimelineAnswer,
      }),
      async ({ params: id, query }, { grant: viewer }) => {
        const lead = await leadOr404(deps, viewer, id);
        const timeline = await leadTimeline(deps.sql, viewer.actor.orgId, id, TIMELINE_POLLED, parseMark(query.after));
        if (!timeline) throw new AppError("not_found");
        return { ok: true, after: markText(timeline.mark), count: timeline.entries.length, html: entriesHtml(timeline.entries, lead.timezone).html };
      },
    ),
  ];
}

/** The notices of the lead page's other forms (`?done=`). */
const DONE: Record<string, { text: string; kind: "ok" | "error" }> = {
  consent_changed: { text: "Consent changed.", kind: "ok" },
  consent_no_address: { text: "The lead has no address on that channel.", kind: "error" },
  consent_invalid: { text: "Choose a channel and a consent value.", kind: "error" },
  consent_manager_only: { text: "The lead opted out of this channel: only a manager can record a new consent.", kind: "error" },
  consent_reason: {
    text: `The lead opted out of this channel: give the reason for the change (up to ${CONSENT_REASON_MAX} characters), e.g. where the lead's new consent is on record.`,
    kind: "error",
  },
  dial_queued: { text: "Dial queued.", kind: "ok" },
  dial_outside_window: { text: "It is outside the lead's calling hours there: tick the box to confirm the call, or queue it later.", kind: "error" },
  dnc_added: { text: "Added to the do-not-contact list.", kind: "ok" },
  lead_updated: { text: "Lead updated.", kind: "ok" },
  lead_created: { text: "Lead created.", kind: "ok" },
  lead_duplicate: { text: "This lead already had that phone on the list: here it is, unchanged.", kind: "ok" },
  dnc_invalid: { text: "The lead has no such address, or the note is too long.", kind: "error" },
  form_error: { text: "The form was incomplete or already used: reload the page and try again.", kind: "error" },
  ...LEAD_ACTION_NOTICES,
};
