// Callbacks (docs/workspace.md): a time to call a lead back, for an assignee (by default the
// conversation's, else the console user scheduling it), optionally with a dial queued for the
// assignee at that time. Due through the job queue (src/jobs/queue.ts): the job, claimed with
// skip locked, locks the callback and acts only while it is `scheduled`, so it comes due once
// however many instances run (and if its job runs again after a crash, it finds it due already).
// Coming due reopens the conversation at the top, gives an unassigned one to the assignee, and
// queues the dial — one transaction, with the clock passed in.
import type { Actor } from "../auth/actor";
import { audit } from "../auth/audit";
import type { Sql, Tx } from "../db/client";
import { queueLeadDial } from "../cti/queries";
import { AppError } from "../errors";
import { enqueue, type Outcome } from "../jobs/queue";
import { inOrg } from "./inbox";
import { ensureConversation, type Conversation } from "./conversations";
import { chosenTime, zoneOr } from "./snooze";

/** The job kind of a callback coming due (ref: the callback's id; due at its time). */
export const CALLBACK_DUE = "workspace.callback";

export type CallbackStatus = "scheduled" | "due" | "done" | "cancelled";

export interface Callback {
  id: number;
  conversation_id: number;
  lead_id: number;
  assignee: string | null;
  assignee_name: string | null;
  due_at: Date;
  note: string;
  dial: boolean;
  dial_id: number | null;
  status: CallbackStatus;
  created_by: string;
  created_at: Date;
  fired_at: Date | null;
  closed_at: Date | null;
}

export interface NewCallback {
  leadId: number;
  /** Unix ms, or a wall time `YYYY-MM-DDTHH:MM` in the organization's zone. */
  at: number | string;
  note?: string;
  /** A console user of the lead's organization; default the conversation's assignee, else the actor. */
  assignee?: string | null;
  /** Queue a dial for the assignee when it comes due. */
  dial?: boolean;
}

export const NOTE_MAX = 2000;

/** A console user of the organization (active, with a role), or not. */
async function userInOrg(tx: Tx, userId: string, orgId: number | null): Promise<boolean> {
  if (orgId === null) return false;
  const [row] = await tx`select 1 from users where id = ${userId} and org_id = ${orgId} and role is not null and disabled_at is null`;
  return row !== undefined;
}

/**
 * Schedules a callback of a lead within the actor's organization (not_found otherwise, and for an
 * assignee who is not a console user of the lead's organization). An agent queues a dial only for
 * themselves, as the console's dial does (src/cti/service.ts). Audited; its job in the same transaction.
 */
export async function scheduleCallback(sql: Sql, actor: Actor, input: NewCallback, now: number): Promise<Callback> {
  const note = (input.note ?? "").replaceAll("\u0000", "").trim();
  if (note.length > NOTE_MAX) throw new AppError("invalid_input", `note: at most ${NOTE_MAX} characters`);
  if (typeof input.at === "number" && !Number.isFinite(input.at)) throw new AppError("invalid_input", "at: expected a time");
  const id = await sql.begin(async (tx) => {
    const conv = await ensureConversation(tx, actor, input.leadId, new Date(now));
    const at = chosenTime(input.at, now, zoneOr(conv.timezone), "at");
    const assignee = await assigneeOf(tx, actor, conv, input);
    const dial = input.dial === true;
    if (dial && assignee === null) throw new AppError("invalid_input", "dial: a callback with a dial needs an assignee");
    if (dial && actor.agent !== null && assignee !== actor.agent) throw new AppError("not_found", "an agent queues dials only to themselves");
    const [row] = await tx<{ id: number }[]>`
      insert into callbacks (conversation_id, lead_id, assignee, due_at, note, dial, created_by, created_at)
      values (${conv.id}, ${conv.lead_id}, ${assignee}, ${new Date(at)}, ${note}, ${dial}, ${actor.id}, ${new Date(now)})
      returning id`;
    await enqueue(tx, { kind: CALLBACK_DUE, ref: row!.id, runAt: at });
    await audit(tx, actor, "callback.schedule", `lead:${conv.lead_id}`, { callback_id: row!.id, due_at: Math.floor(at / 1000), assignee, dial }, conv.org_id);
    return row!.id;
  });
  return (await findCallback(sql, actor, id))!;
}

async function assigneeOf(tx: Tx, actor: Actor, conv: Conversation, input: NewCallback): Promise<string | null> {
  if (input.assignee) {
    if (!(await userInOrg(tx, input.assignee, conv.org_id))) throw new AppError("not_found", "no such user in the lead's organization");
    return input.assignee;
  }
  if (conv.assignee !== null) return conv.assignee;
  return actor.type === "user" && (await userInOrg(tx, actor.id, conv.org_id)) ? actor.id : null;
}

