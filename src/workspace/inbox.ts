// The inbox's reads (docs/workspace.md): a page of a view, newest activity first, keyset by
// (last_activity_at, id), and the navigation's capped counts per view. Confined in SQL to the
// actor's organization (an admin's actor, org null, reads every organization). Each view is one
// range of one index of `conversations` (sql/0023), so a page reads about its own rows and a count
// at most its cap, however many conversations the organization has.
import type { PendingQuery, Row } from "postgres";
import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";
import { leadName } from "../leads/match";
import { consentOf } from "../messages/queries";
import { quietHoursEnd, recipientZone } from "../messages/quiet-hours";
import { listCursorText, userOf, type InboxFilter, type InboxRow, type ListCursor, type View } from "./model";

type Fragment = PendingQuery<Row[]>;

/** Counts are exact up to this; beyond it the answer is COUNT_CAP + 1 (the navigation shows "999+"). */
export const COUNT_CAP = 999;

/** The tenant rule on `c` (conversations): the organization's rows; every row for the platform. */
export const inOrg = (sql: Sql, orgId: number | null) => (orgId === null ? sql`true` : sql`c.org_id = ${orgId}`);

/**
 * A page's LIMIT written into the statement as a number. Every connection plans each statement
 * once, generically (src/db/client.ts), and a generic plan cannot see a LIMIT passed as a value:
 * it reckons with a tenth of the range, and for the Closed view (170,000 conversations of one
 * organization in bench/workspace.ts) it sorted a bitmap scan of all of them, 290 ms a page,
 * where the index hands over the page in order. An integer checked here, never text.
 */
export function pageLimit(sql: Sql, n: number) {
  if (!Number.isSafeInteger(n) || n < 1 || n > 10_000) throw new RangeError(`page size ${n}`);
  return sql.unsafe(String(n));
}

/** Rows after `cursor` in (last_activity_at desc, id desc) order. */
const after = (sql: Sql, cursor: ListCursor | null) =>
  cursor === null
    ? sql``
    : sql`and (c.last_activity_at, c.id) < (timestamptz 'epoch' + ${cursor.micros}::bigint * interval '1 microsecond', ${cursor.id}::bigint)`;

/** The columns of a conversation the list shows (alias `c`). */
const conversationColumns = (sql: Sql) => sql`
  c.id, c.lead_id, c.org_id, c.status, c.snoozed_until, c.assignee, c.last_activity_at, c.last_message_id,
  c.last_channel, c.last_direction, c.snippet, c.waiting_since`;

/**
 * A view's conversations as ranges of rows, each ordered and cut at `n`. Statuses are written into
 * the statement, never passed as values: the partial indexes' predicates must be visible to the
 * planner, and every connection plans each statement once, generically.
 */
function arms(sql: Sql, actor: Actor, f: InboxFilter, cursor: ListCursor | null, n: number): Fragment[] {
  const org = inOrg(sql, actor.orgId);
  const channel = f.channel ? sql`and c.last_channel = ${f.channel}` : sql``;
  const assignee =
    f.assignee === "none" ? sql`and c.assignee is null` : f.assignee ? sql`and c.assignee = ${f.assignee}` : sql``;
  const page = sql`${after(sql, cursor)} order by c.last_activity_at desc, c.id desc limit ${pageLimit(sql, n)}`;
  const cols = conversationColumns(sql);
  const range = (where: Fragment) => sql`(select ${cols} from conversations c where ${where} and ${org} ${channel} ${assignee} ${page})`;
  switch (f.view) {
    case "open":
      return [range(sql`c.status = 'open'`)];
    case "snoozed":
      return [range(sql`c.status = 'snoozed'`)];
    case "closed":
      return [range(sql`c.status = 'closed'`)];
    case "unassigned":
      // An assignee filter names someone: nobody's conversation is theirs.
      return f.assignee && f.assignee !== "none" ? [] : [sql`(select ${cols} from conversations c
        where c.status = 'open' and c.assignee is null and ${org} ${channel} ${page})`];
    case "mine": {
      const me = userOf(actor);
      if (me === null || (f.assignee && f.assignee !== me)) return [];
      // Assigned to me, or with a callback of mine that has come due (src/workspace/callbacks.ts).
      return [
        sql`(select ${cols} from conversations c
             where c.assignee = ${me} and c.status = 'open' and ${org} ${channel} ${page})`,
        sql`(select ${cols} from callbacks cb join conversations c on c.id = cb.conversation_id
             where cb.assignee = ${me} and cb.status = 'due' and c.status = 'open' and ${org} ${channel} ${page})`,
      ];
    }
  }
}

type ListRow = Omit<InboxRow, "quiet_until" | "cursor" | "timezone"> & {
  micros: string;
  timezone: string | null;
  state: string;
  quiet_start: string | null;
  quiet_end: string | null;
};

