// The gates of an SMS or email send, as pure functions of what the database said and the clock.
// One place applies them: sendNow (service.ts), through which the API, automations and the
// deferred-send worker all send; it calls contactGate before its billing transaction and
// heldGates inside it (billing, cap, quiet hours, send-before, for each send of an organization's
// group in turn), in `gate`'s order. Notes are never gated.
//
// Order, first failure wins: channel → do-not-contact → consent → provider → billing → automation
// cap → quiet hours → send-before. The organization's do-not-contact list (src/leads/dnc.ts) comes
// before consent: a listed address is never sent to, whatever consent it gave. Quiet hours come late because a deferral is not a refusal: the message is
// recorded and sent later, so every reason it could never go must be checked first; the last gate
// refuses a send that quiet hours would push to or past its deadline (a reminder past its start).
import { emailField } from "../http/fields";
import { isSealed } from "../secrets/seal";
import { isSink } from "../sink";
import { instantOf, isZone, wallOf } from "../zone";
import { quietHoursEnd, recipientZone, type QuietHours } from "./quiet-hours";

export type SendChannel = "sms" | "email";

/**
 * Every reason a gate refuses a send; each is listed in docs/messaging.md's Results (test/readme.test.ts
 * checks it). Billing ones are HTTP 402: errors.ts reasonStatus.
 */
export const GATE_REASONS = [
  "no_phone", // sms: the lead has no usable phone number
  "no_email", // email: the lead has no valid email address
  "do_not_contact", // the address is on the organization's do-not-contact list (src/leads/dnc.ts)
  "opted_out", // the lead's channel opted out (SMS STOP); wins over any opt-in
  "no_consent", // explicit-consent org, and the channel never opted in
  "provider_not_configured", // the org has no (complete) sms / email provider settings
  "billing_not_configured", // 402: the org has no billing
  "billing_unavailable", // 402: the balance could not be read (locked past the wait) or is unusable
  "billing_frozen", // 402: billing status frozen
  "subscription_required", // 402: subscription none
  "insufficient_credits", // 402: credits below the channel's cost
  "automation_cap", // an automation send past its organization's daily automation cap (operations.md §3)
  "expired", // a send due before a time (a reminder, its appointment's start) that cannot go before it
] as const;
export type GateReason = (typeof GATE_REASONS)[number];

export interface SmsConfig {
  base_url: string;
  account_sid: string;
  /** As stored (possibly sealed: src/secrets/) until the provider call opens it. */
  auth_token: string;
  from: string;
}

export interface EmailConfig {
  /** As stored (possibly sealed: src/secrets/) until the provider call opens it. */
  smtp_url: string;
  from: string;
}

/** What the gates read of the lead's organization (sql/0001 `orgs`). */
export interface OrgSettings {
  id: number;
  name: string;
  company: string;
  timezone: string;
  quiet: QuietHours | null;
  consent: "implied" | "explicit";
  sms: unknown;
  email: unknown;
  /** Automation sends a day (null: AUTOMATION_DAILY_CAP). */
  automationCap: number | null;
}

/**
 * The daily cap on an organization's automation sends when it sets none: far above what working
 * its own leads takes, far below what a script booking with made-up numbers would cost it.
 */
export const AUTOMATION_DAILY_CAP = 1000;

export interface LeadContact {
  phone: string;
  email: string;
  state: string;
}

/**
 * The consent of the recipient's address on this channel, across the org's leads that share it:
 * `out` if any of them opted out, else `in` if any opted in, else `none` (see queries.ts).
 */
export type ConsentState = "none" | "in" | "out";

/** The org's billing row; null when absent; "unavailable" when it could not be read in time. */
export type BillingState =
  | null
  | "unavailable"
  | { status: string; subscription: string; credits: number; sms_cost: number; email_cost: number };

export interface GateInput {
  channel: SendChannel;
  /** Null for a lead in a house campaign: no org, so no provider and no billing. */
  org: OrgSettings | null;
  lead: LeadContact;
  consent: ConsentState;
  /** Whether the channel's address is on the organization's do-not-contact list. */
  listed: boolean;
  billing: BillingState;
  now: number;
}

