// The attribution report (issue 30): per first touch (source / medium / campaign / landing page) of
// the DNI visitors, over a period of the organization's days: visitors first seen, calls and
// answered calls, leads and appointments booked. Read from the rollup sql/0030 keeps in the
// writers' transactions (docs/reports.md), confined to the organization by its `org_id`; the rollup
// assigns each fact as the request-time query did: visitors by their pool's organization, calls by
// their lead's (else reporting key's), leads and appointments by their own. A call's touch is what
// it carries outward (src/dni/attribution.ts: its lead's, else its own); a lead's is the first it
// was given; an appointment's is its lead's.
import type { Sql } from "../db/client";

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

/**
 * The report over the organization's days `from` to `to` (YYYY-MM-DD, inclusive), read from the
 * rollup sql/0030 keeps (report_touch_daily: a row per day, first touch, fact and call mark; at most
 * 366 days × touches × facts × marks; the touches' texts in report_touches), never from the facts. Values are applied here, from the
 * organization's actions as they are now: a call row's mark (`secs_from`, the largest of the
 * organization's marks at or below its secs) is at least an action's `min_secs` exactly when each
 * of its calls is, since every `min_secs` is a mark.
 */
export async function attributionReport(sql: Sql, orgId: number, from: string, to: string): Promise<AttributionRow[]> {
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
    ), counted as (
      -- By the touch's key (32 bytes) first; its texts are joined to the few rows that are left.
      select touch, fact, secs_from, sum(n) as n
      from report_touch_daily
      where org_id = ${orgId} and day >= ${from}::date and day <= ${to}::date
      group by touch, fact, secs_from
      having sum(n) <> 0
    ), touched as (
      select touch,
             coalesce(sum(n) filter (where fact = 'visitor'), 0)::int as visitors,
             coalesce(sum(n) filter (where fact = 'call'), 0)::int as calls,
             coalesce(sum(n) filter (where fact = 'call' and secs_from >= 1), 0)::int as answered,
             coalesce(sum(n) filter (where fact = 'lead'), 0)::int as leads,
             coalesce(sum(n) filter (where fact = 'appointment'), 0)::int as appointments,
             round(sum(n * case fact when 'call' then ${worth("call", sql`r.secs_from`)}
                                     when 'lead' then ${worth("lead")}
                                     when 'appointment' then ${worth("booking")} else 0 end), 2)::float8 as value
      from counted r
      group by touch
    )
    select t.source, t.medium, t.campaign, t.landing, x.visitors, x.calls, x.answered, x.leads, x.appointments, x.value
    from touched x join report_touches t on t.touch = x.touch
    order by x.leads desc, x.calls desc, x.visitors desc, t.source, t.medium, t.campaign, t.landing`;
}
