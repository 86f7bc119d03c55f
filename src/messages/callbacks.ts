// Twilio's callbacks (operations.md §4): delivery statuses and inbound texts. Each is verified by
// `X-Twilio-Signature` under the auth token of the org it concerns, before anything is read from it
// beyond what finds that org; a forgery changes nothing and is answered 403.
import { withoutTrailingSlashes } from "../config";
import type { Sql } from "../db/client";
import { log } from "../log";
import { openSecret, SecretError } from "../secrets/seal";
import { applyStatus, messageBySid, orgsByAccount, orgsByNumber, recordInbound } from "./callback-queries";
import { validTwilioSignature } from "./twilio";

export interface TwilioCallback {
  /** The request's path and query exactly as received ("/hooks/sms_status.php?x=1"). */
  pathAndQuery: string;
  /** The POST parameters in the order received (a name may repeat). */
  params: [string, string][];
  signature: string | null;
}

/** What checking a callback needs of the configuration. */
export interface CallbackEnv {
  /** BASE_URL as configured: the URL Twilio signed. */
  baseUrl: string;
  /** LEADLINE_SECRET_KEY: opens the org's stored auth token (src/secrets/). */
  secretKey?: Buffer | null;
}

/**
 * The org's auth token, opened. One this process cannot open (sealed under another key since
 * serve started) verifies nothing, so the callback is refused (403), and the reason is logged.
 */
function tokenOf(env: CallbackEnv, org: { id: number; sms: unknown }): string | null {
  const t = org.sms !== null && typeof org.sms === "object" ? (org.sms as Record<string, unknown>).auth_token : null;
  if (typeof t !== "string" || t === "") return null;
  try {
    return openSecret(env.secretKey ?? null, t, `org ${org.id}'s sms.auth_token`);
  } catch (err) {
    if (!(err instanceof SecretError)) throw err;
    log.warn("cannot check a Twilio callback's signature", { error: err.message });
    return null;
  }
}

/** The signed URL is the public one: BASE_URL (as configured) followed by the path and query received. */
function signedBy(env: CallbackEnv, cb: TwilioCallback, org: { id: number; sms: unknown }): boolean {
  const token = tokenOf(env, org);
  return token !== null && validTwilioSignature(token, withoutTrailingSlashes(env.baseUrl) + cb.pathAndQuery, cb.params, cb.signature);
}

/** The first value of a parameter ('' when absent). */
const param = (cb: TwilioCallback, name: string) => cb.params.find(([k]) => k === name)?.[1] ?? "";

const last10 = (s: string) => {
  const d = s.replace(/\D/g, "");
  return d.length >= 10 ? d.slice(-10) : null;
};

// Twilio's message statuses onto ours. Ranks only grow; delivered, undelivered and failed are final.
const STATUS: Record<string, { status: string; rank: number }> = {
  accepted: { status: "queued", rank: 0 },
  scheduled: { status: "queued", rank: 0 },
  queued: { status: "queued", rank: 0 },
  sending: { status: "sending", rank: 1 },
  sent: { status: "sent", rank: 2 },
  delivered: { status: "delivered", rank: 3 },
  read: { status: "delivered", rank: 3 },
  undelivered: { status: "undelivered", rank: 4 },
  failed: { status: "failed", rank: 4 },
  canceled: { status: "failed", rank: 4 },
};
const MOVABLE: [string, number][] = [
  ["queued", 0],
  ["sending", 1],
  ["sent", 2],
];

/** A status callback signed by the organisation it concerns: its message, or null for a sid not known (yet). */
export interface VerifiedStatus {
  cb: TwilioCallback;
  message: Awaited<ReturnType<typeof messageBySid>>;
}

/**
 * `POST /hooks/sms_status.php`, verified: MessageSid, MessageStatus (or SmsSid, SmsStatus),
 * ErrorCode. The message's org signs it; for a sid we do not know (yet), the org of its AccountSid,
 * so that a genuine callback is still answered 200 and a forgery 403. Null: not signed by them.
 */
export async function verifyStatus(sql: Sql, env: CallbackEnv, cb: TwilioCallback): Promise<VerifiedStatus | null> {
  const sid = param(cb, "MessageSid") || param(cb, "SmsSid");
  const message = sid ? await messageBySid(sql, sid) : null;
  if (message) return signedBy(env, cb, { id: message.org_id ?? 0, sms: message.sms }) ? { cb, message } : null;
  const account = param(cb, "AccountSid");
  const orgs = account ? await orgsByAccount(sql, account) : [];
  return orgs.some((o) => signedBy(env, cb, o)) ? { cb, message: null } : null;
}

/** A verified status callback moves its message's status forward (ranks only grow). */
export async function applyStatusCallback(sql: Sql, { cb, message }: VerifiedStatus, now: number): Promise<void> {
  if (!message) return;
  const next = STATUS[(param(cb, "MessageStatus") || param(cb, "SmsStatus")).toLowerCase()];
  if (!next) return;
  const from = MOVABLE.filter(([, rank]) => rank < next.rank).map(([s]) => s);
  if (from.length === 0) return;
  const failing = next.rank === 4;
  const code = param(cb, "ErrorCode");
  const detail = param(cb, "ErrorMessage");
  const error = [code, detail].filter((s) => s !== "").join(": ") || next.status;
  await applyStatus(sql, message.id, next.status, from, failing ? { error } : null, new Date(now));
}

const STOP_WORDS = new Set(["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT"]);
const START_WORDS = new Set(["START", "UNSTOP"]);

/** STOP → out, START → in: the whole trimmed body, any case. */
export function keywordConsent(body: string): "out" | "in" | null {
  const word = body.trim().toUpperCase();
  return STOP_WORDS.has(word) ? "out" : START_WORDS.has(word) ? "in" : null;
}

/** An inbound text signed by the organisation whose SMS number it was sent to. */
export interface VerifiedInbound {
  cb: TwilioCallback;
  orgId: number;
}

/**
 * `POST /hooks/sms_inbound.php`, verified: the org is the one whose SMS number is `To` and whose
 * token signed the request. Null: no such org signed it.
 */
export async function verifyInbound(sql: Sql, env: CallbackEnv, cb: TwilioCallback): Promise<VerifiedInbound | null> {
  const to10 = last10(param(cb, "To"));
  const orgs = to10 ? await orgsByNumber(sql, to10) : [];
  const org = orgs.find((o) => signedBy(env, cb, o));
  return org ? { cb, orgId: org.id } : null;
}

/**
 * A verified inbound text (From, To, Body, MessageSid) goes on the org's newest lead with the phone
 * `From` (last 10 digits), as status `received`. STOP words opt every org lead on that phone out,
 * START words back in. A text from an unknown phone is acknowledged and not stored.
 */
export async function recordInboundSms(sql: Sql, { cb, orgId }: VerifiedInbound, now: number): Promise<void> {
  const from10 = last10(param(cb, "From"));
  const sid = param(cb, "MessageSid") || param(cb, "SmsSid");
  if (!from10 || !sid) return;
  // Stored as sent, except NUL, which a text column cannot hold.
  const body = param(cb, "Body").replaceAll("\u0000", "").toWellFormed();
  await recordInbound(sql, {
    orgId,
    from10,
    from: param(cb, "From"),
    to: param(cb, "To"),
    body,
    sid,
    consent: keywordConsent(body),
    now: new Date(now),
  });
}
