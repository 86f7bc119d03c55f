// Console users: rows of `users` (the CTI agents keys are bound to) with an email and a role, so
// an agent who signs in is the agent their dials name. Passwords are Argon2id (Bun.password) and
// are set only through a one-time link (`users invite`) or `users passwd`; either ends every
// session of the user. A link is exchanged, when first opened, for a cookie's token that works
// half an hour (openInvite), so the token in the link (and in any access log) is dead once used.
import { createHash, randomBytes } from "node:crypto";
import { systemActor } from "../auth/actor";
import { notifyKeysChanged, revokeKeysOfAgent } from "../auth/admin";
import { ARGON2_COST, hashWith, type Argon2Cost } from "../auth/passwords";
import type { Sql, Tx } from "../db/client";
import { UsageError } from "../errors";
import { audit } from "./audit";

export type Role = "admin" | "manager" | "agent";
export const ROLES: readonly Role[] = ["admin", "manager", "agent"];

export interface ConsoleUser {
  id: string;
  email: string;
  name: string;
  role: Role;
  /** null: an admin, who acts for every organization. */
  orgId: number | null;
}

/** How long an invite link works. */
export const INVITE_TTL_MS = 72 * 3_600_000;
/** How long an opened link's form works (its cookie's life), within the link's own. */
export const INVITE_OPEN_MS = 30 * 60_000;
/** Shorter passwords are refused; longer than this is refused too (Argon2 would hash megabytes). */
export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 256;

export const normalEmail = (email: string) => email.trim().toLowerCase();
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

export const tokenHash = (token: string) => createHash("sha256").update(token).digest();
export const newToken = () => randomBytes(32).toString("base64url");

/** Argon2id at 64 MiB, t=2 (src/auth/passwords.ts): a guess costs what a sign-in costs. */
export const hashPassword = (password: string, cost: Argon2Cost = ARGON2_COST) => hashWith(password, cost);

/** Why a password is refused, or null. */
export function passwordProblem(password: string): string | null {
  if (password.length < PASSWORD_MIN) return `a password has at least ${PASSWORD_MIN} characters`;
  if (password.length > PASSWORD_MAX) return `a password has at most ${PASSWORD_MAX} characters`;
  return null;
}

type Row = { id: string; email: string; name: string; role: Role; org_id: string | number | null };
const userOf = (r: Row): ConsoleUser => ({ id: r.id, email: r.email, name: r.name, role: r.role, orgId: r.org_id === null ? null : Number(r.org_id) });

export interface NewUser {
  email: string;
  role: Role;
  orgId: number | null;
  /** The users.id (the agent name dials and keys use); default: the email's local part, made unique. */
  id?: string;
  name?: string;
}

/** Creates a console user (or gives an existing CTI user of the same id an email and a role). */
export async function createUser(sql: Sql, input: NewUser): Promise<ConsoleUser> {
  return sql.begin((tx) => createUserIn(tx, input));
}

/** createUser inside the caller's transaction (the installer creates the first admin with its password). */
export async function createUserIn(tx: Tx, input: NewUser): Promise<ConsoleUser> {
  const email = normalEmail(input.email);
  if (!EMAIL.test(email)) throw new UsageError(`users: ${JSON.stringify(input.email)} is not an email address`);
  if (input.role !== "admin" && input.orgId === null) throw new UsageError(`users: a ${input.role} belongs to one organization (--org)`);
  if (input.role === "admin" && input.orgId !== null) throw new UsageError("users: an admin acts for every organization (no --org)");
  if (input.orgId !== null) {
    const [org] = await tx`select 1 from orgs where id = ${input.orgId}`;
    if (!org) throw new UsageError(`users: no organization ${input.orgId}`);
  }
  const [taken] = await tx`select id from users where email = ${email}`;
  if (taken) throw new UsageError(`users: ${email} is already user ${JSON.stringify(taken.id)}`);
  let id = input.id;
  if (id === undefined) {
    const base = email.split("@")[0]!.replace(/[^a-z0-9._-]/g, "") || "user";
    const [free] = await tx<{ id: string }[]>`
      select c.id from (select ${base}::text as id union all select ${base} || '-' || n from generate_series(2, 999) n) c
      where not exists (select 1 from users u where u.id = c.id) limit 1`;
    id = free!.id;
  }
  const [existing] = await tx<{ org_id: string | null; role: string | null }[]>`select org_id, role from users where id = ${id} for update`;
  if (existing) {
    if (existing.role !== null) throw new UsageError(`users: user ${JSON.stringify(id)} can already sign in`);
    const org = existing.org_id === null ? null : Number(existing.org_id);
    if (org !== input.orgId) throw new UsageError(`users: user ${JSON.stringify(id)} belongs to ${org === null ? "the platform" : `org ${org}`}`);
    const [row] = await tx<Row[]>`
      update users set email = ${email}, role = ${input.role}, name = coalesce(nullif(${input.name ?? ""}, ''), name)
      where id = ${id} returning id, email, name, role, org_id`;
    return userOf(row!);
  }
  const [row] = await tx<Row[]>`
    insert into users (id, org_id, name, email, role) values (${id}, ${input.orgId}, ${input.name ?? ""}, ${email}, ${input.role})
    returning id, email, name, role, org_id`;
  return userOf(row!);
}