/** A callback's columns (alias `cb`, its assignee `u`). */
export const callbackColumns = (sql: Sql | Tx) => sql`
  cb.id, cb.conversation_id, cb.lead_id, cb.assignee, u.name as assignee_name, cb.due_at, cb.note, cb.dial, cb.dial_id,
  cb.status, cb.created_by, cb.created_at, cb.fired_at, cb.closed_at`;

/** A callback within the actor's organization (through its conversation), or null. */
export async function findCallback(sql: Sql | Tx, actor: Actor, id: number): Promise<Callback | null> {
  const [row] = await sql<Callback[]>`
    select ${callbackColumns(sql)} from callbacks cb join conversations c on c.id = cb.conversation_id
    left join users u on u.id = cb.assignee
    where cb.id = ${id} and ${inOrg(sql as Sql, actor.orgId)}`;
  return row ?? null;
}

/** A lead's callbacks, newest first (at most `limit`), within the actor's organization. */
export async function leadCallbacks(sql: Sql, actor: Actor, leadId: number, limit = 50): Promise<Callback[]> {
  return sql<Callback[]>`
    select ${callbackColumns(sql)} from callbacks cb join conversations c on c.id = cb.conversation_id
    left join users u on u.id = cb.assignee
    where cb.lead_id = ${leadId} and ${inOrg(sql, actor.orgId)}
    order by cb.id desc limit ${limit}`;
}

/**
 * Marks a callback done or cancelled (from scheduled or due), audited; its job, if it has not run,
 * is dropped. not_found outside the actor's organization; false when it was done or cancelled already.
 */
export async function closeCallback(sql: Sql, actor: Actor, id: number, to: "done" | "cancelled", now: number): Promise<{ changed: boolean }> {
  return sql.begin(async (tx) => {
    const [row] = await tx<{ id: number; status: CallbackStatus; org_id: number | null; lead_id: number }[]>`
      select cb.id, cb.status, c.org_id, cb.lead_id from callbacks cb join conversations c on c.id = cb.conversation_id
      where cb.id = ${id} and ${inOrg(tx as unknown as Sql, actor.orgId)}
      for update of cb`;
    if (!row) throw new AppError("not_found");
    if (row.status === "done" || row.status === "cancelled") return { changed: false };
    await tx`update callbacks set status = ${to}, closed_at = ${new Date(now)} where id = ${id}`;
    await tx`delete from jobs where kind = ${CALLBACK_DUE} and ref = ${id}`;
    await audit(tx, actor, to === "done" ? "callback.done" : "callback.cancel", `lead:${row.lead_id}`, { callback_id: id, from: row.status }, row.org_id);
    return { changed: true };
  });
}

/**
 * The job's step: the callback comes due if it is still scheduled and its time has come (a job
 * run early is put back to its time). Once: the callback row is locked and moved out of
 * `scheduled` in the same transaction as everything it causes.
 */
export async function callbackDue(sql: Sql, id: number, now: number): Promise<Outcome> {
  return sql.begin(async (tx) => {
    const [cb] = await tx<{ status: CallbackStatus; due_at: Date; assignee: string | null; dial: boolean; lead_id: number; conversation_id: number; org_id: number | null }[]>`
      select cb.status, cb.due_at, cb.assignee, cb.dial, cb.lead_id, cb.conversation_id, c.org_id
      from callbacks cb join conversations c on c.id = cb.conversation_id
      where cb.id = ${id} for update of cb`;
    if (!cb || cb.status !== "scheduled") return { done: true };
    if (cb.due_at.getTime() > now) return { retryAt: cb.due_at.getTime() };
    const at = new Date(now);
    // The assignee must still be a console user of the lead's organization (the lead may have moved).
    const assignee = cb.assignee !== null && (await userInOrg(tx, cb.assignee, cb.org_id)) ? cb.assignee : null;
    const dialId = cb.dial && assignee !== null ? await queueLeadDial(tx, cb.org_id, assignee, cb.lead_id) : null;
    await tx`update callbacks set status = 'due', fired_at = ${at}, dial_id = ${dialId} where id = ${id}`;
    await tx`
      update conversations c
      set status = 'open', snoozed_until = null, last_activity_at = greatest(c.last_activity_at, ${at}),
          assignee = coalesce(c.assignee, ${assignee}::text), updated_at = ${at}
      where c.id = ${cb.conversation_id}`;
    return { done: true };
  });
}
