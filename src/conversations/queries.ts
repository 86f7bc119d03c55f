import type { Sql } from "../db/client";
import { leadName } from "../leads/match";
import { inTenant } from "../leads/scope";
import { entriesOf, mergedSources } from "./timeline";

export const PER_SOURCE = 200;
export const KEPT = 200;

/**
 * The whole conversation result, serialized by PostgreSQL in one statement: the lead (tenant-
 * confined), then up to 200 newest rows from each source, merged, the newest 200 kept, oldest first.
 * Null when the lead is missing or outside the key's organization.
 */
export async function conversationJson(sql: Sql, orgId: number | null, leadId: number): Promise<string | null> {
  const [row] = await sql<{ body: string | null }[]>`
    with lead as (
      select l.id, ${leadName(sql)} as name, l.phone, l.status
      from leads l
      where l.id = ${leadId} and ${inTenant(sql, orgId)}
    ), entries as (${mergedSources(sql, sql`(select id from lead)`, PER_SOURCE)}
    ), kept as (
      select * from entries order by at desc, src desc, sid desc limit ${KEPT}
    )
    select case when exists (select 1 from lead) then json_build_object(
      'ok', true,
      'lead', (select json_build_object('lead_id', id, 'name', name, 'phone', phone, 'status', status) from lead),
      'entries', coalesce(${entriesOf(sql)}, '[]'::json)
    )::text end as body`;
  return row?.body ?? null;
}
