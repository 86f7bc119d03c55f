import type { Sql } from "../db/client";
import { inTenant } from "../leads/scope";

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
