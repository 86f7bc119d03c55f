// Credits and the credit ledger, for the console's billing page. Both read per organization in
// SQL; an admin without an organization filter reads every organization's.
import type { Sql } from "../db/client";

export interface BillingRow {
  org_id: number;
  org_name: string;
  status: string;
  subscription: string;
  credits: number;
  sms_cost: number;
  email_cost: number;
}

/** Each organization's billing row (an organization without one has billing not configured: absent). */
export async function billingOf(sql: Sql, orgId: number | null): Promise<BillingRow[]> {
  return sql<BillingRow[]>`
    select b.org_id, o.name as org_name, b.status, b.subscription, b.credits::float8 as credits,
           b.sms_cost::float8 as sms_cost, b.email_cost::float8 as email_cost
    from org_billing b join orgs o on o.id = b.org_id
    where ${orgId === null ? sql`true` : sql`b.org_id = ${orgId}`}
    order by b.org_id`;
}

export interface LedgerRow {
  id: number;
  org_id: number;
  message_id: number | null;
  channel: string | null;
  lead_id: number | null;
  kind: string;
  amount: number;
  balance: number;
  created_at: Date;
}

export const LEDGER_PAGE = 50;

/** Ledger entries newest first, those with an id below `before` (keyset on the primary key); one more than `limit`. */
export async function ledgerPage(sql: Sql, orgId: number | null, before: number | null, limit: number): Promise<LedgerRow[]> {
  return sql<LedgerRow[]>`
    select e.id, e.org_id, e.message_id, m.channel, m.lead_id, e.kind, e.amount::float8 as amount,
           e.balance::float8 as balance, e.created_at
    from credit_ledger e left join messages m on m.id = e.message_id
    where ${orgId === null ? sql`true` : sql`e.org_id = ${orgId}`}
      and ${before === null ? sql`true` : sql`e.id < ${before}`}
    order by e.id desc
    limit ${limit + 1}`;
}
