// Console users for a manager (their organization's) or an admin (all): invite, change role,
// disable, reset two-step sign-in, a new sign-in link. Reuses the CLI's functions (src/console/
// users.ts: createUser, inviteUser, disableUser, turnOffTotp); a role change is a provisioning
// fragment (apply.ts). Every target is found confined in SQL first: another organization's user
// is "not found". Nobody changes, disables or resets themselves here (a manager locking themselves
// out has no way back in the browser), and a manager never makes or touches an admin.
import type { Actor } from "../../auth/actor";
import type { Sql } from "../../db/client";
import type { Deps } from "../../http/deps";
import { UsageError } from "../../errors";
import type { ProvisioningFile } from "../../provision/model";
import { audit } from "../audit";
import type { Viewer } from "../route";
import { createUserIn, disableUser, inviteUser, turnOffTotp, type Role } from "../users";
import { applySettings, given } from "./apply";

export interface UserRow {
  id: string;
  email: string;
  name: string;
  role: Role;
  org_id: number | null;
  has_password: boolean;
  two_step: boolean;
  sessions: number;
}

const scope = (sql: Sql, actor: Actor) => (actor.orgId === null ? sql`` : sql`and u.org_id = ${actor.orgId}::bigint`);

/** The console users the actor may manage (an admin: `org` picks one organization, else all). */
export function usersOf(sql: Sql, actor: Actor, org: number | null = null): Promise<UserRow[]> {
  return sql<UserRow[]>`
    select u.id, u.email, u.name, u.role, u.org_id::float8 as org_id, u.password_hash is not null as has_password,
           u.totp_secret is not null as two_step,
           (select count(*)::int from console_sessions s where s.user_id = u.id and s.revoked_at is null) as sessions
    from users u where u.role is not null and u.disabled_at is null ${scope(sql, actor)}
    ${org === null ? sql`` : sql`and u.org_id = ${org}::bigint`}
    order by u.org_id nulls first, u.email`;
}

/** One user the actor may manage, or null (missing, disabled, or another organization's). */
export async function scopedUser(sql: Sql, actor: Actor, id: string): Promise<UserRow | null> {
  const [u] = await sql<UserRow[]>`
    select u.id, u.email, u.name, u.role, u.org_id::float8 as org_id, u.password_hash is not null as has_password,
           u.totp_secret is not null as two_step, 0 as sessions
    from users u where u.id = ${id} and u.role is not null and u.disabled_at is null ${scope(sql, actor)}`;
  return u ?? null;
}

export type UserAnswer<T = undefined> = { ok: true; value: T } | { ok: false; reason: "not_found" | "refused"; message: string };

const refused = (message: string) => ({ ok: false as const, reason: "refused" as const, message });
const NOT_FOUND = { ok: false as const, reason: "not_found" as const, message: "no such user" };

/** The roles a viewer may give: a manager never makes an admin. */
export const grantable = (viewer: Viewer): Role[] => (viewer.actor.orgId === null ? ["agent", "manager", "admin"] : ["agent", "manager"]);

export interface InviteRequest {
  email: string;
  name: string;
  role: string;
  org: string;
  /** Also email the link (invite-mail.ts). */
  email_link: boolean;
}

export interface Invited {
  user: { id: string; email: string };
  /** The user's organization, whose email sender may mail the link. */
  orgId: number | null;
  link: string;
  expiresAt: Date;
}

const linkOf = (deps: Deps, token: string) => `${deps.config.baseUrl}/console/invite/${token}`;

/** A new console user and their one-time link (the CLI's `users create`), audited as user.create. */
export async function inviteNew(deps: Deps, viewer: Viewer, r: InviteRequest): Promise<UserAnswer<Invited>> {
  const role = r.role as Role;
  if (!grantable(viewer).includes(role)) return refused("Choose a role from the list.");
  let orgId = viewer.actor.orgId;
  if (orgId === null && role !== "admin") {
    const n = Number(given(r.org));
    if (!Number.isSafeInteger(n) || n <= 0) return refused("Choose the organization the user belongs to.");
    orgId = n;
  }
  if (role === "admin") orgId = null;
  try {
    const user = await deps.sql.begin(async (tx) => {
      const u = await createUserIn(tx, { email: r.email, role, orgId, name: r.name.trim() });
      await audit(tx, viewer.actor, "user.create", `user:${u.id}`, { email: u.email, role: u.role }, u.orgId);
      return u;
    });
    const invite = await inviteUser(deps.sql, user.email, deps.clock.now());
    return { ok: true, value: { user, orgId: user.orgId, link: linkOf(deps, invite.token), expiresAt: invite.expiresAt } };
  } catch (err) {
    // The CLI's one-line refusals ("users: x is already user …"), without the command's name.
    if (err instanceof UsageError) return refused(err.message.replace(/^users: /, ""));
    throw err;
  }
}

/** A user the viewer may act on: theirs, not themselves, and for a manager not an admin. */
async function target(deps: Deps, viewer: Viewer, id: string): Promise<UserAnswer<UserRow>> {
  const u = await scopedUser(deps.sql, viewer.actor, id);
  if (u === null) return NOT_FOUND;
  if (u.id === viewer.user.id) return refused("You cannot do that to yourself here: ask another manager or an administrator.");
  return { ok: true, value: u };
}

/** A new one-time link for the user (older ones stop working), audited as user.invite. */
export async function resendInvite(deps: Deps, viewer: Viewer, id: string): Promise<UserAnswer<Invited>> {
  const t = await target(deps, viewer, id);
  if (!t.ok) return t;
  const invite = await inviteUser(deps.sql, t.value.email, deps.clock.now());
  await audit(deps.sql, viewer.actor, "user.invite", `user:${t.value.id}`, {}, t.value.org_id);
  return { ok: true, value: { user: t.value, orgId: t.value.org_id, link: linkOf(deps, invite.token), expiresAt: invite.expiresAt } };
}

/** A role between agent and manager (an admin's is the CLI's), through provisioning: audited user.update. */
export async function changeRole(deps: Deps, viewer: Viewer, id: string, role: string): Promise<UserAnswer> {
  const t = await target(deps, viewer, id);
  if (!t.ok) return t;
  if (t.value.role === "admin" || t.value.org_id === null) return refused("An administrator's role is changed with the command line.");
  if (role !== "agent" && role !== "manager") return refused("Choose agent or manager.");
  const r = await applySettings(deps, viewer.actor, { users: [{ id, org_id: t.value.org_id, role }] } as unknown as ProvisioningFile);
  return r.ok ? { ok: true, value: undefined } : refused(r.problems.join("; "));
}

/** Disables the user: sessions ended, bound keys revoked (disableUser), audited user.disable. */
export async function disable(deps: Deps, viewer: Viewer, id: string): Promise<UserAnswer<number[]>> {
  const t = await target(deps, viewer, id);
  if (!t.ok) return t;
  if (viewer.actor.orgId !== null && t.value.role === "admin") return NOT_FOUND;
  const r = await disableUser(deps.sql, t.value.email, deps.clock.now(), viewer.actor);
  return { ok: true, value: r.revokedKeys };
}

/** Turns the user's two-step sign-in off and ends their sessions; audited user.two_step_reset. */
export async function resetTwoStep(deps: Deps, viewer: Viewer, id: string): Promise<UserAnswer> {
  const t = await target(deps, viewer, id);
  if (!t.ok) return t;
  await turnOffTotp(deps.sql, t.value.email, deps.clock.now(), viewer.actor);
  return { ok: true, value: undefined };
}
