// Saved replies (canned responses): an organization's named texts that an agent picks in the
// composer by typing / and the start of a name, or from a menu. The text keeps its merge fields
// ({first_name}, …); the send path merges them when the message is sent, and a preview for a lead
// is the send path's own merge (src/messages/service.ts asSent). Defined by provisioning
// (`saved_replies[]`), the CLI (`leadline replies`) and these functions (the console's managers):
// one validation and one writer for all three, every change audited with its previous and new
// values. Confined to the actor's organization in SQL; another organization's reply is `not_found`.
import { Type as t, type Static, type TLiteral } from "@sinclair/typebox";
import type { Actor } from "../auth/actor";
import { audit } from "../auth/audit";
import type { Sql, Tx } from "../db/client";
import { classify } from "../db/sqlstate";
import { AppError, type Refusal } from "../errors";
import { cleanText } from "../http/fields";
import { shapeProblem } from "../http/input";
import { LEAD_MERGE_FIELDS, placeholdersIn } from "../messages/merge";
import { mergeContext } from "../messages/queries";
import { asSent } from "../messages/service";

export const REPLY_CHANNELS = ["sms", "email", "note"] as const;
export type ReplyChannel = (typeof REPLY_CHANNELS)[number];

export const SavedReplyFields = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 60 }),
    body: t.String({ minLength: 1, maxLength: 5000 }),
    /** An email's subject (its merge fields too); empty: the organization's default subject. */
    subject: t.Optional(t.String({ maxLength: 200 })),
    /** Where the reply may be used; absent: every channel. */
    channels: t.Optional(
      t.Array(t.Union(REPLY_CHANNELS.map((c) => t.Literal(c)) as TLiteral<ReplyChannel>[], { expected: `one of ${REPLY_CHANNELS.join(", ")}` }), {
        minItems: 1,
        uniqueItems: true,
      }),
    ),
  },
  { additionalProperties: false },
);
export type SavedReplyFields = Static<typeof SavedReplyFields>;

export interface SavedReply {
  id: number;
  org_id: number;
  name: string;
  body: string;
  subject: string;
  channels: ReplyChannel[];
  updated_at: Date;
}

/**
 * Every problem of a reply's fields (empty: valid): the shape, then the rules (savedReplyRuleProblems).
 */
export function savedReplyProblems(spec: unknown, path = "saved_reply"): string[] {
  const shape = shapeProblem(SavedReplyFields, spec, path);
  return shape !== null ? [shape] : savedReplyRuleProblems(spec as SavedReplyFields, path);
}

/**
 * The rules of well-shaped fields: a name that is not blank and holds no control character, and no
 * merge field that no lead fills (it would go out as typed: `{frist_name}`).
 */
export function savedReplyRuleProblems(spec: SavedReplyFields, path = "saved_reply"): string[] {
  const out: string[] = [];
  const name = cleanText(spec.name);
  if (name === "") out.push(`${path}.name: must not be blank`);
  if (/\p{Cc}/u.test(name)) out.push(`${path}.name: must not hold a control character`);
  for (const field of ["body", "subject"] as const) {
    const unknown = placeholdersIn(spec[field] ?? "").filter((p) => !LEAD_MERGE_FIELDS.includes(p));
    if (unknown.length > 0) {
      out.push(`${path}.${field}: unknown merge field ${unknown.map((p) => `{${p}}`).join(", ")}; known: ${LEAD_MERGE_FIELDS.map((p) => `{${p}}`).join(" ")}`);
    }
  }
  return out;
}

/** The fields as stored: the name trimmed, channels in their canonical order, no subject as ''. */
function stored(spec: SavedReplyFields) {
  const channels = spec.channels ?? REPLY_CHANNELS;
  return {
    name: cleanText(spec.name),
    body: spec.body,
    subject: spec.subject ?? "",
    channels: REPLY_CHANNELS.filter((c) => channels.includes(c)),
  };
}

const confined = (actor: Actor, orgId: number) => {
  if (actor.orgId !== null && actor.orgId !== orgId) throw new AppError("not_found");
};