export type GateResult =
  | { ok: true; to: string; cost: number; deferUntil: number | null }
  | { ok: false; reason: GateReason };

const nonEmpty = (v: unknown): v is string => typeof v === "string" && v.trim() !== "";

/** The org's SMS provider settings when complete, else null. */
export function smsConfig(v: unknown): SmsConfig | null {
  if (v === null || typeof v !== "object") return null;
  const c = v as Record<string, unknown>;
  if (!nonEmpty(c.base_url) || !nonEmpty(c.account_sid) || !nonEmpty(c.auth_token) || !nonEmpty(c.from)) return null;
  if (!isSink(c.base_url) && !/^https?:\/\//i.test(c.base_url)) return null;
  return { base_url: c.base_url, account_sid: c.account_sid, auth_token: c.auth_token, from: c.from };
}

/**
 * The org's SMTP settings when complete, else null. A sealed URL (src/secrets/) is opened only at
 * the call, so its form is checked when it is provisioned, not here.
 */
export function emailConfig(v: unknown): EmailConfig | null {
  if (v === null || typeof v !== "object") return null;
  const c = v as Record<string, unknown>;
  if (!nonEmpty(c.smtp_url) || !nonEmpty(c.from)) return null;
  if (!isSealed(c.smtp_url) && !isSink(c.smtp_url) && !/^smtps?:\/\/[^/]/i.test(c.smtp_url)) return null;
  return { smtp_url: c.smtp_url, from: c.from };
}

/** The address a channel sends to, or null when the lead has none. */
export function channelAddress(channel: SendChannel, lead: LeadContact): string | null {
  if (channel === "sms") return /^[0-9]{10}$/.test(lead.phone) ? lead.phone : null;
  const email = emailField(lead.email);
  return email === "" ? null : email;
}

/** Channel, do-not-contact, consent and provider: everything that needs neither the balance nor the clock. */
export function contactGate(
  channel: SendChannel,
  org: OrgSettings | null,
  lead: LeadContact,
  consent: ConsentState,
  listed: boolean,
): { ok: true; to: string } | { ok: false; reason: GateReason } {
  const to = channelAddress(channel, lead);
  if (to === null) return { ok: false, reason: channel === "sms" ? "no_phone" : "no_email" };
  if (listed) return { ok: false, reason: "do_not_contact" };
  // An opt-out always wins, whatever the org's consent mode.
  if (consent === "out") return { ok: false, reason: "opted_out" };
  if (org?.consent === "explicit" && consent !== "in") return { ok: false, reason: "no_consent" };
  const configured = channel === "sms" ? smsConfig(org?.sms) : emailConfig(org?.email);
  if (org === null || configured === null) return { ok: false, reason: "provider_not_configured" };
  return { ok: true, to };
}

/** operations.md §3: absent, frozen, no subscription, credits below the channel's cost. */
export function billingGate(channel: SendChannel, billing: BillingState): { ok: true; cost: number } | { ok: false; reason: GateReason } {
  if (billing === null) return { ok: false, reason: "billing_not_configured" };
  if (billing === "unavailable") return { ok: false, reason: "billing_unavailable" };
  const cost = channel === "sms" ? billing.sms_cost : billing.email_cost;
  // The database's checks make these impossible; a row that breaks them is not trusted with money.
  if (!Number.isFinite(cost) || cost < 0 || !Number.isFinite(billing.credits)) return { ok: false, reason: "billing_unavailable" };
  if (billing.status === "frozen") return { ok: false, reason: "billing_frozen" };
  if (billing.status !== "active") return { ok: false, reason: "billing_unavailable" };
  if (billing.subscription === "none") return { ok: false, reason: "subscription_required" };
  if (billing.subscription !== "active") return { ok: false, reason: "billing_unavailable" };
  if (billing.credits < cost) return { ok: false, reason: "insufficient_credits" };
  return { ok: true, cost };
}

/**
 * An automation send against its organization's daily cap: `used` is the automation sends already
 * recorded in the organization's day, read under its billing row lock (so exact across instances).
 */
export function capGate(org: Pick<OrgSettings, "automationCap">, used: number): { ok: true } | { ok: false; reason: GateReason } {
  const cap = org.automationCap ?? AUTOMATION_DAILY_CAP;
  return used < cap ? { ok: true } : { ok: false, reason: "automation_cap" };
}

/**
 * The organization's day at `now` (its time zone; UTC for a zone the runtime does not know): the
 * instant it began, epoch ms, and its date (YYYY-MM-DD), which the cap's count is kept by.
 */
export function orgDay(now: number, timezone: string): { start: number; day: string } {
  const tz = isZone(timezone) ? timezone : "UTC";
  const wall = wallOf(now, tz);
  const midnight = wall - (((wall % 86_400_000) + 86_400_000) % 86_400_000);
  return { start: instantOf(midnight, tz), day: new Date(midnight).toISOString().slice(0, 10) };
}

/**
 * A send that must go before `sendBefore` (epoch ms; none: no deadline): refused when it is due
 * (now, or when quiet hours end: `until`) at or after it.
 */
export function sendBeforeGate(now: number, until: number | null, sendBefore: number | null): { ok: true } | { ok: false; reason: GateReason } {
  if (sendBefore === null) return { ok: true };
  return (until ?? now) < sendBefore ? { ok: true } : { ok: false, reason: "expired" };
}

/** Null to send now, or the epoch ms when the recipient's quiet hours end. */
export function quietGate(org: OrgSettings | null, lead: LeadContact, now: number): number | null {
  if (org === null || org.quiet === null) return null;
  return quietHoursEnd(now, org.quiet, recipientZone(lead.state, org.timezone));
}

/** All gates in their order: the first refusal, or where to send, what it costs and when. */
export function gate(input: GateInput): GateResult {
  const contact = contactGate(input.channel, input.org, input.lead, input.consent, input.listed);
  if (!contact.ok) return contact;
  const billing = billingGate(input.channel, input.billing);
  if (!billing.ok) return billing;
  return { ok: true, to: contact.to, cost: billing.cost, deferUntil: quietGate(input.org, input.lead, input.now) };
}

/** One send of a group held under its organization's billing row lock (recordGroup, service.ts). */
export interface HeldSend {
  channel: SendChannel;
  lead: LeadContact;
  /** Subject to the org's daily automation cap (capGate). */
  capped: boolean;
  /** Epoch ms it must go before (sendBeforeGate), or null. */
  sendBefore: number | null;
}

export type HeldVerdict = { ok: false; reason: GateReason } | { ok: true; cost: number; deferUntil: number | null };

/**
 * The gates applied under the billing row lock, for a group of one organization's sends in their
 * order (a single send is a group of one): billing, automation cap, quiet hours, send-before, each
 * send seeing the credits and the cap's count the sends before it took. So a group larger than the
 * credits sends what they cover and refuses the rest `insufficient_credits`, exactly as sends one
 * by one would. `capUsed`: the org's automation sends already counted today. Only a charged send
 * spends credits (a deferred one is charged when it goes); a deferred one counts against the cap.
 */
export function heldGates(org: OrgSettings, billing: BillingState, capUsed: number, sends: readonly HeldSend[], now: number): HeldVerdict[] {
  // Credits are numeric(14, 4): counted down in ten-thousandths, so that N charges taken from a
  // float balance never drift below a cost the balance exactly covers.
  const units = (v: number) => Math.round(v * 10_000);
  let left = billing !== null && billing !== "unavailable" && Number.isFinite(billing.credits) ? units(billing.credits) : 0;
  let used = capUsed;
  return sends.map((s): HeldVerdict => {
    const b = billingGate(s.channel, billing !== null && billing !== "unavailable" ? { ...billing, credits: left / 10_000 } : billing);
    if (!b.ok) return b;
    if (s.capped) {
      const cap = capGate(org, used);
      if (!cap.ok) return cap;
    }
    const until = quietGate(org, s.lead, now);
    const due = sendBeforeGate(now, until, s.sendBefore);
    if (!due.ok) return due;
    if (s.capped) used++;
    if (until === null) left -= units(b.cost);
    return { ok: true, cost: b.cost, deferUntil: until };
  });
}
