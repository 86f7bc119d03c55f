// An invitation emailed through the invited user's organization's SMTP settings, by the messages
// feature's mail to a team member (src/messages/staff-mail.ts: never a lead message, never billed).
// The link is in the email and in the page, never in the audit log or the application log.
import type { Actor } from "../../auth/actor";
import type { Deps } from "../../http/deps";
import { emailStaff } from "../../messages/staff-mail";
import { audit } from "../audit";
import { html } from "../html";
import type { Invited } from "./users-service";

export type Mailed = { ok: true; to: string } | { ok: false; message: string };

export async function emailInvite(deps: Deps, actor: Actor, invited: Invited): Promise<Mailed> {
  const orgId = invited.orgId;
  if (orgId === null) return { ok: false, message: "An administrator belongs to no organization, so there is no email sender to use: copy the link instead." };
  const [org] = await deps.sql<{ name: string }[]>`select name from orgs where id = ${orgId}`;
  const to = invited.user.email;
  const who = org?.name.trim() || "your team";
  const subject = `You are invited to ${who} on Leadline`;
  const text = `You have been invited to ${who}'s Leadline console.\n\nSet your password with this link (it works once, until ${invited.expiresAt.toISOString()}):\n\n${invited.link}\n\nIf you did not expect this, ignore this email.\n`;
  const body = html`<p>You have been invited to ${who}'s Leadline console.</p>
<p><a href="${invited.link}">Set your password</a> (the link works once, until ${invited.expiresAt.toISOString()}):<br>${invited.link}</p>
<p>If you did not expect this, ignore this email.</p>`.toString();
  const outcome = await emailStaff(deps.sql, deps.config.secretKey, orgId, to, { subject, html: body, text });
  if (!outcome.ok && outcome.reason === "no_sender") return { ok: false, message: "The organization has no email sender set up (Organization settings): copy the link instead." };
  if (!outcome.ok && outcome.reason === "sealed") return { ok: false, message: "The organization's email sender cannot be opened by this server (its secret key): copy the link instead." };
  await audit(deps.sql, actor, "user.invite_email", `user:${invited.user.id}`, { to, sent: outcome.ok }, orgId);
  return outcome.ok ? { ok: true, to } : { ok: false, message: `The email was not sent (${outcome.error}): copy the link instead.` };
}
