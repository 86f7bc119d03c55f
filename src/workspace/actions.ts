// The actions on conversations (docs/workspace.md): assign (to a console user of the conversation's
// organization, or nobody), snooze, close, reopen, one at a time or in bulk. Each runs in one
// transaction: the conversations are locked (in id order, so two bulk actions never deadlock),
// confined in SQL to the actor's organization, changed, and each change audited beside it; the
// feed rows come from the conversations' own trigger (sql/0023), in the same transaction. An id of
// another organization is never read, locked or touched: a single action answers not_found for
// it, exactly as for a missing id, and a bulk action leaves it out of what it reports.
import type { Actor } from "../auth/actor";
import { audit } from "../auth/audit";
import type { Sql, Tx } from "../db/client";
import { AppError } from "../errors";
import { inOrg } from "./inbox";
import { bulkIds, type ConversationStatus } from "./model";
import { checkChoice, snoozeEnd, zoneOr, type SnoozeChoice } from "./snooze";

interface Locked {
  id: number;
  org_id: number | null;
  lead_id: number;
  status: ConversationStatus;
  snoozed_until: Date | null;
  assignee: string | null;
  timezone: string;
}

/** What a row becomes, or null when the action would change nothing. */
interface Next {
  status: ConversationStatus;
  snoozedUntil: number | null;
  assignee: string | null;
  /** Closing ends the lead's wait: the conversation was handled without a reply. */
  endWait: boolean;
  details: Record<string, unknown>;
}

export interface BulkOutcome {
  /** Conversations the action changed. */
  changed: number[];
  /** Conversations of the actor's organization that were already so (or, for an assignment, whose organization the user is not of). */
  unchanged: number[];
}

async function lockInScope(tx: Tx, actor: Actor, ids: number[]): Promise<Locked[]> {
  return tx<Locked[]>`
    select c.id, c.org_id, c.lead_id, c.status, c.snoozed_until, c.assignee,
           coalesce((select o.timezone from orgs o where o.id = c.org_id), 'UTC') as timezone
    from conversations c
    where c.id = any(${ids}::bigint[]) and ${inOrg(tx as unknown as Sql, actor.orgId)}
    order by c.id
    for update of c`;
}

const iso = (t: number | null) => (t === null ? "" : new Date(t).toISOString());

/** Locks, decides each row's change, writes the changes and their audit rows. */
async function act(
  sql: Sql,
  actor: Actor,
  ids: number[],
  action: string,
  decide: (row: Locked) => Next | null,
  now: number,
  prepare?: (tx: Tx, rows: Locked[]) => Promise<void>,
): Promise<BulkOutcome & { found: number[] }> {
  return sql.begin(async (tx) => {
    const rows = await lockInScope(tx, actor, ids);
    await prepare?.(tx, rows);
    const changes = rows.flatMap((row) => {
      const next = decide(row);
      return next === null ? [] : [{ row, next }];
    });
    if (changes.length > 0) {
      // Arrays of text: postgres.js serializes arrays of booleans, nulls or dates wrongly.
      await tx`
        update conversations c
        set status = u.status, snoozed_until = nullif(u.until, '')::timestamptz, assignee = nullif(u.assignee, ''),
            waiting_since = case when u.end_wait = 't' then null else c.waiting_since end, updated_at = ${new Date(now)}
        from unnest(${changes.map((x) => x.row.id)}::bigint[], ${changes.map((x) => x.next.status)}::text[],
                    ${changes.map((x) => iso(x.next.snoozedUntil))}::text[], ${changes.map((x) => x.next.assignee ?? "")}::text[],
                    ${changes.map((x) => (x.next.endWait ? "t" : "f"))}::text[]) as u(id, status, until, assignee, end_wait)
        where c.id = u.id`;
      await Promise.all(
        changes.map(({ row, next }) => audit(tx, actor, action, `conversation:${row.id}`, { lead_id: row.lead_id, ...next.details }, row.org_id)),
      );
    }
    const changed = new Set(changes.map((x) => x.row.id));
    return { found: rows.map((r) => r.id), changed: [...changed], unchanged: rows.map((r) => r.id).filter((id) => !changed.has(id)) };
  });
}

const keep = (row: Locked) => ({
  status: row.status,
  snoozedUntil: row.snoozed_until?.getTime() ?? null,
  assignee: row.assignee,
  endWait: false,
});

/** The console users an assignment may name, by organization: active, with a role. */
async function eligibleOrg(tx: Tx, userId: string): Promise<number | null | undefined> {
  const [u] = await tx<{ org_id: number | null }[]>`
    select org_id from users where id = ${userId} and role is not null and disabled_at is null`;
  return u === undefined ? undefined : u.org_id;
}

