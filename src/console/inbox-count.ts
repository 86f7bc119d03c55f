// The navigation's inbox count, asked on every console page: an index-only count of the
// unhandled inbound messages (sql/0018 messages_unhandled), stopped after INBOX_CAP + 1 rows, so a
// backlog of any size costs the same few index pages.
import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";
import { unhandledCount } from "../messages/inbox";

/** Counts are exact up to this; beyond it the answer is INBOX_CAP + 1 (the navigation shows "999+"). */
export const INBOX_CAP = 999;

/** The actor's unhandled inbound messages: 0 … INBOX_CAP, or INBOX_CAP + 1 for more. */
export function inboxCount(sql: Sql, actor: Actor): Promise<number> {
  return unhandledCount(sql, actor.orgId, INBOX_CAP);
}
