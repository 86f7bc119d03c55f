import type { Sql } from "../db/client";
import { inInputOrder } from "../db/batcher";
import { hitColumns, type Hit } from "../http/rate-limit";
import { inRowTenant, inTenant, NO_ORG } from "../leads/scope";

/** Queues a dial for the agent, matched to the newest lead in scope with the same last 10 digits. */
export async function queueDial(
  sql: Sql,
  orgId: number | null,
  agent: string,
  keyId: number,
  digits: string,
): Promise<{ id: number; lead_id: number | null }> {
  const [row] = await sql<{ id: number; lead_id: number | null }[]>`
    insert into dials (agent, key_id, lead_id, phone)
    values (${agent}, ${keyId}, (
      select l.id from leads l
      where l.phone = ${digits.slice(-10)} and ${inTenant(sql, orgId)}
      order by l.id desc limit 1), ${digits})
    returning id, lead_id`;
  return row;
}

export interface LookupRead {
  /** The Counter's sequence oid. */
  seq: number;
  orgId: number | null;
  /** Last 10 digits. */
  phone: string;
}

/** CTI lookup's answer for one read: the hit it drew, and the newest lead in scope, if any. */
export interface LookupReply {
  hit: Hit;
  lead: { id: number; name: string } | null;
}

/**
 * CTI lookup for many requests in one statement (src/db/batcher.ts): one row per read, each
 * drawing its key's hit, with the newest lead in the key's scope whose last 10 digits match.
 */
export async function countedLookups(sql: Sql, reads: readonly LookupRead[]): Promise<LookupReply[]> {
  const rows = await sql<({ i: number; id: number | null; name: string | null } & Hit)[]>`
    select u.i, ${hitColumns(sql)}, m.id, m.name
    from unnest(${reads.map((r) => r.seq)}::int8[], ${reads.map((r) => r.orgId ?? NO_ORG)}::int8[],
                ${reads.map((r) => r.phone)}::text[]) with ordinality as u(seq, org, phone, i)
    left join lateral (
      select l.id, trim(l.first_name || ' ' || l.last_name) as name
      from leads l
      where l.phone = u.phone and ${inRowTenant(sql)}
      order by l.id desc limit 1) m on true`;
  return inInputOrder(rows, reads.length).map((r) => ({
    hit: { hour_: r.hour_, v_: r.v_ },
    lead: r.id === null ? null : { id: r.id, name: r.name ?? "" },
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
           (select trim(first_name || ' ' || last_name) from leads where id = c.lead_id) as name,
           floor(extract(epoch from c.created_at))::bigint as epoch
    from claimed c`;
  return row ?? null;
}
