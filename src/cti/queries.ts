import type { Sql, Tx } from "../db/client";
import { inInputOrder } from "../db/batcher";
import { drawHit } from "../limits/fused";
import { listed } from "../leads/dnc";
import { leadName, newestLead } from "../leads/match";
import { inRowTenant, inTenant, NO_ORG } from "../leads/scope";
import { dialInReach } from "./reach";

/**
 * Queues a dial for the agent, matched to the newest lead in scope with the same last 10 digits.
 * The dial keeps the queuing scope (`queued_org_id`, null for the platform): it decides who may
 * reach a dial without a lead, and whether the agent's keys of any organization may (src/cti/reach.ts).
 */
export async function queueDial(
  sql: Sql | Tx,
  orgId: number | null,
  agent: string,
  keyId: number | null,
  digits: string,
): Promise<{ id: number; lead_id: number | null }> {
  const [row] = await sql<{ id: number; lead_id: number | null }[]>`
    insert into dials (agent, key_id, queued_org_id, lead_id, phone)
    values (${agent}, ${keyId}, ${orgId}, (select m.id from ${newestLead(sql, digits.slice(-10), inTenant(sql, orgId))} m), ${digits})
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
  /** The number is on the do-not-contact list of the dial's organization (its lead's, else the queuing key's). */
  dnc: boolean;
  /** The lead's state ('' without a lead): with the phone, what decides its local time (calling-window.ts). */
  state: string;
}

/**
 * The oldest pending dial of the actor's bound agent that the actor reaches, moved to `dialing`;
 * skip locked so two pollers never collide. Dials out of reach are passed over, not claimed: they
 * wait for a key that reaches them. A dial of a listed number is claimed like any other, in the
 * same order (operations.md §4): it comes out marked `dnc`, and the dialer skips it.
 */
export async function claimDial(sql: Sql, actor: { orgId: number | null; agent: string }): Promise<ClaimedDial | null> {
  const [row] = await sql<ClaimedDial[]>`
    with next as (
      select d.id from dials d where d.agent = ${actor.agent} and d.status = 'pending' and ${dialInReach(sql, actor)}
      order by d.id limit 1 for update of d skip locked
    ), claimed as (
      update dials d set status = 'dialing', claimed_at = now()
      from next where d.id = next.id
      returning d.id, d.lead_id, d.phone, d.created_at, d.queued_org_id
    )
    select c.id, c.lead_id, c.phone,
           case when l.id is null then null else ${leadName(sql)} end as name,
           floor(extract(epoch from c.created_at))::bigint as epoch,
           ${listed(sql, sql`coalesce(l.org_id, c.queued_org_id)`, "phone", sql`right(c.phone, 10)`)} as dnc,
           coalesce(l.state, '') as state
    from claimed c left join leads l on l.id = c.lead_id`;
  return row ?? null;
}

/** The users of an organization a dial can be queued for (the CTI agents and console users of it). */
export function agentsOf(sql: Sql, orgId: number): Promise<{ id: string; name: string }[]> {
  return sql<{ id: string; name: string }[]>`select id, name from users where org_id = ${orgId} order by name, id limit 500`;
}

/** Whether user `agent` belongs to organization `orgId`. */
export async function agentInOrg(sql: Sql | Tx, agent: string, orgId: number): Promise<boolean> {
  const [row] = await sql`select 1 from users where id = ${agent} and org_id = ${orgId}`;
  return row !== undefined;
}

/**
 * A dial of a known lead for `agent`, queued without a key (a callback come due: src/workspace/),
 * in the scope of the lead's organization. Its phone is the lead's; null when the lead has none.
 */
export async function queueLeadDial(tx: Tx, orgId: number | null, agent: string, leadId: number): Promise<number | null> {
  const [row] = await tx<{ id: number }[]>`
    insert into dials (agent, key_id, queued_org_id, lead_id, phone)
    select ${agent}, null, ${orgId}::bigint, l.id, l.phone from leads l where l.id = ${leadId} and l.phone <> ''
    returning id`;
  return row?.id ?? null;
}
