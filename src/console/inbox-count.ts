// The navigation's inbox count, asked on every console page: the organization's open
// conversations (the inbox's All open view, src/workspace/inbox.ts), an index-only count of its
// range stopped after INBOX_CAP + 1 rows, so a backlog of any size costs the same few index pages.
import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";
import { COUNT_CAP, pageLimit } from "../workspace/inbox";

/** Counts are exact up to this; beyond it the answer is INBOX_CAP + 1 (the navigation shows "999+"). */
export const INBOX_CAP = COUNT_CAP;

/** The actor's open conversations: 0 … INBOX_CAP, or INBOX_CAP + 1 for more. */
export async function inboxCount(sql: Sql, actor: Actor): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from (
      select 1 from conversations c
      where c.status = 'open' and ${actor.orgId === null ? sql`true` : sql`c.org_id = ${actor.orgId}`}
      limit ${pageLimit(sql, INBOX_CAP + 1)}) x`;
  return row!.n;
}


