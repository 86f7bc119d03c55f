import type { Sql } from "../db/client";
import { inInputOrder } from "../db/batcher";
import { drawHit } from "../limits/fused";
import { leadName, newestLead } from "../leads/match";
import { inRowTenant, inTenant, NO_ORG } from "../leads/scope";

/** Queues a dial for the agent, matched to the newest lead in scope with the same last 10 digits. */
export async function queueDial(
  sql: Sql,
  orgId: number | null,
  agent: string,
  keyId: number | null,
  digits: string,
): Promise<{ id: number; lead_id: number | null }> {
  const [row] = await sql<{ id: number; lead_id: number | null }[]>`
    insert into dials (agent, key_id, lead_id, phone)
    values (${agent}, ${keyId}, (select m.id from ${newestLead(sql, digits.slice(-10), inTenant(sql, orgId))} m), ${digits})
    returning id, lead_id`;
  return row;
}

export interface LookupRead {
  orgId: number | null;
  /** Last 10 digits. */
  phone: string;
}

export type LookupMatch = { id: number; name: string } | null;

/**
 * CTI lookup for many requests in one statement (src/limits/fused.ts): one row per read, each
 * drawing its key's hit, with the newest lead in the key's scope whose last 10 digits match.
 */
export async function countedLookups(sql: Sql, reads: readonly LookupRead[], seqs: number[]): Promise<{ hit_: number; out: LookupMatch }[]> {
  const rows = await sql<{ i: number; hit_: number; id: number | null; name: string | null }[]>`
    select u.i, ${drawHit(sql)}, m.id, m.name
    from unnest(${seqs}::int8[], ${reads.map((r) => r.orgId ?? NO_ORG)}::int8[],
                ${reads.map((r) => r.phone)}::text[]) with ordinality as u(seq, org, phone, i)
    left join lateral ${newestLead(sql, sql`u.phone`, inRowTenant(sql))} m on true`;
  return inInputOrder(rows, reads.length).map((r) => ({
    hit_: r.hit_,
    out: r.id === null ? null : { id: r.id, name: r.name ?? "" },
  }));
}

export interface ClaimedDial {
  id: number;
  lead_id: number | null;
  phone: string;
  name: string | null;
  epoch: number;
}

/** The agent's oldest pending dial, moved to `dialing`; skip locked so two agents' pollers never collide. */
export async function claimDial(sql: Sql, agent: string): Promise<ClaimedDial | null> {
  const [row] = await sql<ClaimedDial[]>`
    with next as (
      select id from dials where agent = ${agent} and status = 'pending'
      order by id limit 1 for update skip locked
    ), claimed as (
      update dials d set status = 'dialing', claimed_at = now()
      from next where d.id = next.id
      returning d.id, d.lead_id, d.phone, d.created_at
    )
    select c.id, c.lead_id, c.phone,
           (select ${leadName(sql)} from leads l where l.id = c.lead_id) as name,
           floor(extract(epoch from c.created_at))::bigint as epoch
    from claimed c`;
  return row ?? null;
}
