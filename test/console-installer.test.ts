// The first admin: `serve` on an installation where nobody can sign in prints a one-time installer
// link (src/console/installer.ts); opening it swaps the token for a cookie, the form creates the
// admin and signs them in, and the link is used up. `leadline users create --role admin` is the
// command line's way, and ends the link too.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Io } from "../src/args";
import { usersCommand } from "../src/console/command";
import { createFirstAdmin, INSTALLER_TTL_MS, issueInstallerLink } from "../src/console/installer";
import { startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems } from "./harness/browser";
import { ManualClock } from "./harness/clock";
import { shoot } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { built, Exe } from "./harness/exe";
import { seedWorld } from "./harness/factory";

// Creating the admin hashes a password with Argon2id (64 MiB, on purpose slow).
setDefaultTimeout(60_000);

const opened: { db: TestDatabase; app: TestApp }[] = [];
afterAll(async () => {
  for (const o of opened) {
    await o.app.stop();
    await o.db.drop();
  }
}, 30_000);

/** A served installation where nobody can sign in yet (agents of the dialer, but no console user). */
async function installation() {
  const db = await testDatabase();
  await seedWorld(db.sql);
  const clock = new ManualClock(Date.parse("2026-11-25T15:00:00Z"));
  const app = await startApp(db.url, {}, { clock });
  opened.push({ db, app });
  return { db, app, clock, sql: db.sql };
}

const manual = { redirect: "manual" as const };
const withCookie = (cookie: string, init: RequestInit = {}) => ({ ...manual, ...init, headers: { ...(init.headers as object), cookie } });
const form = (fields: Record<string, string>, cookie: string, origin?: string): RequestInit =>
  withCookie(cookie, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...(origin ? { origin } : {}) },
    body: new URLSearchParams(fields).toString(),
  });
const ADMIN = { email: "Owner@Example.test", name: "Olive Owner", password: "a long pass phrase", confirm: "a long pass phrase" };

/** Opens the link as a browser does: answers the installer cookie it was given. */
async function open(base: string, token: string): Promise<string> {
  const res = await fetch(`${base}/console/install/${token}`, manual);
  expect(res.status).toBe(303);
  expect(res.headers.get("location")).toBe("/console/install");
  const set = res.headers.get("set-cookie") ?? "";
  expect(set).toBe(`leadline_install=${token}; Path=/console/install; HttpOnly; SameSite=Lax; Max-Age=3600`);
  return set.split(";")[0]!;
}

function captureIo(): Io & { text: () => string } {
  let out = "";
  return { out: (t: string) => void (out += t), err: () => {}, readInput: async () => "", flush: async () => {}, text: () => out } as never;
}

