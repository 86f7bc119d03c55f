// TEMPORARY STUB of the core's src/console/audit.ts (console.md): replaced by main's at merge.
import type { Actor } from "../auth/actor";
import type { Sql, Tx } from "../db/client";
export async function audit(_tx: Sql | Tx, _actor: Actor, _action: string, _target: string, _details?: Record<string, unknown>): Promise<void> {
  throw new Error("stub");
}