/** Assigns to `userId` (null: nobody) the conversations of `ids` in scope whose organization the user belongs to. */
export async function bulkAssign(sql: Sql, actor: Actor, ids: readonly unknown[], userId: string | null, now: number): Promise<BulkOutcome> {
  let userOrg: number | null | undefined;
  const { changed, unchanged } = await act(
    sql,
    actor,
    bulkIds(ids),
    userId === null ? "conversation.unassign" : "conversation.assign",
    (row) => {
      if (row.assignee === userId) return null;
      // A user of another organization (or an admin, who belongs to none) is never an assignee.
      if (userId !== null && (userOrg === undefined || userOrg === null || userOrg !== row.org_id)) return null;
      return { ...keep(row), assignee: userId, details: { from: row.assignee, to: userId } };
    },
    now,
    async (tx) => {
      if (userId !== null) userOrg = await eligibleOrg(tx, userId);
    },
  );
  return { changed, unchanged };
}

/**
 * One conversation assigned to `userId` (null: unassigned). not_found for a conversation outside
 * the actor's organization, and for a user who is not a console user of the conversation's.
 */
export async function assignConversation(sql: Sql, actor: Actor, id: number, userId: string | null, now: number): Promise<{ changed: boolean }> {
  let refused = false;
  let userOrg: number | null | undefined;
  const out = await act(
    sql,
    actor,
    [id],
    userId === null ? "conversation.unassign" : "conversation.assign",
    (row) => {
      if (userId !== null && (userOrg === undefined || userOrg === null || userOrg !== row.org_id)) {
        refused = true;
        return null;
      }
      return row.assignee === userId ? null : { ...keep(row), assignee: userId, details: { from: row.assignee, to: userId } };
    },
    now,
    async (tx) => {
      if (userId !== null) userOrg = await eligibleOrg(tx, userId);
    },
  );
  if (out.found.length === 0) throw new AppError("not_found");
  if (refused) throw new AppError("not_found", "no such user in the conversation's organization");
  return { changed: out.changed.length > 0 };
}

/** Snoozes until the choice's time, stated in each conversation's organization's zone. */
export async function bulkSnooze(sql: Sql, actor: Actor, ids: readonly unknown[], choice: SnoozeChoice, now: number): Promise<BulkOutcome> {
  const list = bulkIds(ids);
  // Its shape checked before anything is locked: invalid_input whatever the ids. A time in the
  // past (which depends on each organization's zone) is refused as the rows are decided.
  checkChoice(choice);
  const { changed, unchanged } = await act(sql, actor, list, "conversation.snooze", (row) => snoozed(row, choice, now), now);
  return { changed, unchanged };
}

function snoozed(row: Locked, choice: SnoozeChoice, now: number): Next | null {
  const until = snoozeEnd(choice, now, zoneOr(row.timezone));
  if (row.status === "snoozed" && row.snoozed_until?.getTime() === until) return null;
  return { ...keep(row), status: "snoozed", snoozedUntil: until, details: { from: row.status, until: Math.floor(until / 1000) } };
}

const toStatus = (status: "open" | "closed") => (row: Locked): Next | null =>
  row.status === status ? null : { ...keep(row), status, snoozedUntil: null, endWait: status === "closed", details: { from: row.status } };

export async function bulkClose(sql: Sql, actor: Actor, ids: readonly unknown[], now: number): Promise<BulkOutcome> {
  const { changed, unchanged } = await act(sql, actor, bulkIds(ids), "conversation.close", toStatus("closed"), now);
  return { changed, unchanged };
}

export async function bulkReopen(sql: Sql, actor: Actor, ids: readonly unknown[], now: number): Promise<BulkOutcome> {
  const { changed, unchanged } = await act(sql, actor, bulkIds(ids), "conversation.reopen", toStatus("open"), now);
  return { changed, unchanged };
}

/** One conversation's action: not_found outside the actor's organization; whether it changed anything. */
async function single(out: Promise<BulkOutcome & { found: number[] }>): Promise<{ changed: boolean }> {
  const r = await out;
  if (r.found.length === 0) throw new AppError("not_found");
  return { changed: r.changed.length > 0 };
}

export async function snoozeConversation(sql: Sql, actor: Actor, id: number, choice: SnoozeChoice, now: number): Promise<{ changed: boolean }> {
  checkChoice(choice);
  return single(act(sql, actor, [id], "conversation.snooze", (row) => snoozed(row, choice, now), now));
}
export const closeConversation = (sql: Sql, actor: Actor, id: number, now: number) =>
  single(act(sql, actor, [id], "conversation.close", toStatus("closed"), now));
export const reopenConversation = (sql: Sql, actor: Actor, id: number, now: number) =>
  single(act(sql, actor, [id], "conversation.reopen", toStatus("open"), now));