/**
 * A page of a view: `limit` rows after `cursor`, and the cursor of the next page (null on the
 * last). `now` (the clock's) decides the quiet-hours badge.
 */
export async function inboxPage(
  sql: Sql,
  actor: Actor,
  f: InboxFilter,
  cursor: ListCursor | null,
  limit: number,
  now: number,
): Promise<{ rows: InboxRow[]; next: ListCursor | null }> {
  const ranges = arms(sql, actor, f, cursor, limit + 1);
  if (ranges.length === 0) return { rows: [], next: null };
  const union = ranges.length === 1 ? ranges[0]! : sql`${ranges[0]!} union ${ranges[1]!}`;
  // The page's own rows first (one index range per arm), then each row's lead, assignee and
  // organization by lateral lookups. Written as joins, the generic plan (which cannot see the
  // page's size) reckons with a tenth of the range — 17,000 of 170,000 closed conversations — and
  // hash-joins the whole leads table: 270 ms a page at 1,000,000 leads (bench/workspace.ts). A
  // lateral subquery with a LIMIT is never flattened into a join: it is one index lookup per row.
  const rows = await sql<ListRow[]>`
    select c.*, u.name as assignee_name, l.name, l.phone, l.state, l.sms_opted_out, l.email_opted_out,
           o.timezone, o.quiet_start, o.quiet_end,
           coalesce(d.due, false) as callback_due,
           (extract(epoch from c.last_activity_at) * 1000000)::bigint::text as micros
    from (select * from (${union}) c order by c.last_activity_at desc, c.id desc limit ${pageLimit(sql, limit + 1)}) c
    cross join lateral (
      select ${leadName(sql)} as name, l.phone, l.state,
             coalesce(${consentOf(sql, "sms")} = 'out', false) as sms_opted_out,
             coalesce(${consentOf(sql, "email")} = 'out', false) as email_opted_out
      from leads l where l.id = c.lead_id limit 1) l
    left join lateral (select u.name from users u where u.id = c.assignee limit 1) u on true
    left join lateral (select o.timezone, o.quiet_start, o.quiet_end from orgs o where o.id = c.org_id limit 1) o on true
    left join lateral (select true as due from callbacks cb where cb.conversation_id = c.id and cb.status = 'due' limit 1) d on true
    order by c.last_activity_at desc, c.id desc`;
  const more = rows.length > limit;
  const page = (more ? rows.slice(0, limit) : rows).map((r) => inboxRow(r, now));
  const last = page[page.length - 1];
  return { rows: page, next: more && last ? { micros: Number(last.cursor.split(".")[0]), id: last.id } : null };
}

function inboxRow(r: ListRow, now: number): InboxRow {
  const { micros, state, quiet_start, quiet_end, timezone, ...row } = r;
  const quiet = quiet_start && quiet_end ? { start: quiet_start, end: quiet_end } : null;
  // The gate's own rule (gates.ts quietGate): the recipient's zone from the lead's state, else the org's.
  const quietUntil = r.org_id === null || quiet === null ? null : quietHoursEnd(now, quiet, recipientZone(state, timezone ?? ""));
  return { ...row, timezone: timezone ?? "UTC", quiet_until: quietUntil, cursor: listCursorText({ micros: Number(micros), id: r.id }) };
}

export type ViewCounts = Record<View, number>;

/**
 * The navigation's count of every view (unfiltered): each an index-only count of at most
 * `cap + 1` entries of its range, so 20,000 open conversations cost what 1,000 do. A value above
 * `cap` means "more than cap".
 */
export async function viewCounts(sql: Sql, actor: Actor, cap = COUNT_CAP): Promise<ViewCounts> {
  const org = inOrg(sql, actor.orgId);
  const me = userOf(actor);
  const capped = (q: Fragment) => sql`(select count(*)::int from (${q} limit ${pageLimit(sql, cap + 1)}) x)`;
  const [row] = await sql<ViewCounts[]>`
    select ${capped(sql`select 1 from conversations c where c.status = 'open' and ${org}`)} as open,
           ${capped(sql`select 1 from conversations c where c.status = 'snoozed' and ${org}`)} as snoozed,
           ${capped(sql`select 1 from conversations c where c.status = 'closed' and ${org}`)} as closed,
           ${capped(sql`select 1 from conversations c where c.status = 'open' and c.assignee is null and ${org}`)} as unassigned,
           ${
             me === null
               ? sql`0`
               : capped(sql`(select c.id from conversations c where c.assignee = ${me} and c.status = 'open' and ${org} limit ${pageLimit(sql, cap + 1)})
                            union
                            (select c.id from callbacks cb join conversations c on c.id = cb.conversation_id
                             where cb.assignee = ${me} and cb.status = 'due' and c.status = 'open' and ${org} limit ${pageLimit(sql, cap + 1)})`)
           } as mine`;
  return row!;
}
