// Finding a lead by phone, and a lead's display name: each written once.
import type { PendingQuery, Row } from "postgres";
import type { Sql, Tx } from "../db/client";
import { inTenant } from "./scope";

type Fragment = PendingQuery<Row[]>;

/** The display name of lead `l`: first and last name, trimmed. */
export const leadName = (sql: Sql | Tx) => sql`trim(l.first_name || ' ' || l.last_name)`;

/**
 * The newest lead (id, name) whose stored last-10 digits equal `phone` — a value, or a column of
 * an outer query as a fragment — within `scope`, a tenant condition on `l` (scope.ts). A subquery,
 * to select from or join laterally.
 */
export const newestLead = (sql: Sql | Tx, phone: string | Fragment, scope: Fragment) =>
  sql`(select l.id, ${leadName(sql)} as name from leads l
       where l.phone = ${phone} and ${scope} order by l.id desc limit 1)`;

/** The newest lead in an organization's scope (null: every lead) with these last 10 digits. */
export async function newestLeadByPhone(
  sql: Sql,
  orgId: number | null,
  phone: string,
): Promise<{ id: number; name: string } | null> {
  const [row] = await sql<{ id: number; name: string }[]>`select m.id, m.name from ${newestLead(sql, phone, inTenant(sql, orgId))} m`;
  return row ?? null;
}
