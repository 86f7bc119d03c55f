// An invitation emailed through the invited user's organization's SMTP settings (the ones its
// lead emails use, opened as the send path opens them). Not the send path itself: that path is for
// messages to a lead — consent, quiet hours, billing, the messages table — none of which applies to
// a person joining the team, so an invitation is never a lead message, never billed, never counted.
// It reuses the send path's SMTP client (src/messages/email.ts sendEmail: its timeouts, its
// STARTTLS) and its `sink:` provider. The link is in the email and in the page, never in the audit
// log or the application log.
import type { Actor } from "../../auth/actor";
import type { Deps } from "../../http/deps";
import { sendEmail } from "../../messages/email";
import { emailConfig } from "../../messages/gates";
import { openSecret, SecretError } from "../../secrets/seal";
import { isSink } from "../../sink";
import { audit } from "../audit";
import { html } from "../html";
import type { Invited } from "./users-service";

export type Mailed = { ok: true; to: string } | { ok: false; message: string };

export async function emailInvite(deps: Deps, actor: Actor, invited: Invited): Promise<Mailed> {
  const orgId = invited.orgId;
  if (orgId === null) return { ok: false, message: "An administrator belongs to no organization, so there is no email sender to use: copy the link instead." };
  const [org] = await deps.sql<{ name: string; email: unknown }[]>`select name, email from orgs where id = ${orgId}`;
  const cfg = emailConfig(org?.email ?? null);
  if (!org || cfg === null) return { ok: false, message: "The organization has no email sender set up (Organization settings): copy the link instead." };
  let smtpUrl: string;
  try {
    smtpUrl = openSecret(deps.config.secretKey, cfg.smtp_url, `org ${orgId}'s email.smtp_url`);
  } catch (err) {
    if (!(err instanceof SecretError)) throw err;
    return { ok: false, message: "The organization's email sender cannot be opened by this server (its secret key): copy the link instead." };
  }
  const to = invited.user.email;
  const who = org.name.trim() || "your team";
  const subject = `You are invited to ${who} on Leadline`;
  const text = `You have been invited to ${who}'s Leadline console.\n\nSet your password with this link (it works once, until ${invited.expiresAt.toISOString()}):\n\n${invited.link}\n\nIf you did not expect this, ignore this email.\n`;
  const body = html`<p>You have been invited to ${who}'s Leadline console.</p>
<p><a href="${invited.link}">Set your password</a> (the link works once, until ${invited.expiresAt.toISOString()}):<br>${invited.link}</p>
<p>If you did not expect this, ignore this email.</p>`.toString();
  const outcome = isSink(smtpUrl) ? ({ ok: true } as const) : await sendEmail({ ...cfg, smtp_url: smtpUrl }, to, { subject, html: body, text });
  await audit(deps.sql, actor, "user.invite_email", `user:${invited.user.id}`, { to, sent: outcome.ok }, orgId);
  return outcome.ok ? { ok: true, to } : { ok: false, message: `The email was not sent (${outcome.error}): copy the link instead.` };
}
