// The call log (the console's Calls page and its CSV export): calls newest first with their DNI
// attribution, filtered, in keyset pages.
//
// A call's organization is its lead's (the lead's current one, as every read), else the reporting
// key's: the same rule calls.php uses for the call's `call.completed` event. A call with neither
// (a house key, no lead) belongs to no organization and shows to admins only.
// An agent's actor (`agent` set) sees only the calls reported with its id as `agent`: its own
// calls, like its own dials.
//
// A call's pool is the pool of the number it reached (its own DNI match); its source, medium,
// campaign, landing page and gclid are the first touch its `call.completed` carries: its lead's
// attribution, else its own (src/dni/attribution.ts).
import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";
import { callAttribution } from "../dni/attribution";

export interface CallFilter {
  /** Instants bounding occurred_at: [from, to). */
  from: Date | null;
  to: Date | null;
  agent: string | null;
  pool: string | null;
  source: string | null;
  status: string | null;
  /** An admin's organization filter (ignored for a viewer confined to one). */
  org: number | null;
}

export const noCallFilter: CallFilter = { from: null, to: null, agent: null, pool: null, source: null, status: null, org: null };

export interface CallRow {
  id: number;
  /** Where the next page starts: this call's time in epoch microseconds and its id ("µs.id"). */
  cursor: string;
  occurred_at: Date;
  org_id: number | null;
  /** The organization's time zone (the lead's organization's; UTC for a call of no organization). */
  timezone: string;
  phone: string;
  to_number: string;
  status: string;
  secs: number;
  agent: string;
  agent_name: string;
  lead_id: number | null;
  lead_name: string;
  dni_pool: string | null;
  utm_source: string | null;
  utm_medium: string | null;
  utm_campaign: string | null;
  landing: string | null;
  gclid: string | null;
}

export const CALLS_PAGE = 50;

/** A page's position: the last call shown, by its time (epoch microseconds, occurred_at's full precision) and id. */
export interface CallCursor {
  micros: bigint;
  id: number;
}

const CURSOR = /^(\d{1,17})\.(\d{1,15})$/;

/** A cursor as written in a page link, or null for anything else. */
export function parseCursor(v: string | undefined): CallCursor | null {
  const m = v === undefined ? null : CURSOR.exec(v);
  return m ? { micros: BigInt(m[1]), id: Number(m[2]) } : null;
}

/**
 * One page of calls, newest first, strictly after the cursor in that order. The cursor carries the
 * last call's time rather than only its id: looking the time up by id would read a call of any
 * organization, and pages positioned by it would tell when another organization's calls happened.
 * Asks for one more than `limit`, so the caller knows whether a next page exists.
 */
export async function listCalls(sql: Sql, actor: Actor, filter: CallFilter, after: CallCursor | null, limit: number): Promise<CallRow[]> {
  const org = actor.orgId ?? filter.org;
  return sql<CallRow[]>`
    select c.id, (extract(epoch from c.occurred_at) * 1000000)::bigint::text || '.' || c.id as cursor, c.occurred_at, o.org_id, coalesce(g.timezone, 'UTC') as timezone, c.phone, c.to_number, c.status,
           c.secs, c.agent, coalesce(u.name, '') as agent_name, c.lead_id,
           coalesce(trim(l.first_name || ' ' || l.last_name), '') as lead_name,
           c.dni_pool, o.touch->>'source' as utm_source, o.touch->>'medium' as utm_medium,
           o.touch->>'campaign' as utm_campaign, o.touch->>'landing' as landing, o.touch->>'gclid' as gclid
    from calls c
    left join leads l on l.id = c.lead_id
    left join api_keys k on k.id = c.key_id
    cross join lateral (select coalesce(l.org_id, k.org_id) as org_id, ${callAttribution(sql)} as touch) o
    left join orgs g on g.id = o.org_id
    left join users u on u.id = c.agent
    where ${org === null ? sql`true` : sql`o.org_id = ${org}`}
      and ${actor.agent === null ? sql`true` : sql`c.agent = ${actor.agent}`}
      and ${filter.from === null ? sql`true` : sql`c.occurred_at >= ${filter.from}`}
      and ${filter.to === null ? sql`true` : sql`c.occurred_at < ${filter.to}`}
      and ${filter.agent === null ? sql`true` : sql`c.agent = ${filter.agent}`}
      and ${filter.pool === null ? sql`true` : sql`c.dni_pool = ${filter.pool}`}
      and ${filter.source === null ? sql`true` : sql`o.touch->>'source' = ${filter.source}`}
      and ${filter.status === null ? sql`true` : sql`c.status = ${filter.status}`}
      and ${after === null ? sql`true` : sql`(c.occurred_at, c.id) < (timestamptz 'epoch' + ${String(after.micros)}::bigint * interval '1 microsecond', ${after.id})`}
    order by c.occurred_at desc, c.id desc
    limit ${limit + 1}`;
}

/** Every call of the filter, page after page (the CSV export streams these). */
export async function* allCalls(sql: Sql, actor: Actor, filter: CallFilter, batch = 1000): AsyncGenerator<CallRow[]> {
  let after: CallCursor | null = null;
  for (;;) {
    const rows = await listCalls(sql, actor, filter, after, batch);
    const page = rows.slice(0, batch);
    if (page.length > 0) yield page;
    if (rows.length <= batch) return;
    after = parseCursor(page[page.length - 1].cursor);
  }
}

export interface Choice {
  value: string;
  label: string;
}

/** The agents a filter offers: the organization's users (every user for an admin without an org filter). */
export async function agentChoices(sql: Sql, org: number | null): Promise<Choice[]> {
  return sql<Choice[]>`
    select id as value, case when name = '' then id else name end as label from users
    where ${org === null ? sql`true` : sql`org_id = ${org}`} order by 2, 1`;
}
