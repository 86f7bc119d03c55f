// The one composer of the console (the lead page and the inbox's reading pane), docked under the
// newest entry of the timeline: it knows the channel — no subject for SMS (a CSS rule on the
// chosen option, so it holds without JavaScript), an SMS's characters and segments with what a
// text costs the organization (assets/composer.js), a channel the lead cannot be reached on
// disabled with the reason, and in quiet hours when a text will go. A refused send comes back with
// the draft in the box and the reason in the send path's words (send-words.ts). A saved-reply
// picker (`/`) is another branch's: the textarea's `data-replies` is where it attaches.
import type { ChannelConsent } from "../leads/consent";
import type { DncStatus } from "../leads/dnc";
import { html, raw, type Html } from "./html";
import { timeIn } from "./send-words";

export type ComposerChannel = "sms" | "email" | "note";

export interface ComposerState {
  /** Where the form posts. */
  action: string;
  /** Hidden fields besides the CSRF token and operation id (the inbox's list state). */
  extra?: Html;
  csrf: Html;
  operationId: string;
  /** Why a channel cannot be used now, by channel; absent: usable. */
  blocked: Partial<Record<ComposerChannel, string>>;
  /** When a text sent now would go (the end of the lead's quiet hours), and the zone it is told in. */
  quietUntil: { at: number; zone: string } | null;
  /** What one SMS costs the organization (its billing), or null when not known. */
  smsCost: number | null;
  /** A refused send's draft, put back. */
  draft?: { channel: ComposerChannel; subject: string; body: string } | null;
  /** The refused send's reason in words. */
  refusal?: string | null;
}

const CHANNELS: readonly { id: ComposerChannel; label: string }[] = [
  { id: "sms", label: "SMS" },
  { id: "email", label: "Email" },
  { id: "note", label: "Note (internal)" },
];

/** Why each channel cannot be used: no address, opted out, on the do-not-contact list. */
export function blockedChannels(lead: { phone: string; email: string }, consent: ChannelConsent[], dnc: DncStatus | null): ComposerState["blocked"] {
  const out: ComposerState["blocked"] = {};
  const of = (c: "sms" | "email") => consent.find((x) => x.channel === c);
  if (!/\d{10}/.test(lead.phone.replace(/\D/g, ""))) out.sms = "no usable phone number";
  else if (dnc?.phone) out.sms = "the phone is on the do-not-contact list";
  else if (of("sms")?.consent === "out") out.sms = "the lead opted out of SMS";
  if (!lead.email.includes("@")) out.email = "no email address";
  else if (dnc?.email) out.email = "the email is on the do-not-contact list";
  else if (of("email")?.consent === "out") out.email = "the lead opted out of email";
  return out;
}

export function composerHtml(c: ComposerState): Html {
  const usable = CHANNELS.filter((ch) => !c.blocked[ch.id]);
  const chosen = c.draft?.channel && !c.blocked[c.draft.channel] ? c.draft.channel : (usable[0]?.id ?? "note");
  const reasons = CHANNELS.filter((ch) => c.blocked[ch.id]);
  return html`<form method="post" action="${c.action}" class="composer" id="composer" aria-labelledby="h-compose">
    <h2 id="h-compose" class="visually-hidden">Reply</h2>
    ${c.csrf}${c.extra ?? null}
    <input type="hidden" name="operation_id" value="${c.operationId}">
    ${c.refusal ? html`<p class="notice notice-error" role="alert" id="composer-refusal">${c.refusal} The draft is kept below.</p>` : null}
    <div class="composer-bar">
      <label for="channel">Channel</label>
      <select id="channel" name="channel">${CHANNELS.map(
        (ch) => html`<option value="${ch.id}"${ch.id === chosen ? raw(" selected") : ""}${c.blocked[ch.id] ? raw(" disabled") : ""}>${ch.label}${c.blocked[ch.id] ? ` — unavailable` : ""}</option>`,
      )}</select>
      ${reasons.length > 0
        ? html`<span class="composer-why" id="composer-why">${reasons.map((ch) => html`<span>${ch.label.split(" ")[0]}: ${c.blocked[ch.id]}.</span> `)}</span>`
        : null}
    </div>
    ${c.quietUntil && !c.blocked.sms
      ? html`<p class="composer-quiet" id="composer-quiet">Quiet hours for the lead: a text sent now goes at ${timeIn(c.quietUntil.at, c.quietUntil.zone)} (${c.quietUntil.zone}).</p>`
      : null}
    <div class="composer-subject">
      <label for="subject">Subject</label>
      <input id="subject" name="subject" type="text" maxlength="200" autocomplete="off" value="${c.draft?.subject ?? ""}">
    </div>
    <label for="body" class="visually-hidden">Message</label>
    <textarea id="body" name="body" rows="3" required placeholder="Write a reply… (Ctrl+Enter sends)" data-replies=""
      aria-describedby="composer-count">${c.draft?.body ?? ""}</textarea>
    <div class="composer-foot">
      <span id="composer-count" class="muted" aria-live="polite" data-sms-cost="${c.smsCost === null ? "" : String(c.smsCost)}">Merge fields such as {first_name} are filled in.</span>
      <button type="submit" class="btn btn-primary">Send</button>
    </div>
  </form>`;
}
