import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";

/** Unhandled inbound messages the actor may see, for the navigation's count (null: not counted). */
export async function inboxCount(_sql: Sql, _actor: Actor): Promise<number | null> {
  return null;
}
