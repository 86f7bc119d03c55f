// The audit log: who changed what, when and from which (hashed) address. Written by the service
// that makes the change, in the change's own transaction, so a change is never without its row.
// Here, beside the Actor, so that every service (the console's, provisioning) writes it the same way.
import type { Actor } from "./actor";
import type { Sql, Tx } from "../db/client";

/** One row: `action` dotted (`key.create`), `target` what it acted on (`lead:12`), `orgId` whose log it is in. */
export interface AuditEntry {
  action: string;
  target: string;
  details?: Record<string, unknown>;
  orgId: number | null;
}

/**
 * `action`: dotted (`key.create`, `message.send`); `target`: what it acted on (`lead:12`, `key:4`);
 * `orgId`: the organization whose log it belongs to (default the actor's; an admin acting on one
 * organization's record passes that organization, so its managers see it).
 */
export async function audit(
  tx: Sql | Tx,
  actor: Actor,
  action: string,
  target: string,
  details: Record<string, unknown> = {},
  orgId: number | null = actor.orgId,
): Promise<void> {
  await auditMany(tx, actor, [{ action, target, details, orgId }]);
}

/** Several rows by one actor in one statement (a provisioning run changes thousands of objects at once). */
export async function auditMany(tx: Sql | Tx, actor: Actor, entries: AuditEntry[]): Promise<void> {
  for (let i = 0; i < entries.length; i += 1000) {
    const rows = entries.slice(i, i + 1000).map((e) => ({
      org_id: e.orgId,
      actor_type: actor.type,
      actor_id: actor.id,
      action: e.action,
      target: e.target,
      details: tx.json((e.details ?? {}) as never),
      address: actor.address ?? "",
    }));
    await tx`insert into audit_log ${tx(rows)}`;
  }
}

/** One row, answering its id (for auditOutcome). */
export async function auditRow(
  tx: Sql | Tx,
  actor: Actor,
  action: string,
  target: string,
  details: Record<string, unknown> = {},
  orgId: number | null = actor.orgId,
): Promise<string> {
  const [row] = await tx<{ id: string }[]>`
    insert into audit_log (org_id, actor_type, actor_id, action, target, details, address)
    values (${orgId}, ${actor.type}, ${actor.id}, ${action}, ${target}, ${tx.json(details as never)}, ${actor.address ?? ""})
    returning id::text as id`;
  return row!.id;
}

/**
 * Adds to a row's details what was known only after it was written: how an export (written before
 * its first byte left, so that it is never without its row) ended. Nothing else changes a row.
 */
export async function auditOutcome(sql: Sql | Tx, id: string, details: Record<string, unknown>): Promise<void> {
  await sql`update audit_log set details = details || ${sql.json(details as never)} where id = ${id}::bigint`;
}
