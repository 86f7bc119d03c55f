// Twilio's REST API over fetch (operations.md §3), and the signature Twilio puts on its callbacks.
import { createHmac, timingSafeEqual } from "node:crypto";
import { withoutTrailingSlashes } from "../config";
import type { SmsConfig } from "./gates";

/** How a provider call ended. `error` is stored on the message; `reason` is the API's. */
export type ProviderOutcome =
  | { ok: true; providerId: string; status: string }
  | { ok: false; reason: ProviderFailure; error: string; code?: string };

export type ProviderFailure = "provider_error" | "provider_timeout" | "provider_unavailable";

/** The longest a request waits for a provider; past it the send fails with provider_timeout. */
export const PROVIDER_TIMEOUT_MS = 10_000;

/** E.164 for US numbers; anything already in international form (or not a number) as given. */
export function e164(phone: string): string {
  const s = phone.trim();
  if (s.startsWith("+")) return "+" + s.slice(1).replace(/\D/g, "");
  const digits = s.replace(/\D/g, "");
  if (digits.length === 10) return "+1" + digits;
  if (digits.length === 11 && digits[0] === "1") return "+" + digits;
  return s;
}

export interface SmsRequest {
  to: string;
  body: string;
  statusCallback: string;
}

/** A provider's error text as one bounded line, fit for the message's `error`. */
export const oneLine = (s: string, max = 500) => s.replace(/\s+/g, " ").trim().slice(0, max);

/**
 * `POST {base_url}/2010-04-01/Accounts/{sid}/Messages.json` with form fields To, From, Body and
 * StatusCallback, basic auth `sid:token`. Never throws: every way it can end is an outcome. The
 * wait is bounded; a provider that never answers costs at most `timeoutMs`.
 */
export async function sendSms(cfg: SmsConfig, req: SmsRequest, timeoutMs = PROVIDER_TIMEOUT_MS): Promise<ProviderOutcome> {
  const url = `${withoutTrailingSlashes(cfg.base_url)}/2010-04-01/Accounts/${encodeURIComponent(cfg.account_sid)}/Messages.json`;
  const form = new URLSearchParams({ To: e164(req.to), From: e164(cfg.from), Body: req.body, StatusCallback: req.statusCallback });
  const signal = AbortSignal.timeout(timeoutMs);
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, {
      method: "POST",
      headers: {
        authorization: "Basic " + Buffer.from(`${cfg.account_sid}:${cfg.auth_token}`).toString("base64"),
        "content-type": "application/x-www-form-urlencoded",
        accept: "application/json",
      },
      body: form.toString(),
      signal,
      redirect: "error",
    });
    text = await res.text();
  } catch (err) {
    if (signal.aborted) return { ok: false, reason: "provider_timeout", error: `no answer from the SMS provider within ${timeoutMs / 1000} s` };
    return { ok: false, reason: "provider_unavailable", error: `SMS provider unreachable: ${oneLine(String((err as Error)?.message ?? err))}` };
  }
  let answer: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse(text);
    if (parsed !== null && typeof parsed === "object") answer = parsed;
  } catch {}
  if (res.ok) {
    if (typeof answer.sid === "string" && answer.sid !== "") {
      return { ok: true, providerId: answer.sid, status: typeof answer.status === "string" ? answer.status : "queued" };
    }
    return { ok: false, reason: "provider_error", error: `SMS provider answered ${res.status} without a message sid` };
  }
  // Twilio's error body: {code, message, more_info, status}. 4xx: this message was refused;
  // 5xx: the provider is having trouble.
  const code = typeof answer.code === "number" || typeof answer.code === "string" ? String(answer.code) : undefined;
  const message = typeof answer.message === "string" ? oneLine(answer.message) : oneLine(text, 200);
  const error = code !== undefined ? `${code}: ${message}` : `HTTP ${res.status}${message ? `: ${message}` : ""}`;
  return { ok: false, reason: res.status >= 500 ? "provider_unavailable" : "provider_error", error, code };
}

/** Twilio's error 21610: the recipient has replied STOP to this sender. */
export const TWILIO_UNSUBSCRIBED = "21610";

/**
 * `X-Twilio-Signature`: base64 HMAC-SHA1, keyed by the auth token, of the full public URL
 * followed by each POST parameter's name and value, sorted by name (a repeated name's values in
 * order of value).
 */
export function twilioSignature(authToken: string, url: string, params: Iterable<[string, string]>): string {
  const pairs = [...params].sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  const hmac = createHmac("sha1", authToken);
  hmac.update(url);
  for (const [name, value] of pairs) hmac.update(name + value);
  return hmac.digest("base64");
}

/** Constant-time check of a presented signature against the expected one. */
export function validTwilioSignature(
  authToken: string,
  url: string,
  params: Iterable<[string, string]>,
  presented: string | null,
): boolean {
  if (!presented) return false;
  const expected = Buffer.from(twilioSignature(authToken, url, params));
  const given = Buffer.from(presented.trim());
  return given.length === expected.length && timingSafeEqual(given, expected);
}
