// Tenant confinement, in SQL: a tenant actor sees only leads whose list belongs to a campaign of
// its organization; the platform (org null) sees every lead. Each lead carries its campaign's
// organization (`org_id`, kept by triggers, sql/0002), so the check reads the lead's row alone.
// Expects the alias `l` for leads.
import type { Sql, Tx } from "../db/client";

/** Distinct statement texts for the platform and tenants, so each gets its own plan. */
export const inTenant = (sql: Sql | Tx, orgId: number | null) => (orgId === null ? sql`true` : sql`l.org_id = ${orgId}`);

/**
 * The same confinement for each row of an input relation `u` (a batched read), whose column `org`
 * holds the actor's organization, or NO_ORG for the platform: postgres.js cannot send nulls inside
 * an array.
 */
export const inRowTenant = (sql: Sql) => sql`(u.org = ${NO_ORG} or l.org_id = u.org)`;

export const NO_ORG = -1;

/** True when the lead exists within the organization's scope. */
export async function leadInScope(sql: Sql, orgId: number | null, leadId: number): Promise<boolean> {
  const [row] = await sql`select 1 from leads l where l.id = ${leadId} and ${inTenant(sql, orgId)}`;
  return row !== undefined;
}
