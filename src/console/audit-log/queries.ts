// The audit log as the console reads it: newest first in keyset pages by id, confined to the
// viewer's organization in SQL (admins: every row), filtered by user and action.
import type { Sql } from "../../db/client";

export interface AuditFilter {
  /** null: every organization (admins). */
  orgId: number | null;
  /** A user's id (the actor of type `user`), or null. */
  user: string | null;
  /** An action (`key.create`), or a family ending in a dot (`key.`), or null. */
  action: string | null;
  /** The keyset cursor: rows older than this id. */
  before: number | null;
  limit: number;
}

export interface AuditRow {
  id: number;
  at: Date;
  org_id: number | null;
  actor_type: string;
  actor_id: string;
  /** The acting user's name, when the actor is a user. */
  actor_name: string | null;
  action: string;
  target: string;
  details: Record<string, unknown> | null;
  address: string | null;
}

/** One page, newest first; `limit + 1` rows are read to know whether an older page exists. */
export function listAudit(sql: Sql, f: AuditFilter): Promise<AuditRow[]> {
  const action =
    f.action === null ? sql`true`
    : f.action.endsWith(".") ? sql`g.action like ${f.action.replace(/[\\%_]/g, "\\$&") + "%"}`
    : sql`g.action = ${f.action}`;
  return sql<AuditRow[]>`
    select g.id, g.created_at as at, g.org_id, g.actor_type, g.actor_id,
           case when g.actor_type = 'user' then u.name end as actor_name,
           g.action, g.target, g.details, g.address
    from audit_log g
    left join users u on u.id = g.actor_id
    where ${f.orgId === null ? sql`true` : sql`g.org_id = ${f.orgId}`}
      and ${f.user === null ? sql`true` : sql`g.actor_type = 'user' and g.actor_id = ${f.user}`}
      and ${action}
      and ${f.before === null ? sql`true` : sql`g.id < ${f.before}`}
    order by g.id desc
    limit ${f.limit + 1}`;
}

/** The console users the viewer may filter by: its organization's (admins: all). */
export function auditUsers(sql: Sql, orgId: number | null): Promise<{ id: string; name: string }[]> {
  return sql<{ id: string; name: string }[]>`
    select id, coalesce(nullif(name, ''), id) as name from users
    where role is not null and ${orgId === null ? sql`true` : sql`org_id = ${orgId}`}
    order by name, id`;
}