export type ReplyWrite = { ok: true; reply: SavedReply; created: boolean; changed: boolean } | Refusal<"name_taken">;

/**
 * The one writer: creates the reply (with `id` when the caller names one: provisioning), or
 * replaces the fields of reply `id`, auditing `saved_reply.create` / `saved_reply.update` with each
 * changed field's previous and new value in the organization's log. Nothing changed: nothing
 * written. A name another reply of the organization has (regardless of case): `name_taken`.
 */
export async function putSavedReply(tx: Tx, actor: Actor, id: number | null, orgId: number, spec: SavedReplyFields, now: Date): Promise<ReplyWrite> {
  confined(actor, orgId);
  const problems = savedReplyProblems(spec);
  if (problems.length > 0) throw new AppError("invalid_input", problems.join("; "));
  const next = stored(spec);
  const [org] = await tx`select 1 from orgs where id = ${orgId}`;
  if (!org) throw new AppError("not_found", `no organization ${orgId}`);
  const [old] = id === null ? [] : await tx<SavedReply[]>`select * from saved_replies where id = ${id} for update`;
  if (old) {
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    if (old.org_id !== orgId) changes.org_id = { from: old.org_id, to: orgId };
    for (const f of ["name", "body", "subject", "channels"] as const) {
      if (JSON.stringify(old[f]) !== JSON.stringify(next[f])) changes[f] = { from: old[f], to: next[f] };
    }
    if (Object.keys(changes).length === 0) return { ok: true, reply: old, created: false, changed: false };
    const reply = await named(tx, (q) => q<SavedReply[]>`
      update saved_replies set org_id = ${orgId}, name = ${next.name}, body = ${next.body}, subject = ${next.subject},
             channels = ${next.channels}::text[], updated_at = ${now}
      where id = ${old.id} returning *`);
    if (reply === "id_taken") throw new AppError("internal", "saved reply id taken"); // its own id: never
    if (!reply) return { ok: false, reason: "name_taken" };
    await audit(tx, actor, "saved_reply.update", `saved_reply:${old.id}`, { changes }, orgId);
    return { ok: true, reply, created: false, changed: true };
  }
  const insert = (q: Tx) => q<SavedReply[]>`
    insert into saved_replies (${id === null ? q`` : q`id, `}org_id, name, body, subject, channels, created_at, updated_at)
    values (${id === null ? q`` : q`${id}, `}${orgId}, ${next.name}, ${next.body}, ${next.subject}, ${next.channels}::text[], ${now}, ${now})
    returning *`;
  // A reply numbered by the identity can meet an id a provisioning run gave meanwhile: drawn again.
  let reply = await named(tx, insert);
  if (reply === "id_taken" && id === null) reply = await named(tx, insert);
  if (reply === "id_taken") throw new AppError("internal", "saved reply id taken");
  if (!reply) return { ok: false, reason: "name_taken" };
  if (id !== null) {
    await tx`select setval(pg_get_serial_sequence('saved_replies', 'id'), greatest((select max(id) from saved_replies), 1))`;
  }
  await audit(tx, actor, "saved_reply.create", `saved_reply:${reply.id}`, { name: reply.name, body: reply.body, subject: reply.subject, channels: reply.channels }, orgId);
  return { ok: true, reply, created: true, changed: true };
}

/** The statement's row; null when the organization already has the name; "id_taken" when the id was. */
async function named(tx: Tx, write: (q: Tx) => Promise<SavedReply[]>): Promise<SavedReply | null | "id_taken"> {
  try {
    const [row] = await tx.savepoint((sp) => write(sp));
    return row ?? null;
  } catch (err) {
    if (classify(err) !== "unique_violation") throw err;
    return (err as { constraint_name?: string }).constraint_name === "saved_replies_pkey" ? "id_taken" : null;
  }
}

/** A new reply of the organization (a console manager, the CLI). */
export function createSavedReply(sql: Sql, actor: Actor, orgId: number, spec: SavedReplyFields, now: Date): Promise<ReplyWrite> {
  return sql.begin((tx) => putSavedReply(tx, actor, null, orgId, spec, now)) as Promise<ReplyWrite>;
}

