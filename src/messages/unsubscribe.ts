// Email unsubscribe (RFC 8058 one-click; issue 31). Every non-transactional email carries
// `List-Unsubscribe: <{BASE_URL}/unsubscribe/{token}>` and `List-Unsubscribe-Post:
// List-Unsubscribe=One-Click` (email.ts). The token names the message and is signed: an HMAC-SHA256
// of the message id, keyed by the installation's unsubscribe key (src/app/settings.ts), cut to 128
// bits. The message says who opts out of what: its organization, and the address it went to. So a
// link reveals no address, cannot be made for another message, and works for as long as the key.
//
// Non-transactional: everything but an appointment's own emails. An email that carries an
// appointment's calendar event (appointment_booked, appointment_reminder: the booking the recipient
// made) is transactional and has no unsubscribe link; API, console and other automation emails
// (new_lead, missed_call) have one. An opt-out still stops every email, those included (the gate).
//
// Opting out is a POST (the mail client's one-click, or the button of the page a GET shows): a GET
// changes nothing, since mail scanners fetch links. It sets the email channel of every lead of the
// organization on that address to `out`, source `unsubscribe_link`, at the clock's time; the send
// path then refuses them `opted_out`. When no lead of the organization has the address any more,
// it goes on the organization's do-not-contact list instead (src/leads/dnc.ts), so that a lead who
// arrives with it later is not emailed either.
import { createHmac, timingSafeEqual } from "node:crypto";
import { systemActor } from "../auth/actor";
import { withoutTrailingSlashes } from "../config";
import type { Sql } from "../db/client";
import { addToDnc } from "../leads/dnc";
import { emailRecipient, optOutEmail } from "./queries";

export const UNSUBSCRIBE_SOURCE = "unsubscribe_link";
const MAC_BYTES = 16;
const TOKEN = /^([1-9][0-9]{0,15})\.([A-Za-z0-9_-]{22})$/;

const macOf = (key: Buffer, messageId: number): Buffer =>
  createHmac("sha256", key).update(`leadline/unsubscribe/v1/${messageId}`).digest().subarray(0, MAC_BYTES);

/** The token of a message's unsubscribe link: `{message id}.{base64url MAC}`. */
export const unsubscribeToken = (key: Buffer, messageId: number): string => `${messageId}.${macOf(key, messageId).toString("base64url")}`;

/** The link an email's List-Unsubscribe header carries. */
export const unsubscribeUrl = (baseUrl: string, key: Buffer, messageId: number): string =>
  `${withoutTrailingSlashes(baseUrl)}/unsubscribe/${unsubscribeToken(key, messageId)}`;

/** The message a token names when its MAC is right (compared in constant time), else null. */
export function messageOfToken(key: Buffer, token: string): number | null {
  const m = TOKEN.exec(token);
  if (m === null) return null;
  const id = Number(m[1]);
  const given = Buffer.from(m[2], "base64url");
  if (!Number.isSafeInteger(id) || given.length !== MAC_BYTES || given.toString("base64url") !== m[2]) return null;
  return timingSafeEqual(given, macOf(key, id)) ? id : null;
}

export interface UnsubscribeTarget {
  orgId: number;
  email: string;
  /** Who the emails came from, for the page. */
  company: string;
}

/** What a link would opt out (for the page a GET shows); null for a link that is not one of ours. */
export async function unsubscribeTarget(sql: Sql, key: Buffer, token: string): Promise<UnsubscribeTarget | null> {
  const id = messageOfToken(key, token);
  if (id === null) return null;
  const r = await emailRecipient(sql, id);
  return r === null ? null : { orgId: r.org_id, email: r.to, company: r.company };
}

/** The one-click POST: the address opts out of the organization's email (see the top of this file); null for a link that is not one of ours. */
export async function unsubscribe(sql: Sql, key: Buffer, token: string, now: number): Promise<UnsubscribeTarget | null> {
  const target = await unsubscribeTarget(sql, key, token);
  if (target === null) return null;
  const at = new Date(now);
  await sql.begin(async (tx) => {
    const { held } = await optOutEmail(tx, target.orgId, target.email, UNSUBSCRIBE_SOURCE, at);
    if (!held) {
      const actor = systemActor("recipient", `message:${messageOfToken(key, token)}`, target.orgId);
      await addToDnc(tx, actor, target.orgId, [{ kind: "email", address: target.email, note: "unsubscribed from an email sent before the address left its lead" }], UNSUBSCRIBE_SOURCE, at);
    }
  });
  return target;
}
