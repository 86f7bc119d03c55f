// The live change feed's statements (sql/0023): reading an organization's changes after an id,
// numbering pending changes in commit order (the sequencer), and retention.
import type { Sql } from "../db/client";
import { unprepared } from "../db/client";

export type ChangeKind = "message" | "assignment" | "status" | "activity" | "callback" | "lead";

export interface Change {
  /** Monotonic, and committed in order: a reader that has seen N has seen every change up to N. */
  id: number;
  org_id: number | null;
  kind: ChangeKind;
  conversation_id: number | null;
  lead_id: number | null;
  /** The conversation's state after the change (status, assignee, …) and what is particular to the kind. */
  data: Record<string, unknown>;
  /** When the change happened. */
  at: Date;
}

export interface ChangePage {
  changes: Change[];
  /** The id to read after next time (the last change returned, or the feed's head when none is left). */
  last: number;
  /** More changes follow `last` right now (the page was full). */
  more: boolean;
  /**
   * Changes after the id asked for may have been pruned (a tab away longer than the retention), or
   * the id is beyond anything this feed has numbered (another database): the reader cannot catch
   * up change by change and reloads instead. `last` is then the head to continue from.
   */
  reset: boolean;
}

/** The channel of "organization X has changes up to id N". */
export const FEED_CHANNEL = "leadline_workspace";

/** The settings row that remembers the highest id retention has deleted. */
export const PRUNED_THROUGH = "workspace_feed_pruned_through";

/**
 * The changes an organization's tab missed: those after `lastId`, oldest first, at most `limit`.
 * Confined in SQL to the organization (`orgId` null: an admin, every organization). One statement,
 * one snapshot: the head it reports is the highest id committed in that snapshot, so continuing
 * from it skips nothing (ids commit in order).
 */
export async function changesSince(sql: Sql, orgId: number | null, lastId: number, limit: number): Promise<ChangePage> {
  const rows = await sql<(Change & { head: number | null; pruned: number | null })[]>`
    with head as (
      select (select max(id) from workspace_changes) as head,
             (select (value #>> '{}')::bigint from settings where key = ${PRUNED_THROUGH}) as pruned
    )
    select w.id, w.org_id, w.kind, w.conversation_id, w.lead_id, w.data, w.at, head.head, head.pruned
    from head
    left join lateral (
      select * from workspace_changes w
      where w.id > ${lastId} ${orgId === null ? sql`` : sql`and w.org_id = ${orgId}`}
      order by w.id
      limit ${limit + 1}
    ) w on true
    order by w.id`;
  const head = rows[0]?.head ?? 0;
  const pruned = rows[0]?.pruned ?? 0;
  const found = rows.filter((r) => r.id !== null);
  const more = found.length > limit;
  const changes = (more ? found.slice(0, limit) : found).map(({ head: _h, pruned: _p, ...c }) => c as Change);
  const reset = lastId < pruned || lastId > head;
  const last = more ? changes[changes.length - 1]!.id : reset ? head : Math.max(lastId, head);
  return { changes: reset ? [] : changes, last, more: more && !reset, reset };
}

/** The advisory lock of the sequencer: one numbering at a time across every instance. */
const SEQUENCER_LOCK = 727_026;

export interface Head {
  org_id: number | null;
  upto: number;
}

/**
 * Numbers up to `batch` pending changes, oldest first, in one statement: if no other instance is
 * numbering right now (a try of the advisory lock, held to this statement's commit), the pending
 * rows are moved into workspace_changes with the next ids of the sequence. Two numberings never
 * overlap, so the ids of one are all committed before the next takes any: ids commit in order. A
 * pending row committed after this statement's snapshot waits for the next run. The answer is each
 * organization's highest id of the batch, also sent as NOTIFY leadline_workspace "org:id" (empty
 * org: the house), delivered to every instance when this commits.
 */
export async function sequenceChanges(sql: Sql, now: Date, batch: number): Promise<{ moved: number; heads: Head[] }> {
  const rows = await unprepared(sql<(Head & { n: number })[]>`
    with turn as (select pg_try_advisory_xact_lock(${SEQUENCER_LOCK}) as mine),
    picked as (select id from workspace_pending where (select mine from turn) order by id limit ${batch}),
    moved as (delete from workspace_pending p using picked where p.id = picked.id returning p.*),
    numbered as (
      insert into workspace_changes (id, org_id, kind, conversation_id, lead_id, data, at, created_at)
      select nextval('workspace_changes_id'), m.org_id, m.kind, m.conversation_id, m.lead_id, m.data, m.at, ${now}
      from (select * from moved order by id) m
      returning id, org_id
    )
    select org_id, max(id) as upto, count(*)::int as n,
           pg_notify(${FEED_CHANNEL}, coalesce(org_id::text, '') || ':' || max(id)) is null as sent
    from numbered group by org_id`);
  return { moved: rows.reduce((s, r) => s + r.n, 0), heads: rows.map((r) => ({ org_id: r.org_id, upto: r.upto })) };
}

/** "org:id" (empty org: the house) → its parts; null for anything else. */
export function parseHead(payload: string): Head | null {
  const m = /^(\d*):(\d{1,18})$/.exec(payload);
  return m ? { org_id: m[1] === "" ? null : Number(m[1]), upto: Number(m[2]) } : null;
}

/**
 * Deletes changes numbered more than `retentionMs` before `now`, in batches; the highest id deleted
 * is kept, so a reader asking from before it is told to reload (ChangePage.reset) rather than given
 * a feed with holes.
 */
export async function pruneChanges(sql: Sql, now: Date, retentionMs: number, batch = 5000): Promise<number> {
  const cutoff = new Date(now.getTime() - retentionMs);
  let total = 0;
  for (;;) {
    const [row] = await unprepared(sql<{ n: number }[]>`
      with gone as (
        delete from workspace_changes w
        where w.id in (select id from workspace_changes where created_at < ${cutoff} order by id limit ${batch})
        returning w.id
      ), kept as (
        insert into settings (key, value, updated_at)
        select ${PRUNED_THROUGH}, to_jsonb(max(id)), ${now} from gone having count(*) > 0
        on conflict (key) do update
          set value = to_jsonb(greatest((settings.value #>> '{}')::bigint, (excluded.value #>> '{}')::bigint)), updated_at = excluded.updated_at
      )
      select count(*)::int as n from gone`);
    total += row!.n;
    if (row!.n < batch) return total;
  }
}
