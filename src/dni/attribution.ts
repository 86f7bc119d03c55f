// Call attribution: a call reported to calls.php whose to_number is a pool number belongs to the
// visitor who held that number when the call happened. The hold history keeps every hold's span,
// so this works after the hold has expired, the number has gone to someone else, or the number
// has left the pool.
import type { Sql } from "../db/client";

export interface CallAttribution {
  visit_id: number;
  dni_pool: string;
  dni_visitor: string;
}

/**
 * Writes the attribution (visitor, pool, first-touch UTM, gclid, landing) onto call `callId`,
 * from the hold of its to_number whose span [started_at, expires_at) contains the call's time.
 * A tenant-bound reporter (orgId) only attributes to its own organization's pools. Returns the
 * attribution written, or null when no hold matches.
 */
export async function attributeCall(sql: Sql, callId: number, orgId: number | null): Promise<CallAttribution | null> {
  const [row] = await sql<CallAttribution[]>`
    with c as (
      select id, to_number, occurred_at from calls where id = ${callId} and to_number <> ''
    ), x as (
      select c.id, v.id as visitor_id, h.pool_key, v.visitor, v.utm_source, v.utm_medium, v.utm_campaign,
             v.utm_term, v.utm_content, v.gclid, v.landing
      from c
      join lateral (
        select * from dni_hold_spans h
        where h.number = c.to_number and h.started_at <= c.occurred_at
        order by h.started_at desc limit 1
      ) h on c.occurred_at < h.ends_at
      join dni_visitors v on v.id = h.visitor_id
      join dni_pools p on p.key = h.pool_key
      where ${orgId === null ? sql`true` : sql`p.org_id = ${orgId}`}
    )
    update calls set visit_id = x.visitor_id, dni_pool = x.pool_key, dni_visitor = x.visitor,
      utm_source = x.utm_source, utm_medium = x.utm_medium, utm_campaign = x.utm_campaign,
      utm_term = x.utm_term, utm_content = x.utm_content, gclid = x.gclid, landing = x.landing
    from x where calls.id = x.id
    returning calls.visit_id, calls.dni_pool, calls.dni_visitor`;
  return row ?? null;
}

export interface FirstTouch {
  source: string;
  medium: string;
  campaign: string;
  landing: string;
  gclid: string;
  referrer: string;
  pool: string;
  /** When the visitor first came (their first lease), and the call that tied them to the lead. */
  first_visit_at: Date;
  called_at: Date;
}

/**
 * A lead's DNI first touch: the visitor behind the lead's earliest attributed call, as that
 * visitor's first lease recorded it (first touch is never overwritten). Null when no call of the
 * lead was attributed. The caller has confined the lead to the viewer's organization.
 */
export async function leadFirstTouch(sql: Sql, leadId: number): Promise<FirstTouch | null> {
  const [row] = await sql<FirstTouch[]>`
    select v.utm_source as source, v.utm_medium as medium, v.utm_campaign as campaign, v.landing, v.gclid,
           v.referrer, v.pool_key as pool, v.first_visit_at, k.occurred_at as called_at
    from calls k join dni_visitors v on v.id = k.visit_id
    where k.lead_id = ${leadId} and k.visit_id is not null
    order by k.occurred_at, k.id
    limit 1`;
  return row ?? null;
}
