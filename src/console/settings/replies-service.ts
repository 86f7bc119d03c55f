// An organization's saved replies for a manager (their organization's) or an admin (any). Writes go
// through src/replies/service.ts, the one writer the CLI and provisioning use (its validation, its
// `saved_reply.create` / `.update` / `.delete` audit rows with the previous and new values); this
// file only finds the organization confined in SQL, reads the form and words its refusals.
import type { Actor } from "../../auth/actor";
import type { Sql } from "../../db/client";
import { AppError } from "../../errors";
import type { Deps } from "../../http/deps";
import { LEAD_MERGE_FIELDS } from "../../messages/merge";
import {
  createSavedReply,
  deleteSavedReply,
  previewSavedReply,
  REPLY_CHANNELS,
  savedReplyRuleProblems,
  updateSavedReply,
  type ReplyChannel,
  type ReplyPreview,
  type SavedReply,
  type SavedReplyFields,
} from "../../replies/service";

export interface RecentLead {
  id: number;
  label: string;
}

export interface OrgReplies {
  orgId: number;
  name: string;
  replies: SavedReply[];
  /** The organization's newest leads, for the preview's select. */
  leads: RecentLead[];
}

/** The organization's replies by name; null when missing or not the actor's. */
export async function orgReplies(sql: Sql, actor: Actor, orgId: number): Promise<OrgReplies | null> {
  if (actor.orgId !== null && actor.orgId !== orgId) return null;
  const [org] = await sql<{ name: string }[]>`
    select name from orgs where id = ${orgId} and (${actor.orgId}::bigint is null or id = ${actor.orgId}::bigint)`;
  if (!org) return null;
  const replies = await sql<SavedReply[]>`select * from saved_replies where org_id = ${orgId} order by lower(name), id`;
  const leads = await sql<{ id: number; first_name: string; last_name: string; phone: string; email: string }[]>`
    select id, first_name, last_name, phone, email from leads where org_id = ${orgId} order by created_at desc, id desc limit 20`;
  return {
    orgId,
    name: org.name,
    replies,
    leads: leads.map((l) => ({ id: Number(l.id), label: `${l.id} · ${[l.first_name, l.last_name].filter((s) => s).join(" ") || l.phone || l.email || "no name"}` })),
  };
}

/** What the form holds, kept as typed for a refused form. */
export interface ReplyForm {
  name: string;
  subject: string;
  body: string;
  channels: ReplyChannel[];
}

export const channelsOf = (form: Readonly<Record<string, string | undefined>>): ReplyChannel[] => REPLY_CHANNELS.filter((c) => form[`channel.${c}`] !== undefined);

/** What each merge field is, for the help beside the body (the names the send path fills). */
export const MERGE_HELP: Readonly<Record<string, string>> = {
  first_name: "the lead's first name",
  last_name: "the lead's last name",
  full_name: "first and last name",
  company: "your organization's company (else its name)",
  phone: "the lead's phone",
  email: "the lead's email",
  city: "the lead's city",
  state: "the lead's state",
  postal_code: "the lead's postal code",
};
export const MERGE_FIELDS = LEAD_MERGE_FIELDS;

const LABELS: Record<string, string> = { name: "Name", body: "Body", subject: "Email subject" };

/** Every problem of the form in words (empty: valid): lengths, blanks, channels, then the writer's rules. */
export function replyFormProblems(f: ReplyForm): string[] {
  const out: string[] = [];
  if (f.name.trim() === "") out.push("Name: required.");
  else if (f.name.length > 60) out.push("Name: at most 60 characters.");
  if (f.body.trim() === "") out.push("Body: required.");
  else if (f.body.length > 5000) out.push("Body: at most 5000 characters.");
  if (f.subject.length > 200) out.push("Email subject: at most 200 characters.");
  if (f.channels.length === 0) out.push("Channels: pick at least one of SMS, email and note.");
  if (out.length > 0) return out;
  return savedReplyRuleProblems(specOf(f)).map((p) => p.replace(/^saved_reply\.(\w+): (.*)$/, (_, field: string, why: string) => `${LABELS[field] ?? field}: ${why}.`));
}

const specOf = (f: ReplyForm): SavedReplyFields => ({ name: f.name, body: f.body, subject: f.subject, channels: f.channels });

export type ReplyAnswer = { ok: true; changed: boolean } | { ok: false; problems: string[] };

const taken = (name: string) => `Name: another saved reply of this organization is already called “${name.trim()}” (names are compared regardless of case).`;

/** A new reply (replyId null) or new fields for one of the organization's replies. */
export async function saveReply(deps: Deps, actor: Actor, o: OrgReplies, replyId: number | null, f: ReplyForm): Promise<ReplyAnswer> {
  const problems = replyFormProblems(f);
  if (problems.length > 0) return { ok: false, problems };
  const now = new Date(deps.clock.now());
  const r = replyId === null ? await createSavedReply(deps.sql, actor, o.orgId, specOf(f), now) : await updateSavedReply(deps.sql, actor, replyId, specOf(f), now);
  if (!r.ok) return { ok: false, problems: [taken(f.name)] };
  return { ok: true, changed: r.changed };
}

/** Deletes one of the organization's replies (audited by the writer with what it was). */
export async function removeReply(deps: Deps, actor: Actor, replyId: number): Promise<void> {
  await deleteSavedReply(deps.sql, actor, replyId);
}

/** The reply as the send path would merge it for a lead of its organization, or why not in words. */
export async function previewFor(sql: Sql, actor: Actor, reply: SavedReply, leadId: number, channel: ReplyChannel): Promise<{ ok: true; preview: Extract<ReplyPreview, { ok: true }> } | { ok: false; why: string }> {
  try {
    const p = await previewSavedReply(sql, actor, reply.id, leadId, channel);
    if (p.ok) return { ok: true, preview: p };
    return { ok: false, why: p.reason === "not_for_channel" ? `This reply is not for ${channel}.` : "The lead has no organization." };
  } catch (err) {
    if (err instanceof AppError && err.code === "not_found") return { ok: false, why: `No lead ${leadId} in this organization.` };
    throw err;
  }
}
