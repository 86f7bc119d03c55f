// The one composer of the console (the lead page and the inbox's reading pane), docked under the
// newest entry of the timeline: it knows the channel — no subject for SMS (a CSS rule on the
// chosen option, so it holds without JavaScript), an SMS's characters and segments with what a
// text costs the organization (assets/composer.js), a channel the lead cannot be reached on
// disabled with the reason, and in quiet hours when a text will go. A refused send comes back with
// the draft in the box and the reason in the send path's words (send-words.ts). Saved replies: a
// "Saved replies" menu of links that render the composer filled with the reply merged for this
// lead (no JavaScript needed); assets/composer.js makes it a searchable list (typing `/` in an
// empty composer opens it) that fills the composer in place from the declared preview route,
// whose address is the textarea's `data-replies`.
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
  /** The organization's saved replies for the picker, with where each fills the composer without JavaScript. */
  replies?: ComposerReplies | null;
}

export interface ComposerReplies {
  /** The preview route for this lead (JSON: `?reply=<id>&channel=<channel>`). */
  src: string;
  list: { id: number; name: string; channels: readonly ComposerChannel[] }[];
  /** The page with the composer filled with reply `id` on `channel` (the no-JavaScript menu). */
  href: (id: number, channel: ComposerChannel) => string;
}

/** The saved-reply menu: links without JavaScript; composer.js adds the filter box and keys. */
function repliesMenu(r: ComposerReplies, usable: readonly ComposerChannel[]): Html {
  const items = r.list
    .map((x) => ({ ...x, first: x.channels.find((c) => usable.includes(c)) }))
    .filter((x) => x.first !== undefined);
  return html`<details class="composer-replies" id="composer-replies">
    <summary class="btn" aria-keyshortcuts="/">Saved replies</summary>
    <div class="replies-menu" id="replies-menu">
      ${items.length === 0
        ? html`<p class="muted">No saved replies for this lead's channels yet.</p>`
        : html`<ul class="replies-links" id="replies-links">${items.map(
            (x) => html`<li data-id="${x.id}" data-name="${x.name}" data-channels="${x.channels.join(" ")}"><a href="${r.href(x.id, x.first!)}">${x.name}</a> <span class="muted">${x.channels
              .map((c) => CHANNELS.find((ch) => ch.id === c)!.label.split(" ")[0])
              .join(", ")}</span></li>`,
          )}</ul>`}
    </div>
  </details>`;
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
    <textarea id="body" name="body" rows="3" required placeholder="${c.replies ? "Write a reply… (/ for saved replies, Ctrl+Enter sends)" : "Write a reply… (Ctrl+Enter sends)"}" data-replies="${c.replies?.src ?? ""}"
      aria-describedby="composer-count">${c.draft?.body ?? ""}</textarea>
    <div class="composer-foot">
      ${c.replies ? repliesMenu(c.replies, usable.map((ch) => ch.id)) : null}
      <span id="composer-count" class="muted" aria-live="polite" data-sms-cost="${c.smsCost === null ? "" : String(c.smsCost)}">Merge fields such as {first_name} are filled in.</span>
      <button type="submit" class="btn btn-primary">Send</button>
    </div>
  </form>`;
}
