// The attribution report (issue 30): per first touch (source / medium / campaign / landing page) of
// the DNI visitors, over a period of the organization's days: visitors first seen, calls and
// answered calls, leads and appointments booked. Every part is confined to the organization in SQL:
// visitors by their pool's organization, calls by their lead's (else reporting key's), leads and
// appointments by their own. A call's touch is what it carries outward (src/dni/attribution.ts:
// its lead's, else its own); a lead's is the first it was given; an appointment's is its lead's.
import type { Sql } from "../db/client";
import { callAttribution } from "../dni/attribution";

export interface AttributionRow {
  source: string;
  medium: string;
  campaign: string;
  landing: string;
  visitors: number;
  calls: number;
  answered: number;
  leads: number;
  appointments: number;
  /**
   * The recorded value of the row's calls, leads and appointments: each conversion action of the
   * organization's conversions feeds (operations.md §8, src/conversions/) values each fact of its
   * kind (a call of at least its `min_secs`, a new lead, a booked appointment) at its `value`, as the
   * feed reports them to Google Ads; an action named alike in two feeds counts once. 0 without feeds.
   */
  value: number;
}

/**
 * The organization's currency: that of its conversion actions when they agree on one; null when it
 * has none or they name several (values are then plain numbers, docs/reports.md).
 */
export async function attributionCurrency(sql: Sql, orgId: number): Promise<string | null> {
  const rows = await sql<{ currency: string }[]>`
    select distinct a->>'currency' as currency
    from conversion_feeds f cross join lateral jsonb_array_elements(f.actions) a
    where f.org_id = ${orgId} and a->>'currency' is not null limit 2`;
  return rows.length === 1 ? rows[0].currency : null;
}

/** [from, to): instants (the period's first day's start and the day after its last, in the organization's zone). */
export async function attributionReport(sql: Sql, orgId: number, from: Date, to: Date): Promise<AttributionRow[]> {
  const touch = (a: ReturnType<typeof sql>) => sql`
    coalesce(${a}->>'source', '') as source, coalesce(${a}->>'medium', '') as medium,
    coalesce(${a}->>'campaign', '') as campaign, coalesce(${a}->>'landing', '') as landing`;
  // The actions' values by kind, once per distinct action (two feeds of one organization, e.g.
  // two Google Ads accounts, may name the same conversion).
  const worth = (kind: string, secs?: ReturnType<typeof sql>) => sql`
    coalesce((select sum(x.value) from actions x where x.kind = ${kind} ${secs ? sql`and ${secs} >= x.min_secs` : sql``}), 0)`;
  return sql<AttributionRow[]>`
    with actions as (
      select distinct a->>'on' as kind, a->>'name' as name, coalesce((a->>'min_secs')::int, 0) as min_secs,
             coalesce((a->>'value')::numeric, 0) as value, a->>'currency' as currency
      from conversion_feeds f cross join lateral jsonb_array_elements(f.actions) a
      where f.org_id = ${orgId}
    ), facts as (
      select v.utm_source as source, v.utm_medium as medium, v.utm_campaign as campaign, v.landing,
             1 as visitors, 0 as calls, 0 as answered, 0 as leads, 0 as appointments, 0::numeric as value
      from dni_visitors v join dni_pools p on p.key = v.pool_key
      where p.org_id = ${orgId} and v.first_visit_at >= ${from} and v.first_visit_at < ${to}
      union all
      select ${touch(sql`t.a`)}, 0, 1, (c.secs > 0)::int, 0, 0, ${worth("call", sql`c.secs`)}
      from calls c
      left join leads l on l.id = c.lead_id
      left join api_keys k on k.id = c.key_id
      cross join lateral (select ${callAttribution(sql)} as a) t
      where coalesce(l.org_id, k.org_id) = ${orgId} and t.a is not null
        and c.occurred_at >= ${from} and c.occurred_at < ${to}
      union all
      select ${touch(sql`l.attribution`)}, 0, 0, 0, 1, 0, ${worth("lead")}
      from leads l
      where l.org_id = ${orgId} and l.attribution is not null and l.created_at >= ${from} and l.created_at < ${to}
      union all
      select ${touch(sql`l.attribution`)}, 0, 0, 0, 0, 1, ${worth("booking")}
      from appointments a
      join calendars cal on cal.id = a.calendar_id
      join leads l on l.id = a.lead_id
      where cal.org_id = ${orgId} and l.org_id = ${orgId} and l.attribution is not null
        and a.created_at >= ${from} and a.created_at < ${to}
    )
    select source, medium, campaign, landing,
           sum(visitors)::int as visitors, sum(calls)::int as calls, sum(answered)::int as answered,
           sum(leads)::int as leads, sum(appointments)::int as appointments, round(sum(value), 2)::float8 as value
    from facts
    group by source, medium, campaign, landing
    order by sum(leads) desc, sum(calls) desc, sum(visitors) desc, source, medium, campaign, landing`;
}
