import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";
import type { CallReport } from "./model";

export interface ScopedDial {
  id: number;
  lead_id: number | null;
}

/**
 * A dial the actor may report on. A dial belongs to the agent it was queued for: keys bound to
 * that agent reach it whatever its lead's organization (a platform key may queue work for an
 * agent; the agent then sees the dial's phone and name, and nothing else of its lead). Besides
 * them, only actors that may address its lead anyway reach it: the platform, and keys of the
 * lead's organization.
 */
export async function findDial(sql: Sql, actor: Actor, dialId: number): Promise<ScopedDial | null> {
  const reach =
    actor.orgId === null
      ? sql`true`
      : sql`(d.agent = ${actor.agent ?? ""} or exists (select 1 from leads l where l.id = d.lead_id and l.org_id = ${actor.orgId}))`;
  const [row] = await sql<ScopedDial[]>`select d.id, d.lead_id from dials d where d.id = ${dialId} and ${reach}`;
  return row ?? null;
}

/** Records the call and moves its dial out of pending/dialing, in one statement. */
export async function insertCall(sql: Sql, actor: Actor, leadId: number | null, report: CallReport): Promise<number> {
  const [row] = await sql<{ id: number }[]>`
    with d as (
      update dials set status = 'done', ended_at = now()
      where id = ${report.dialId} and status in ('pending', 'dialing')
    )
    insert into calls (lead_id, dial_id, key_id, phone, to_number, status, secs, agent, recording_id,
                       ai_summary, occurred_at)
    values (${leadId}, ${report.dialId}, ${actor.keyId}, ${report.phone}, ${report.toNumber}, ${report.status},
            ${report.secs}, ${report.agent}, ${report.recordingId}, ${report.aiSummary},
            coalesce(to_timestamp(${report.epoch}::bigint), now()))
    returning id`;
  return row.id;
}
