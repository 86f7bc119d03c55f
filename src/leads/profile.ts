// A lead as the console shows it: every field, where it sits (campaign, list, organization) and
// its organization's clock. Confined to the actor's organization in SQL (scope.ts).
import type { Sql } from "../db/client";
import { inTenant } from "./scope";

export interface LeadProfile {
  id: number;
  first_name: string;
  last_name: string;
  phone: string;
  email: string;
  address1: string;
  city: string;
  state: string;
  postal_code: string;
  status: string;
  source: string;
  campaign_id: string;
  campaign_name: string;
  list_id: number;
  list_name: string;
  org_id: number | null;
  org_name: string;
  /** The organization's zone (UTC for a house lead): times on the page are shown in it. */
  timezone: string;
  created_at: Date;
}

/** The lead, or null when it is missing or outside the organization (`orgId` null: any). */
export async function leadProfile(sql: Sql, orgId: number | null, leadId: number): Promise<LeadProfile | null> {
  const [row] = await sql<LeadProfile[]>`
    select l.id, l.first_name, l.last_name, l.phone, l.email, l.address1, l.city, l.state, l.postal_code,
           l.status, l.source, l.campaign_id, coalesce(c.name, '') as campaign_name, l.list_id,
           coalesce(li.name, '') as list_name, l.org_id, coalesce(o.name, '') as org_name,
           coalesce(o.timezone, 'UTC') as timezone, l.created_at
    from leads l
    left join campaigns c on c.id = l.campaign_id
    left join lists li on li.id = l.list_id
    left join orgs o on o.id = l.org_id
    where l.id = ${leadId} and ${inTenant(sql, orgId)}`;
  return row ?? null;
}
