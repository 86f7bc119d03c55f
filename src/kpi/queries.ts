import type { Sql } from "../db/client";
import type { KpiPoint } from "./model";

/**
 * Upserts a whole batch in one statement: unknown metric keys are registered (label = key, sum),
 * an org that is not a client organization resolves to house scope (null), and the last point
 * wins when a batch names the same (org, metric, day, dim) twice. postgres.js cannot send nulls
 * inside arrays, so house scope travels as -1, which joins no org.
 */
export async function upsertPoints(sql: Sql, points: KpiPoint[], today: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    with p as (
      select distinct on (coalesce(o.id, -1), x.metric_key, x.day, x.dim_key)
             o.id as org_id, x.metric_key, x.day, x.dim_key, x.value
      from unnest(${points.map((p) => p.metricKey)}::text[], ${points.map((p) => p.day ?? today)}::text[],
                  ${points.map((p) => p.dimKey)}::text[], ${points.map((p) => p.value)}::float8[],
                  ${points.map((p) => p.orgId ?? -1)}::bigint[]) with ordinality
             as x(metric_key, day, dim_key, value, org_id, ord)
      left join orgs o on o.id = x.org_id
      order by coalesce(o.id, -1), x.metric_key, x.day, x.dim_key, x.ord desc
    ), m as (
      insert into kpi_metrics (key, label, aggregation)
      select distinct metric_key, metric_key, 'sum' from p
      on conflict (key) do nothing
    ), up as (
      insert into kpi_points (org_id, metric_key, day, dim_key, value)
      select org_id, metric_key, day, dim_key, value from p
      on conflict (coalesce(org_id, -1), metric_key, day, dim_key)
      do update set value = excluded.value, updated_at = now()
      returning 1
    )
    select count(*)::int as n from up`;
  return row.n;
}
