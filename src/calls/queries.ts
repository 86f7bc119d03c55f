import type { Sql } from "../db/client";
import { inTenant } from "../leads/scope";
import type { CallReport } from "./model";

export interface ScopedDial {
  id: number;
  lead_id: number | null;
}

/** A dial the key may report on: one queued by an agent of the key's organization. */
export async function findDial(sql: Sql, orgId: number | null, dialId: number): Promise<ScopedDial | null> {
  const [row] = await sql<ScopedDial[]>`
    select d.id, d.lead_id from dials d join users u on u.id = d.agent
    where d.id = ${dialId} and ${orgId === null ? sql`true` : sql`u.org_id = ${orgId}`}`;
  return row ?? null;
}

export async function leadInScope(sql: Sql, orgId: number | null, leadId: number): Promise<boolean> {
  const [row] = await sql`select 1 from leads l where l.id = ${leadId} and ${inTenant(sql, orgId)}`;
  return row !== undefined;
}

/** Records the call and moves its dial out of pending/dialing, in one statement. */
export async function insertCall(
  sql: Sql,
  keyId: number,
  leadId: number | null,
  report: CallReport,
): Promise<number> {
  const [row] = await sql<{ id: number }[]>`
    with d as (
      update dials set status = 'done', ended_at = now()
      where id = ${report.dialId} and status in ('pending', 'dialing')
    )
    insert into calls (lead_id, dial_id, key_id, phone, to_number, status, secs, agent, recording_id,
                       ai_summary, occurred_at)
    values (${leadId}, ${report.dialId}, ${keyId}, ${report.phone}, ${report.toNumber}, ${report.status},
            ${report.secs}, ${report.agent}, ${report.recordingId}, ${report.aiSummary},
            coalesce(to_timestamp(${report.epoch}::bigint), now()))
    returning id`;
  return row.id;
}
