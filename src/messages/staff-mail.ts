// Mail to a member of an organization's team (an invitation to the console), through the
// organization's own email sender (its `email` settings, opened as the send path opens them, with
// the send path's SMTP client and its `sink:`). Not the send path of lead messages (sendNow):
// consent, quiet hours, do-not-contact, billing and the messages table are about leads, and none of
// them applies to a person joining the team, so such mail is never a lead message, never billed,
// never counted. With sendNow, the only caller of a provider in src/ (test/messages-sendpath.test.ts).
import type { Sql } from "../db/client";
import { openSecret, SecretError } from "../secrets/seal";
import { isSink } from "../sink";
import { sendEmail } from "./email";
import { emailConfig } from "./gates";
import type { RenderedEmail } from "./merge";

export type StaffMailed = { ok: true } | { ok: false; reason: "no_sender" | "sealed" | "failed"; error: string };

/** Sends `mail` to `to` from organization `orgId`'s sender; never throws for the sender's state or the server's answer. */
export async function emailStaff(sql: Sql, secretKey: Buffer | null, orgId: number, to: string, mail: RenderedEmail): Promise<StaffMailed> {
  const [org] = await sql<{ email: unknown }[]>`select email from orgs where id = ${orgId}`;
  const cfg = emailConfig(org?.email ?? null);
  if (!org || cfg === null) return { ok: false, reason: "no_sender", error: "no email sender" };
  let smtpUrl: string;
  try {
    smtpUrl = openSecret(secretKey, cfg.smtp_url, `org ${orgId}'s email.smtp_url`);
  } catch (err) {
    if (!(err instanceof SecretError)) throw err;
    return { ok: false, reason: "sealed", error: "sealed under another key" };
  }
  if (isSink(smtpUrl)) return { ok: true };
  const outcome = await sendEmail({ ...cfg, smtp_url: smtpUrl }, to, mail);
  return outcome.ok ? { ok: true } : { ok: false, reason: "failed", error: outcome.error };
}
