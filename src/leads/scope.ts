// Tenant confinement, in SQL: a tenant key sees only leads whose list belongs to a campaign of its
// organization; a platform-global key (org null) sees every lead. Each lead carries its campaign's
// organization (`org_id`, kept by triggers, sql/0002), so the check reads the lead's row alone.
// Expects the alias `l` for leads.
import type { Sql } from "../db/client";

/** Distinct statement texts for global and tenant keys, so each gets its own plan. */
export const inTenant = (sql: Sql, orgId: number | null) => (orgId === null ? sql`true` : sql`l.org_id = ${orgId}`);

/**
 * The same confinement for each row of an input relation `u` (a batched read), whose column `org`
 * holds the key's organization, or NO_ORG for a platform-global key: postgres.js cannot send nulls
 * inside an array.
 */
export const inRowTenant = (sql: Sql) => sql`(u.org = ${NO_ORG} or l.org_id = u.org)`;

export const NO_ORG = -1;

/** The newest lead in scope whose stored last-10 digits equal `phone`. */
export async function newestLeadByPhone(
  sql: Sql,
  orgId: number | null,
  phone: string,
): Promise<{ id: number; name: string } | null> {
  const [row] = await sql<{ id: number; name: string }[]>`
    select l.id, trim(l.first_name || ' ' || l.last_name) as name
    from leads l
    where l.phone = ${phone} and ${inTenant(sql, orgId)}
    order by l.id desc limit 1`;
  return row ?? null;
}
