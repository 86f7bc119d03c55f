// Console users and sessions for tests: a user made in the database, signed in over HTTP (a
// client that keeps the cookie and the CSRF token) or in Chromium; screenshots at two widths.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import type { Sql } from "../../src/db/client";
import type { Argon2Cost } from "../../src/auth/passwords";
import { createUser, hashPassword, type Role } from "../../src/console/users";
import type { Reply } from "./app";
import { SHOTS_DIR } from "./browser";

let made = 0;

/**
 * Argon2id's cost for the users tests make (src/auth/passwords.ts): the real one (64 MiB, two
 * passes) took seconds per user on a busy machine, and the console tests make hundreds of users.
 */
export const TEST_ARGON2_COST: Argon2Cost = { memoryCost: 256, timeCost: 1 };

export interface MadeUser {
  id: string;
  email: string;
  password: string;
}

/**
 * A console user with a password; `id` may name an existing CTI user (agent7), who gets the role.
 * `cost`: Argon2id's, default TEST_ARGON2_COST (the stored hash says what a check costs, so signing
 * in as this user is cheap on any instance; a test about the real cost passes ARGON2_COST).
 */
export async function makeUser(
  sql: Sql,
  o: { role: Role; orgId: number | null; email?: string; password?: string; id?: string; name?: string; cost?: Argon2Cost },
): Promise<MadeUser> {
  const n = ++made;
  const email = (o.email ?? `${o.role}${n}-${process.pid}@example.test`).toLowerCase();
  const password = o.password ?? `correct horse battery ${n}`;
  const user = await createUser(sql, { email, role: o.role, orgId: o.orgId, id: o.id, name: o.name });
  await sql`update users set password_hash = ${await hashPassword(password, o.cost ?? TEST_ARGON2_COST)} where id = ${user.id}`;
  return { id: user.id, email, password };
}

export interface ConsoleClient {
  cookie: string;
  csrf: string;
  get(path: string, headers?: Record<string, string>): Promise<Reply>;
  /** A form post with the session's CSRF token (unless the form has its own `_csrf`). */
  post(path: string, form?: Record<string, string>, headers?: Record<string, string>): Promise<Reply>;
  postJson(path: string, json: unknown, headers?: Record<string, string>): Promise<Reply>;
}

async function reply(res: Response): Promise<Reply> {
  const text = await res.text();
  let body: unknown = text;
  if ((res.headers.get("content-type") ?? "").includes("json")) {
    try {
      body = JSON.parse(text);
    } catch {}
  }
  return { status: res.status, body, headers: res.headers };
}

/** A client with the cookie of a session (redirects are not followed). */
export function sessionClient(base: string, cookie: string, csrf: string): ConsoleClient {
  const send = (path: string, init: RequestInit) => fetch(base + path, { redirect: "manual", ...init }).then(reply);
  return {
    cookie,
    csrf,
    get: (path, headers = {}) => send(path, { headers: { cookie, ...headers } }),
    post: (path, form = {}, headers = {}) =>
      send(path, {
        method: "POST",
        headers: { cookie, "content-type": "application/x-www-form-urlencoded", ...headers },
        body: new URLSearchParams({ _csrf: csrf, ...form }).toString(),
      }),
    postJson: (path, json, headers = {}) =>
      send(path, { method: "POST", headers: { cookie, "content-type": "application/json", "x-csrf-token": csrf, ...headers }, body: JSON.stringify(json) }),
  };
}

/** Signs in over HTTP; throws unless the sign-in succeeds. */
export async function signIn(base: string, email: string, password: string): Promise<ConsoleClient> {
  const res = await fetch(`${base}/console/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ email, password, next: "/console/account" }).toString(),
  });
  await res.text();
  const set = res.headers.get("set-cookie") ?? "";
  if (res.status !== 303 || !set.startsWith("leadline_session=")) throw new Error(`sign-in of ${email} failed: ${res.status}`);
  const cookie = set.split(";")[0]!;
  const page = await fetch(`${base}/console/account`, { headers: { cookie } }).then((r) => r.text());
  const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(page)?.[1];
  if (!csrf) throw new Error("no CSRF token on the account page");
  return sessionClient(base, cookie, csrf);
}

/** Signs in through the sign-in page in Chromium; ends on the page signing in leads to. */
export async function browserSignIn(page: Page, base: string, email: string, password: string, next = "/console/inbox"): Promise<void> {
  await page.goto(`${base}/console/login?next=${encodeURIComponent(next)}`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await Promise.all([page.waitForURL((url) => !url.pathname.startsWith("/console/login")), page.getByRole("button", { name: "Sign in" }).click()]);
}

/** Screenshots of the page as it is, full length, at 1280 and 375 px (or `widths`): SHOTS_DIR/console-NAME-WIDTH.png. */
export async function shoot(page: Page, name: string, widths: readonly number[] = [1280, 375]): Promise<void> {
  mkdirSync(SHOTS_DIR, { recursive: true });
  const size = page.viewportSize() ?? { width: 1280, height: 800 };
  for (const width of widths) {
    await page.setViewportSize({ width, height: 800 });
    await page.screenshot({ path: join(SHOTS_DIR, `console-${name}-${width}.png`), fullPage: true });
    // Nothing pushes the page sideways at any width (wide tables scroll in their own box).
    const wide = (await page.evaluate("document.documentElement.scrollWidth")) as number;
    if (wide > width) throw new Error(`console-${name}: the page is ${wide} px wide at a ${width} px window`);
  }
  await page.setViewportSize(size);
}
