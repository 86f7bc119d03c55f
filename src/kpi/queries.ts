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

/** The console's KPI page: a metric's points, one organization (null: every organization and the house). */
export interface KpiScope {
  orgId: number | null;
  metric: string;
  /** One dimension (`''` is the points reported without one), or null for every dimension summed. */
  dim: string | null;
  /** Days 'YYYY-MM-DD', inclusive. */
  from: string;
  to: string;
}

export interface KpiMetric {
  key: string;
  label: string;
}

/**
 * The metrics that have points in the scope (any day), by label: the organization's own label for
 * the key (src/kpi/labels.ts), else the metric's (every organization at once: the metric's).
 */
export async function kpiMetrics(sql: Sql, orgId: number | null): Promise<KpiMetric[]> {
  return sql<KpiMetric[]>`
    select m.key, coalesce(${orgId === null ? sql`null` : sql`(select l.label from kpi_labels l where l.org_id = ${orgId} and l.metric_key = m.key)`}, m.label) as label
    from kpi_metrics m
    where exists (select 1 from kpi_points p where p.metric_key = m.key
                    and ${orgId === null ? sql`true` : sql`p.org_id = ${orgId}`})
    order by 2, 1`;
}

/** The dimensions a metric was reported with in the scope. */
export async function kpiDimensions(sql: Sql, orgId: number | null, metric: string): Promise<string[]> {
  const rows = await sql<{ dim_key: string }[]>`
    select distinct dim_key from kpi_points
    where metric_key = ${metric} and ${orgId === null ? sql`true` : sql`org_id = ${orgId}`}
    order by dim_key limit 200`;
  return rows.map((r) => r.dim_key);
}

/** The metric summed by day over the scope's points (every metric is a sum, sql/0001); days without a point are absent. */
export async function kpiSeries(sql: Sql, s: KpiScope): Promise<{ day: string; value: number }[]> {
  return sql<{ day: string; value: number }[]>`
    select day, sum(value)::float8 as value from kpi_points
    where metric_key = ${s.metric} and day >= ${s.from} and day <= ${s.to}
      and ${s.orgId === null ? sql`true` : sql`org_id = ${s.orgId}`}
      and ${s.dim === null ? sql`true` : sql`dim_key = ${s.dim}`}
    group by day order by day`;
}

/** The metric by day and dimension over the scope's points (the stacked chart); days or dimensions without a point are absent. */
export async function kpiSeriesByDim(sql: Sql, s: Omit<KpiScope, "dim">): Promise<{ day: string; dim: string; value: number }[]> {
  return sql<{ day: string; dim: string; value: number }[]>`
    select day, dim_key as dim, sum(value)::float8 as value from kpi_points
    where metric_key = ${s.metric} and day >= ${s.from} and day <= ${s.to}
      and ${s.orgId === null ? sql`true` : sql`org_id = ${s.orgId}`}
    group by day, dim_key order by day, dim_key`;
}
