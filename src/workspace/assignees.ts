// Who a conversation may be assigned to, for the inbox's menus: the active console users of the
// actor's organization (a `users` row with a role, not disabled) — the same rule the actions check
// (actions.ts eligibleOrg), so the menu offers nobody an assignment would refuse. An admin's actor
// (organization null) is offered nobody: assignees belong to the conversation's organization.
import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";

export interface Assignee {
  id: string;
  name: string;
}

export async function assignees(sql: Sql, actor: Actor): Promise<Assignee[]> {
  if (actor.orgId === null) return [];
  return sql<Assignee[]>`
    select id, coalesce(nullif(name, ''), email, id) as name from users
    where org_id = ${actor.orgId} and role is not null and disabled_at is null
    order by lower(coalesce(nullif(name, ''), email, id)), id
    limit 500`;
}