export interface SignInRecord extends ConsoleUser {
  passwordHash: string | null;
  /** The sealed TOTP secret when two-step sign-in is on, and the last step used. */
  totpSecret: string | null;
  totpStep: number;
}

export async function userByEmail(sql: Sql, email: string): Promise<SignInRecord | null> {
  const [r] = await sql<(Row & { password_hash: string | null; totp_secret: string | null; totp_step: number })[]>`
    select id, email, name, role, org_id, password_hash, totp_secret, totp_step::float8 as totp_step from users
    where email = ${normalEmail(email)} and role is not null and disabled_at is null`;
  return r ? { ...userOf(r), passwordHash: r.password_hash, totpSecret: r.totp_secret, totpStep: Number(r.totp_step) } : null;
}

/** The console user of `email`, or the CLI's one-line refusal. */
async function requireUser(sql: Sql, email: string): Promise<SignInRecord> {
  const user = await userByEmail(sql, email);
  if (!user) throw new UsageError(`users: no console user ${JSON.stringify(normalEmail(email))}`);
  return user;
}

/** Uses up a TOTP step: true when it is later than any used before (two sign-ins cannot share a code). */
export async function takeTotpStep(sql: Sql, userId: string, step: number): Promise<boolean> {
  const rows = await sql`update users set totp_step = ${step} where id = ${userId} and totp_step < ${step} returning 1`;
  return rows.length === 1;
}

/** Turns two-step sign-in off (`users totp-off`, a lost phone) and ends the user's sessions. */
export async function turnOffTotp(sql: Sql, email: string, now: number): Promise<void> {
  const user = await requireUser(sql, email);
  await sql.begin(async (tx) => {
    await tx`update users set totp_secret = null, totp_pending = null where id = ${user.id}`;
    await tx`update console_sessions set revoked_at = ${new Date(now)} where user_id = ${user.id} and revoked_at is null`;
  });
}

export async function userById(sql: Sql, id: string): Promise<ConsoleUser | null> {
  const [r] = await sql<Row[]>`select id, email, name, role, org_id from users where id = ${id} and role is not null and disabled_at is null`;
  return r ? userOf(r) : null;
}

export async function listUsers(sql: Sql, orgId?: number | null): Promise<(ConsoleUser & { hasPassword: boolean; sessions: number })[]> {
  const rows = await sql<(Row & { has_password: boolean; sessions: number })[]>`
    select u.id, u.email, u.name, u.role, u.org_id, u.password_hash is not null as has_password,
           (select count(*)::int from console_sessions s where s.user_id = u.id and s.revoked_at is null) as sessions
    from users u where u.role is not null and u.disabled_at is null ${orgId === undefined ? sql`` : sql`and u.org_id is not distinct from ${orgId}`}
    order by u.org_id nulls first, u.email`;
  return rows.map((r) => ({ ...userOf(r), hasPassword: r.has_password, sessions: r.sessions }));
}

/**
 * A one-time link's token for `email`'s user; the plaintext is returned once, its hash stored.
 * The user's older links stop working (one sent to a wrong address, or leaked, is revoked by the next).
 */
export async function inviteUser(sql: Sql, email: string, now: number): Promise<{ user: ConsoleUser; token: string; expiresAt: Date }> {
  const user = await requireUser(sql, email);
  const token = newToken();
  const at = new Date(now);
  const expiresAt = new Date(now + INVITE_TTL_MS);
  await sql.begin(async (tx) => {
    await tx`update console_invites set used_at = ${at} where user_id = ${user.id} and used_at is null`;
    await tx`insert into console_invites (token_hash, user_id, created_at, expires_at) values (${tokenHash(token)}, ${user.id}, ${at}, ${expiresAt})`;
  });
  return { user, token, expiresAt };
}