describe("the installer link", () => {
  test("issued while nobody can sign in; opening it swaps the token for a cookie; each start replaces it", async () => {
    const { app, sql, clock } = await installation();
    const first = (await issueInstallerLink(sql, clock.now()))!;
    expect(first).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Only the token's hash is kept.
    expect(JSON.stringify([...(await sql`select value from settings`)])).not.toContain(first);
    const cookie = await open(app.base, first);
    const page = await fetch(`${app.base}/console/install`, withCookie(cookie));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Create the first admin");
    expect((await fetch(`${app.base}/console/install`, manual)).status).toBe(404);
    expect((await fetch(`${app.base}/console/install/${"x".repeat(43)}`, manual)).status).toBe(404);
    // A new start's link replaces the last one.
    const second = (await issueInstallerLink(sql, clock.now()))!;
    expect(second).not.toBe(first);
    expect((await fetch(`${app.base}/console/install/${first}`, manual)).status).toBe(404);
    expect((await fetch(`${app.base}/console/install`, withCookie(cookie))).status).toBe(404);
    await open(app.base, second);
  });

  test("the form creates the admin and signs them in; the link is then used up and no start issues another", async () => {
    const { app, sql, clock } = await installation();
    const token = (await issueInstallerLink(sql, clock.now()))!;
    const cookie = await open(app.base, token);
    const post = (fields: Record<string, string>, origin?: string) => fetch(`${app.base}/console/install`, form(fields, cookie, origin));
    const refused = async (fields: Record<string, string>, says: string) => {
      const r = await post(fields);
      expect(r.status).toBe(422);
      expect(await r.text()).toContain(says);
    };
    await refused({ ...ADMIN, password: "short", confirm: "short" }, "at least 12 characters");
    await refused({ ...ADMIN, confirm: "a long pass phrasE" }, "the two passwords differ");
    await refused({ ...ADMIN, email: "not-an-email" }, "is not an email address");
    await refused({ name: "x" }, "at least 12 characters");
    expect((await post(ADMIN, "https://evil.example")).status).toBe(403);
    expect((await sql`select 1 from users where role is not null`).length).toBe(0);

    const made = await post(ADMIN, app.base);
    expect(made.status).toBe(303);
    expect(made.headers.get("location")).toBe("/console/settings/first-steps");
    const cookies = made.headers.getSetCookie();
    expect(cookies.some((c) => c.startsWith("leadline_install=;") && c.includes("Max-Age=0"))).toBe(true);
    const session = cookies.find((c) => c.startsWith("leadline_session="))!.split(";")[0]!;
    const account = await fetch(`${app.base}/console/account`, withCookie(session));
    expect(account.status).toBe(200);
    expect(await account.text()).toContain("owner@example.test");
    expect([...(await sql`select id, email, name, role, org_id, password_hash is not null as password from users where role is not null`)]).toEqual([
      { id: "owner", email: "owner@example.test", name: "Olive Owner", role: "admin", org_id: null, password: true },
    ]);
    expect([...(await sql`select actor_type, actor_id, action, target, details from audit_log where action = 'user.create'`)]).toEqual([
      { actor_type: "user", actor_id: "owner", action: "user.create", target: "user:owner", details: { role: "admin", by: "installer" } },
    ]);
    // Used up: the link, the cookie and a new start give nothing.
    expect((await fetch(`${app.base}/console/install/${token}`, manual)).status).toBe(404);
    expect((await post({ ...ADMIN, email: "second@example.test" }, app.base)).status).toBe(404);
    expect(await issueInstallerLink(sql, clock.now())).toBeNull();
    expect((await sql`select 1 from settings where key = 'console_installer'`).length).toBe(0);
  });

  test("it works for 24 hours", async () => {
    const { app, sql, clock } = await installation();
    const token = (await issueInstallerLink(sql, clock.now()))!;
    clock.advance(INSTALLER_TTL_MS - 1000);
    const cookie = await open(app.base, token);
    clock.advance(2000);
    expect((await fetch(`${app.base}/console/install/${token}`, manual)).status).toBe(404);
    expect((await fetch(`${app.base}/console/install`, form(ADMIN, cookie, app.base))).status).toBe(404);
  });

  test("two forms posted at once make one admin", async () => {
    const { app, sql, clock } = await installation();
    const cookie = await open(app.base, (await issueInstallerLink(sql, clock.now()))!);
    const statuses = await Promise.all(
      ["one@example.test", "two@example.test", "three@example.test"].map((email) =>
        fetch(`${app.base}/console/install`, form({ ...ADMIN, email }, cookie, app.base)).then((r) => r.status),
      ),
    );
    expect(statuses.sort()).toEqual([303, 404, 404]);
    expect((await sql`select 1 from users where role = 'admin'`).length).toBe(1);
  });

  test("two transactions open at once make one admin", async () => {
    const { sql, clock } = await installation();
    const token = (await issueInstallerLink(sql, clock.now()))!;
    // The users table held locked meanwhile, so that both transactions have begun before either
    // can create its user: the race made certain (two: the test's client has four connections,
    // one holding the lock and one watching). The test's client waits for locks unbounded,
    // unlike serve's (250 ms), so the wait itself fails nothing.
    let release = () => {};
    const held = new Promise<void>((ok) => (release = ok));
    const locking = sql.begin(async (tx) => {
      await tx`lock table users in exclusive mode`;
      await held;
    });
    const made = ["one@example.test", "two@example.test"].map((email) => createFirstAdmin({ sql, clock }, token, { ...ADMIN, email }, "h"));
    for (let i = 0; i < 1200; i++) {
      const [{ n }] = await sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
      if (n >= 2) break;
      await Bun.sleep(50);
    }
    release();
    await locking;
    const outcomes = (await Promise.all(made)).map((m) => (m.ok ? "created" : "gone" in m ? "gone" : m.problem));
    expect(outcomes.sort()).toEqual(["created", "gone"]);
    expect((await sql`select 1 from users where role = 'admin'`).length).toBe(1);
  });

  test("users create --role admin makes the first admin from the command line, and the link stops working", async () => {
    const { app, sql, clock } = await installation();
    const token = (await issueInstallerLink(sql, clock.now()))!;
    const io = captureIo();
    expect(await usersCommand(sql, ["create", "--email", "ops@example.test", "--role", "admin"], { baseUrl: app.base }, io, clock)).toBe(0);
    expect(io.text()).toMatch(new RegExp(`^${app.base}/console/invite/[A-Za-z0-9_-]{43}\n$`));
    expect((await fetch(`${app.base}/console/install/${token}`, manual)).status).toBe(404);
    expect(await issueInstallerLink(sql, clock.now())).toBeNull();
  });

  test("the form in Chromium: no serious or critical axe finding; it ends signed in on the first steps", async () => {
    const { app, sql, clock } = await installation();
    const token = (await issueInstallerLink(sql, clock.now()))!;
    const browser = await launchBrowser();
    try {
      const context = await browser.newContext({ bypassCSP: true });
      const page = await context.newPage();
      const problems = pageProblems(page);
      await page.goto(`${app.base}/console/install/${token}`);
      expect(new URL(page.url()).pathname).toBe("/console/install");
      expect(await axeProblems(page)).toEqual([]);
      await shoot(page, "installer");
      await page.getByLabel("Email").fill(ADMIN.email);
      await page.getByLabel("Name").fill(ADMIN.name);
      await page.getByLabel("Password", { exact: true }).fill(ADMIN.password);
      await page.getByLabel("The same again").fill(ADMIN.password);
      await Promise.all([page.waitForURL((u) => u.pathname === "/console/settings/first-steps"), page.getByRole("button", { name: "Create the admin and sign in" }).click()]);
      expect(await page.locator("h1").first().textContent()).toContain("First steps");
      expect(await page.locator(".first-steps li.todo", { hasText: "Invite users" }).count()).toBe(1);
      expect(await axeProblems(page)).toEqual([]);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});

describe.skipIf(!built)("serve prints the link", () => {
  test("once, on standard error after it listens, while nobody can sign in; not once someone can", async () => {
    const db = await testDatabase();
    const exe = new Exe();
    try {
      const env = { DATABASE_URL: db.url, LOG_LEVEL: "info" };
      const first = await exe.serve(env);
      // The banner, on standard error, once serve listens; standard output keeps to JSON log lines.
      for (let i = 0; i < 100 && !first.errLines.some((l) => l.includes("/console/install/")); i++) await Bun.sleep(100);
      const at = first.errLines.findIndex((l) => l.includes("/console/install/"));
      expect(first.errLines.filter((l) => l.includes("/console/install/"))).toHaveLength(1);
      expect(first.errLines.slice(at - 3, at).join("\n")).toContain("Nobody can sign in to the console yet.");
      const token = /\/console\/install\/([A-Za-z0-9_-]{43})$/.exec(first.errLines[at]!.trim())![1]!;
      expect(first.lines.some((l) => l.includes('"msg":"listening"'))).toBe(true);
      expect(first.lines.filter((l) => l.includes(token) || !l.startsWith("{"))).toEqual([]);
      expect((await fetch(`${first.base}/console/install/${token}`, manual)).status).toBe(303);
      await first.stop();
      await exe.run(["users", "create", "--email", "ops@example.test", "--role", "admin"], env);
      // Printed, if at all, right after the "listening" line serve() waited for; stop reads to the end.
      const second = await exe.serve(env);
      await second.stop();
      expect([...second.lines, ...second.errLines].filter((l) => l.includes("/console/install/"))).toEqual([]);
    } finally {
      exe.cleanup();
      await db.drop();
    }
  }, 120_000);
});