/** Changes some fields of a reply (absent ones kept). */
export function updateSavedReply(sql: Sql, actor: Actor, id: number, changes: Partial<SavedReplyFields>, now: Date): Promise<ReplyWrite> {
  return sql.begin(async (tx) => {
    const old = await replyInScope(tx, actor, id);
    const spec: SavedReplyFields = { name: old.name, body: old.body, subject: old.subject, channels: old.channels, ...changes };
    return putSavedReply(tx, actor, id, old.org_id, spec, now);
  }) as Promise<ReplyWrite>;
}

/** Deletes a reply, audited with what it was. */
export function deleteSavedReply(sql: Sql, actor: Actor, id: number): Promise<SavedReply> {
  return sql.begin(async (tx) => {
    const old = await replyInScope(tx, actor, id);
    await tx`delete from saved_replies where id = ${id}`;
    await audit(tx, actor, "saved_reply.delete", `saved_reply:${id}`, { name: old.name, body: old.body, subject: old.subject, channels: old.channels }, old.org_id);
    return old;
  }) as Promise<SavedReply>;
}

async function replyInScope(sql: Sql | Tx, actor: Actor, id: number): Promise<SavedReply> {
  const [row] = await sql<SavedReply[]>`
    select * from saved_replies where id = ${id} ${actor.orgId === null ? sql`` : sql`and org_id = ${actor.orgId}`}`;
  if (!row) throw new AppError("not_found");
  return row;
}

export const getSavedReply = (sql: Sql, actor: Actor, id: number): Promise<SavedReply> => replyInScope(sql, actor, id);

export interface ReplyPick {
  /** Name prefix, any case (what follows the / typed); empty: all. */
  prefix?: string;
  /** Only replies usable on this channel. */
  channel?: ReplyChannel;
  limit?: number;
}

/**
 * The picker: an organization's replies whose name starts with the prefix, by name. The admin
 * (orgId of the actor null) names the organization (a lead's); `orgId` null lists every one's.
 */
export async function listSavedReplies(sql: Sql, actor: Actor, orgId: number | null, pick: ReplyPick = {}): Promise<SavedReply[]> {
  if (actor.orgId !== null && orgId !== actor.orgId) throw new AppError("not_found");
  const prefix = cleanText(pick.prefix ?? "");
  return sql<SavedReply[]>`
    select * from saved_replies
    where ${orgId === null ? sql`true` : sql`org_id = ${orgId}`}
      ${prefix === "" ? sql`` : sql`and starts_with(lower(name), lower(${prefix}))`}
      ${pick.channel ? sql`and ${pick.channel}::text = any(channels)` : sql``}
    order by org_id, lower(name), id
    limit ${Math.max(1, Math.min(pick.limit ?? 20, 500))}`;
}

export type ReplyPreview =
  | { ok: true; channel: ReplyChannel; subject: string; body: string }
  | Refusal<"not_for_channel" | "no_organization">;

/**
 * The reply as it would be sent to the lead on `channel`: the send path's merge (asSent) with the
 * lead's values and its organization's, so the preview is exactly the message's text (an email's
 * merged HTML and subject; a note is stored as typed, so it is shown as typed). The reply and the
 * lead must both be in the actor's scope and in one organization (else `not_found`).
 */
export async function previewSavedReply(sql: Sql, actor: Actor, replyId: number, leadId: number, channel: ReplyChannel): Promise<ReplyPreview> {
  const reply = await replyInScope(sql, actor, replyId);
  const ctx = await mergeContext(sql, actor, leadId);
  if (!ctx || ctx.lead.org_id !== reply.org_id) throw new AppError("not_found");
  if (!reply.channels.includes(channel)) return { ok: false, reason: "not_for_channel" };
  if (channel === "note") return { ok: true, channel, subject: reply.subject, body: reply.body };
  if (!ctx.org) return { ok: false, reason: "no_organization" };
  const text = asSent(channel, reply.body, reply.subject, ctx.lead, ctx.org);
  return { ok: true, channel, subject: text.subject, body: text.body };
}
