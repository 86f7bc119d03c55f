// Server-side console sessions: the cookie carries 32 random bytes, the database their SHA-256, so
// a dump holds no usable session. A session ends when revoked (sign-out, `users revoke-sessions`,
// a password change), after IDLE_MS without a request, or ABSOLUTE_MS after sign-in, whichever
// comes first.
import { randomBytes } from "node:crypto";
import type { Clock } from "../clock";
import type { Sql } from "../db/client";
import { every, type Worker } from "../jobs/worker";
import { newToken, tokenHash, type ConsoleUser, type Role } from "./users";

export const IDLE_MS = 2 * 3_600_000;
export const ABSOLUTE_MS = 12 * 3_600_000;
// seen_at is written at most this often per session: a page polling every few seconds is not a write each.
const TOUCH_MS = 60_000;

export const COOKIE = "leadline_session";

export interface Session {
  user: ConsoleUser;
  csrf: string;
  /** The token's hash, hex: names the session without being it. */
  id: string;
}

export async function createSession(sql: Sql, userId: string, address: string, now: number): Promise<{ token: string; csrf: string }> {
  const token = newToken();
  const csrf = randomBytes(24).toString("base64url");
  const at = new Date(now);
  await sql`
    insert into console_sessions (token_hash, user_id, csrf, address, created_at, seen_at)
    values (${tokenHash(token)}, ${userId}, ${csrf}, ${address}, ${at}, ${at})`;
  return { token, csrf };
}

type Row = {
  user_id: string;
  email: string;
  name: string;
  role: Role;
  org_id: string | null;
  csrf: string;
  seen_at: Date;
};

/** What makes the session `s` of user `u` live: not revoked, neither idle nor too old, its user a console user still. */
const liveAt = (sql: Sql, now: number) =>
  sql`s.revoked_at is null and s.seen_at > ${new Date(now - IDLE_MS)} and s.created_at > ${new Date(now - ABSOLUTE_MS)}
      and u.role is not null and u.disabled_at is null`;

/**
 * The live session of a cookie's token, or null; refreshes its idle time unless `touch` is false
 * (a request with POLL_HEADER, src/http/route.ts: an unattended screen that polls signs out after
 * IDLE_MS, as one closed).
 */
export async function loadSession(sql: Sql, token: string, now: number, touch = true): Promise<Session | null> {
  if (token.length < 20 || token.length > 100) return null;
  const hash = tokenHash(token);
  const [r] = await sql<Row[]>`
    select s.user_id, u.email, u.name, u.role, u.org_id, s.csrf, s.seen_at
    from console_sessions s join users u on u.id = s.user_id
    where s.token_hash = ${hash} and ${liveAt(sql, now)}`;
  if (!r) return null;
  if (touch && now - r.seen_at.getTime() > TOUCH_MS) await sql`update console_sessions set seen_at = ${new Date(now)} where token_hash = ${hash}`;
  return {
    user: { id: r.user_id, email: r.email, name: r.name, role: r.role, orgId: r.org_id === null ? null : Number(r.org_id) },
    csrf: r.csrf,
    id: hash.toString("hex"),
  };
}

/**
 * Whether the session named `id` (Session.id) is still live, without refreshing its idle time: an
 * open event stream asks this as it goes (src/console/inbox-stream.ts), and a tab left open must
 * not keep its session alive by that alone.
 */
export async function sessionLive(sql: Sql, id: string, now: number): Promise<boolean> {
  const [r] = await sql<{ live: boolean }[]>`
    select exists (
      select 1 from console_sessions s join users u on u.id = s.user_id
      where s.token_hash = decode(${id}, 'hex') and ${liveAt(sql, now)}) as live`;
  return r?.live === true;
}

/**
 * Whether the user has a session from this (hashed) address that has not been pruned: live, or
 * ended less than about a day ago (pruneSessions). Sign-in's password checks serve such a
 * returning user first (src/limits/semaphore.ts, `front`).
 */
export async function signedInFrom(sql: Sql, userId: string, address: string): Promise<boolean> {
  const [r] = await sql<{ known: boolean }[]>`
    select exists (select 1 from console_sessions where user_id = ${userId} and address = ${address}) as known`;
  return r?.known === true;
}

export async function endSession(sql: Sql, token: string, now: number): Promise<void> {
  await sql`update console_sessions set revoked_at = ${new Date(now)} where token_hash = ${tokenHash(token)} and revoked_at is null`;
}

/** Sessions ended or expired more than a day ago are deleted (the prune worker). */
export async function pruneSessions(sql: Sql, now: number): Promise<void> {
  const day = 24 * 3_600_000;
  await sql`delete from console_sessions where coalesce(revoked_at, created_at + ${ABSOLUTE_MS / 1000} * interval '1 second') < ${new Date(now - day)}`;
  await sql`delete from console_invites where expires_at < ${new Date(now - day)}`;
}

/** The session cookie: HttpOnly, SameSite=Lax, Secure when the console is served over https. */
export function sessionCookie(token: string, secure: boolean): string {
  return `${COOKIE}=${token}; Path=/console; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}; Max-Age=${ABSOLUTE_MS / 1000}`;
}

export const clearedCookie = (secure: boolean) => `${COOKIE}=; Path=/console; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}; Max-Age=0`;

export function cookieToken(request: Request): string | null {
  const header = request.headers.get("cookie");
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === COOKIE) return part.slice(eq + 1).trim() || null;
  }
  return null;
}

/** Hourly: ended sessions and old invites deleted, so the tables hold what is live. */
export const sessionPruner = (sql: Sql, clock: Clock): Worker => every("console.prune", 3_600_000, () => pruneSessions(sql, clock.now()));
