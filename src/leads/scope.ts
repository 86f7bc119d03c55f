// Tenant confinement, in SQL: a tenant key sees only leads whose list belongs to a campaign of its
// organization; a platform-global key (org null) sees every lead. Expects the aliases
// `l` (leads), `li` (lists) and `c` (campaigns) joined by `scopedLeads`.
import type { Sql } from "../db/client";

export const scopedLeads = (sql: Sql) =>
  sql`leads l join lists li on li.id = l.list_id join campaigns c on c.id = li.campaign_id`;

/** Distinct statement texts for global and tenant keys, so each gets its own plan. */
export const inTenant = (sql: Sql, orgId: number | null) => (orgId === null ? sql`true` : sql`c.org_id = ${orgId}`);

/** The newest lead in scope whose stored last-10 digits equal `phone`. */
export const newestLeadByPhone = (sql: Sql, orgId: number | null, phone: string) =>
  sql<{ id: number; name: string }[]>`
    select l.id, trim(l.first_name || ' ' || l.last_name) as name
    from ${scopedLeads(sql)}
    where l.phone = ${phone} and ${inTenant(sql, orgId)}
    order by l.id desc limit 1`;
