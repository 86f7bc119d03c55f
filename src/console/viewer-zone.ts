// The zone a viewer's dates and times mean: its organization's (orgs.timezone); UTC for admins,
// who see every organization.
import type { Sql } from "../db/client";

export async function viewerZone(sql: Sql, orgId: number | null): Promise<string> {
  if (orgId === null) return "UTC";
  const [row] = await sql<{ timezone: string }[]>`select timezone from orgs where id = ${orgId}`;
  return row?.timezone ?? "UTC";
}