/**
 * Exchanges a link's token for a new one, the cookie's, that works INVITE_OPEN_MS (or what is left
 * of the link's life, if less); null when the link is unknown, used, expired or already opened.
 * One statement: of two opening the same link at once, one gets the new token.
 */
export async function openInvite(sql: Sql, linkToken: string, now: number): Promise<string | null> {
  const fresh = newToken();
  const rows = await sql`
    update console_invites i set token_hash = ${tokenHash(fresh)}, expires_at = least(i.expires_at, ${new Date(now + INVITE_OPEN_MS)})
    from users u
    where i.token_hash = ${tokenHash(linkToken)} and i.used_at is null and i.expires_at > ${new Date(now)}
      and u.id = i.user_id and u.role is not null and u.disabled_at is null
    returning 1`;
  return rows.length === 1 ? fresh : null;
}

/** The user an unused, unexpired invite (by its cookie's token) belongs to, or null. */
export async function inviteUserOf(sql: Sql, token: string, now: number): Promise<ConsoleUser | null> {
  const [r] = await sql<Row[]>`
    select u.id, u.email, u.name, u.role, u.org_id from console_invites i join users u on u.id = i.user_id
    where i.token_hash = ${tokenHash(token)} and i.used_at is null and i.expires_at > ${new Date(now)}
      and u.role is not null and u.disabled_at is null`;
  return r ? userOf(r) : null;
}

/** `users passwd`: sets a password (refused: UsageError saying why); see setPasswordHash. */
export async function setPassword(sql: Sql, who: { token: string } | { email: string }, password: string, now: number): Promise<boolean> {
  const problem = passwordProblem(password);
  if (problem) throw new UsageError(problem);
  return setPasswordHash(sql, who, await hashPassword(password), now);
}

/**
 * Sets a password's hash and ends the user's sessions, in one transaction; through an invite
 * (`token`, the cookie's), which is used up, or directly. False when the invite is not (or no
 * longer) valid.
 */
export async function setPasswordHash(sql: Sql, who: { token: string } | { email: string }, hash: string, now: number): Promise<boolean> {
  const at = new Date(now);
  return sql.begin(async (tx) => {
    let userId: string | undefined;
    if ("token" in who) {
      const [used] = await tx<{ user_id: string }[]>`
        update console_invites set used_at = ${at}
        where token_hash = ${tokenHash(who.token)} and used_at is null and expires_at > ${at} returning user_id`;
      userId = used?.user_id;
    } else {
      const [u] = await tx<{ id: string }[]>`select id from users where email = ${normalEmail(who.email)} and role is not null and disabled_at is null`;
      if (!u) throw new UsageError(`users: no console user ${JSON.stringify(normalEmail(who.email))}`);
      userId = u.id;
    }
    if (userId === undefined) return false;
    await tx`update users set password_hash = ${hash}, password_changed_at = ${at} where id = ${userId}`;
    await tx`update console_sessions set revoked_at = ${at} where user_id = ${userId} and revoked_at is null`;
    await tx`update console_invites set used_at = ${at} where user_id = ${userId} and used_at is null`;
    return true;
  });
}

/** Ends every session of the user; returns how many were open. */
export async function revokeSessions(sql: Sql, email: string, now: number): Promise<number> {
  const user = await requireUser(sql, email);
  const rows = await sql`update console_sessions set revoked_at = ${new Date(now)} where user_id = ${user.id} and revoked_at is null returning 1`;
  return rows.length;
}

/**
 * Takes away the right to sign in (the CTI user stays), ending its sessions, and revokes the API
 * keys bound to the user: revoked, not suspended, since revocation is final and there is no
 * re-enabling a user (a returning person gets new keys). Audited as `user.disable` by the
 * operator, in the user's organization's log. Answers the user and the keys revoked.
 */
export async function disableUser(sql: Sql, email: string, now: number): Promise<{ user: ConsoleUser; revokedKeys: number[] }> {
  const user = await requireUser(sql, email);
  const at = new Date(now);
  const revokedKeys = await sql.begin(async (tx) => {
    await tx`update users set disabled_at = ${at} where id = ${user.id}`;
    await tx`update console_sessions set revoked_at = ${at} where user_id = ${user.id} and revoked_at is null`;
    const keys = await revokeKeysOfAgent(tx, user.id, at);
    await audit(tx, systemActor("operator", "cli", user.orgId), "user.disable", `user:${user.id}`, { revoked_keys: keys }, user.orgId);
    return keys;
  });
  // Running servers cache keys: tell them, after the commit.
  if (revokedKeys.length > 0) await notifyKeysChanged(sql);
  return { user, revokedKeys };
}
