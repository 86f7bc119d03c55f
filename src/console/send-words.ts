// Every answer of the send path in words, for the console's composer and inbox replies. The send's
// result travels through the post's redirect as codes (`?sent=<reason>&until=<unix s>`), never as
// text, so a crafted link cannot make the page say something the send path did not.
import type { MessageResult, SendReason } from "../messages/model";
import { clockTime } from "./html";

const REASONS: Record<SendReason, string> = {
  empty_body: "Nothing was sent: the message is empty.",
  no_phone: "Not sent: the lead has no usable phone number.",
  no_email: "Not sent: the lead has no valid email address.",
  do_not_contact: "Not sent: this address is on the organization's do-not-contact list.",
  opted_out: "Not sent: the lead opted out of this channel.",
  no_consent: "Not sent: no consent on this channel (the organization requires explicit consent).",
  provider_not_configured: "Not sent: the organization has no provider set up for this channel.",
  billing_not_configured: "Not sent: billing is not set up for the organization.",
  billing_unavailable: "Not sent: the balance could not be read just now. Try again in a moment.",
  billing_frozen: "Not sent: the organization's billing is frozen.",
  subscription_required: "Not sent: the organization needs a subscription.",
  insufficient_credits: "Not sent: insufficient credits.",
  automation_cap: "Not sent: the organization's daily cap on automation sends is reached.",
  expired: "Not sent: it could not go before its deadline (an appointment's start).",
  provider_error: "Not sent: the provider refused the message.",
  provider_timeout: "Not sent: the provider did not answer in time.",
  provider_unavailable: "Not sent: the provider could not be reached.",
  in_progress: "Still sending: the first attempt is with the provider.",
  outcome_unknown: "Unknown: the send was interrupted while with the provider; it may or may not have gone.",
};

/** The redirect's query for a result. */
export function sentQuery(r: MessageResult, channel: string): string {
  const p = new URLSearchParams();
  p.set("sent", r.reason ?? (r.defer_until !== undefined ? "queued" : channel === "note" ? "note" : "ok"));
  if (r.defer_until !== undefined) p.set("until", String(r.defer_until));
  return p.toString();
}

/** The words for the redirect's codes; null for no or an unknown code. `zone`: the recipient's. */
export function sentWords(
  code: string | undefined,
  until: string | undefined,
  zone: string,
): { text: string; kind: "ok" | "error" } | null {
  if (code === undefined) return null;
  if (code === "ok") return { text: "Sent.", kind: "ok" };
  if (code === "note") return { text: "Note saved.", kind: "ok" };
  if (code === "queued") {
    const at = Number(until) * 1000;
    if (!Number.isFinite(at) || at <= 0) return { text: "Queued for the end of the lead's quiet hours.", kind: "ok" };
    return { text: `Queued for quiet hours: will send at ${timeIn(at, zone)} in the lead's time zone (${zone}).`, kind: "ok" };
  }
  return Object.hasOwn(REASONS, code) ? { text: REASONS[code as SendReason], kind: "error" } : null;
}

/** "8:00 AM on Fri, Jan 16" in `zone`. */
export function timeIn(epochMs: number, zone: string): string {
  const day = new Intl.DateTimeFormat("en-US", { timeZone: zone, weekday: "short", month: "short", day: "numeric" }).format(epochMs);
  return `${clockTime(epochMs, zone)} on ${day}`;
}
