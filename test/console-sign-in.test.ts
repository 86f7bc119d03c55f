// Sign-in that cannot be turned against its users (issue 27, points 2 and 12), through the served
// app: failures limited per account and client address and per address, never per account alone
// (twenty wrong passwords from A, then the right one from B signs in); successes not counted;
// password checks bounded, a sign-in finding them full answered 503 with Retry-After at once (the
// test holds the semaphore), an address that has failed never waiting in their line, a returning
// user's address served first; failed and throttled sign-ins audited with the hashed address and
// nothing typed; and the Host check of sign-in, sign-out, the invite routes and every POST console
// route (a page re-pointed at 127.0.0.1 by DNS rebinding sends its own name). Client addresses are
// set as nginx sets them (X-Forwarded-For from a loopback peer, TRUST_PROXY's default).
// Argon2id runs at a tenth of a millisecond here (the app's `passwords.cost` and the users'
// hashes), since these tests check passwords by the hundred; one test keeps the real cost.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { declaredRoutes } from "../src/app/app";
import type { Argon2Cost } from "../src/auth/passwords";
import { usersCommand } from "../src/console/command";
import { startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { makeUser, signIn, type MadeUser } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);

const CHEAP: Argon2Cost = { memoryCost: 64, timeCost: 1 };
const T0 = Date.parse("2026-11-25T15:00:00Z");
const A = "198.51.100.1";
const B = "198.51.100.2";

let db: TestDatabase;
let app: TestApp;
// A second instance whose checks all run at once: the races of many attempts from one address
// (which, past its first failure, never waits in the line of two checks).
let wide: TestApp;
const clock = new ManualClock(T0);

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url, {}, { clock, passwords: { slots: 2, waiting: 64, cost: CHEAP } });
  wide = await startApp(db.url, {}, { clock, passwords: { slots: 64, waiting: 0, cost: CHEAP } });
});
afterAll(async () => {
  await Promise.all([app?.stop(), wide?.stop()]);
  await db?.drop();
}, 30_000);

/** A fresh hour: the limits' windows start empty. */
const nextHour = () => clock.set(Math.ceil((clock.now() + 1) / 3_600_000) * 3_600_000 + 60_000);

const user = (o: { role?: "manager" | "agent"; orgId?: number } = {}) => makeUser(db.sql, { role: o.role ?? "agent", orgId: o.orgId ?? 1, cost: CHEAP });

interface Answer {
  status: number;
  location: string | null;
  cookie: string | null;
  retryAfter: string | null;
  body: string;
}

/** The sign-in form posted from `address` (X-Forwarded-For, as nginx sends it). */
async function login(email: string, password: string, address: string, headers: Record<string, string> = {}, base = app.base): Promise<Answer> {
  const r = await fetch(`${base}/console/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": address, ...headers },
    body: new URLSearchParams({ email, password, next: "/console/account" }).toString(),
  });
  return { status: r.status, location: r.headers.get("location"), cookie: r.headers.get("set-cookie"), retryAfter: r.headers.get("retry-after"), body: await r.text() };
}

const statuses = (answers: Answer[]) => answers.map((a) => a.status).sort();
const count = (list: number[], status: number) => list.filter((s) => s === status).length;

describe("lockout: failures are limited per account and address, never per account alone", () => {
  test("twenty wrong passwords from A: the right one from A is refused (429), from B it signs in", async () => {
    nextHour();
    const u = await user();
    for (let i = 0; i < 20; i++) expect((await login(u.email, "wrong password here", A)).status).toBe(401);
    const fromA = await login(u.email, u.password, A);
    expect(fromA.status).toBe(429);
    expect(fromA.cookie).toBeNull();
    expect(Number(fromA.retryAfter)).toBeGreaterThan(0);
    expect(Number(fromA.retryAfter)).toBeLessThanOrEqual(3600);
    expect(fromA.body).toContain("Too many failed sign-ins from here");
    const fromB = await login(u.email, u.password, B);
    expect(fromB.status).toBe(303);
    expect(fromB.cookie).toStartWith("leadline_session=");
    // A's other accounts are not the pair's: another user signs in from A.
    const other = await user();
    expect((await login(other.email, other.password, A)).status).toBe(303);
    // The pair's window is the hour.
    nextHour();
    expect((await login(u.email, u.password, A)).status).toBe(303);
  });

  test("thirty wrong sign-ins of one pair at once: twenty are checked (401), ten refused (429) — attempts in flight count", async () => {
    nextHour();
    const u = await user();
    const all = statuses(await Promise.all(Array.from({ length: 30 }, () => login(u.email, "wrong password here", A, {}, wide.base))));
    expect([count(all, 401), count(all, 429)]).toEqual([20, 10]);
    expect((await login(u.email, u.password, B)).status).toBe(303);
  });

  test("a hundred failures from one address, whichever accounts: that address is refused for everyone, another is not", async () => {
    nextHour();
    const u = await user();
    for (let i = 0; i < 100; i += 25) {
      const chunk = await Promise.all(Array.from({ length: 25 }, (_, j) => login(`guess${i + j}@example.test`, "x", A, {}, wide.base)));
      expect(statuses(chunk)).toEqual(Array(25).fill(401));
    }
    expect((await login(u.email, u.password, A)).status).toBe(429);
    expect((await login(u.email, u.password, B)).status).toBe(303);
  });

  test("successful sign-ins are not counted: 25 from one address (more than a pair's 20) all sign in", async () => {
    nextHour();
    const u = await user();
    for (let i = 0; i < 25; i++) expect((await login(u.email, u.password, A)).status).toBe(303);
    // …and failures still are: the count starts from them alone.
    for (let i = 0; i < 20; i++) expect((await login(u.email, "wrong password here", A)).status).toBe(401);
    expect((await login(u.email, u.password, A)).status).toBe(429);
  });
});

describe("stall: password checks run a few at a time", () => {
  test("with the checks and their line full, a sign-in is answered 503 with Retry-After at once; it waits in line while there is room", async () => {
    nextHour();
    const u = await user();
    const checks = app.running.deps.passwords.checks;
    expect(checks.state).toEqual({ running: 0, waiting: 0 });
    // Hold every slot and every place in line.
    const held: Promise<() => void>[] = [];
    for (let slot = checks.acquire(); slot !== null; slot = checks.acquire()) held.push(slot);
    expect(checks.state).toEqual({ running: 2, waiting: 64 });
    // Answered while the semaphore is still held: it did not wait in the line.
    const busy = await login(u.email, u.password, A);
    expect(busy.status).toBe(503);
    expect(busy.retryAfter).toBe("1");
    expect(busy.cookie).toBeNull();
    expect(busy.body).toContain("Many sign-ins are being checked just now");
    expect(busy.body).toContain(`value="${u.email}"`);
    expect(checks.state).toEqual({ running: 2, waiting: 64 });
    // A refusal for a full line counts as no failure: more of them than a pair's limit here, and
    // the right password from the same address signs in below.
    for (let i = 0; i < 25; i++) expect((await login(u.email, "wrong password here", A)).status).toBe(503);
    // Everything held let go: each one in line gets its slot in turn and gives it back.
    const [first, second] = await Promise.all(held.slice(0, 2));
    for (const pending of held.slice(2)) void pending.then((release) => release());
    first!();
    second!();
    while (checks.state.running > 0) await Bun.sleep(5);
    expect(checks.state).toEqual({ running: 0, waiting: 0 });
    // Room in the line: a sign-in waits there while both slots are held, and is answered once one frees.
    const slots = await Promise.all([checks.acquire()!, checks.acquire()!]);
    const queued = login(u.email, u.password, A);
    while (checks.state.waiting === 0) await Bun.sleep(5);
    for (const release of slots) release();
    expect((await queued).status).toBe(303);
    while (checks.state.running > 0) await Bun.sleep(5);
  });

  test("an address that has failed this hour gets a check only when one is free, never a place in the line; one that has not waits", async () => {
    nextHour();
    const u = await user();
    const checks = app.running.deps.passwords.checks;
    expect((await login(u.email, "wrong password here", A)).status).toBe(401);
    const slots = await Promise.all([checks.acquire()!, checks.acquire()!]);
    // Every slot taken, the line empty: A (a failure this hour) is answered 503 at once, or (the
    // rule broken) takes a place in the line: whichever happens first.
    let answered = false;
    const answer = login(u.email, u.password, A).finally(() => (answered = true));
    const first = await Promise.race([answer, (async () => {
      while (checks.state.waiting === 0 && !answered) await Bun.sleep(5);
      return "waited in line" as const;
    })()]);
    if (first === "waited in line") for (const release of slots) release();
    const fromA = await answer;
    expect([first === "waited in line" ? first : "answered", fromA.status, fromA.retryAfter]).toEqual(["answered", 503, "1"]);
    expect(checks.state).toEqual({ running: 2, waiting: 0 });
    // …B waits in the line and gets the first slot that frees.
    const fromB = login(u.email, u.password, B);
    while (checks.state.waiting === 0) await Bun.sleep(5);
    for (const release of slots) release();
    expect((await fromB).status).toBe(303);
    // With a slot free, A is checked like anyone.
    while (checks.state.running > 0) await Bun.sleep(5);
    expect((await login(u.email, u.password, A)).status).toBe(303);
  });

  test("a call centre: twelve agents signing in at once behind one address all wait their turn and sign in", async () => {
    nextHour();
    const agents = await Promise.all(Array.from({ length: 12 }, () => user()));
    const all = await Promise.all(agents.map((a) => login(a.email, a.password, A)));
    expect(statuses(all)).toEqual(Array(12).fill(303));
  });

  test("a user signing in from an address they have signed in from before goes ahead of a full line; a first-time address is refused", async () => {
    nextHour();
    const u = await user();
    expect((await login(u.email, u.password, A)).status).toBe(303);
    const checks = app.running.deps.passwords.checks;
    // Both slots and the whole ordinary line held, as a flood from many fresh addresses holds them.
    const held: Promise<() => void>[] = [];
    for (let slot = checks.acquire(); slot !== null; slot = checks.acquire()) held.push(slot);
    expect(checks.state).toEqual({ running: 2, waiting: 64 });
    expect((await login(u.email, u.password, B)).status).toBe(503);
    const [first, second] = await Promise.all(held.slice(0, 2));
    try {
      // From A (signed in from there before): a place ahead of the line, the first slot that frees.
      let answered = false;
      const returning = login(u.email, u.password, A).finally(() => (answered = true));
      while (checks.state.waiting === 64 && !answered) await Bun.sleep(5);
      first!();
      expect((await returning).status).toBe(303);
      // Everyone who was in the ordinary line before it is still there (one has taken the slot A gave back).
      expect(checks.state.waiting).toBeGreaterThanOrEqual(63);
    } finally {
      for (const pending of held.slice(2)) void pending.then((release) => release());
      first!();
      second!();
      while (checks.state.running > 0) await Bun.sleep(5);
    }
  });

  test("at the real cost (Argon2id, 64 MiB, t=2): a password set through an invite on an app with the default options signs in", async () => {
    const real = await startApp(db.url, {}, { clock });
    try {
      const u = await user();
      let link = "";
      const io = { out: (t: string) => void (link += t), err: () => {}, readInput: async () => "", flush: async () => {} };
      await usersCommand(db.sql, ["invite", "--email", u.email], { baseUrl: real.base }, io as never, clock);
      const opened = await fetch(link.trim(), { redirect: "manual" });
      const cookie = opened.headers.get("set-cookie")!.split(";")[0]!;
      const set = await fetch(`${real.base}/console/invite`, {
        method: "POST",
        redirect: "manual",
        headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ password: "a real cost pass phrase", confirm: "a real cost pass phrase" }).toString(),
      });
      expect(set.status).toBe(303);
      const [row] = await db.sql`select password_hash from users where id = ${u.id}`;
      expect(row.password_hash).toStartWith("$argon2id$v=19$m=65536,t=2,p=1$");
      expect(real.running.deps.passwords.checks.slots).toBe(navigator.hardwareConcurrency);
      await signIn(real.base, u.email, "a real cost pass phrase");
      // An unknown account is checked against a hash of the same cost (and refused alike).
      const unknown = await fetch(`${real.base}/console/login`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ email: "nobody-real@example.test", password: "a real cost pass phrase" }).toString(),
      });
      expect(unknown.status).toBe(401);
    } finally {
      await real.stop();
    }
  });
});

describe("audit: failed and throttled sign-ins", () => {
  test("a wrong password, an unknown account, a throttled pair: rows with the hashed address, never what was typed", async () => {
    nextHour();
    const u = await user({ role: "manager", orgId: 2 });
    const typed = "Secret-typed-password-7d1c";
    const since = (await db.sql`select coalesce(max(id), 0)::int as id from audit_log`)[0].id;
    expect((await login(u.email, typed, A)).status).toBe(401);
    expect((await login("not-an-account-5e2b@example.test", typed, A)).status).toBe(401);
    // Typed into the email field by mistake: not stored either.
    expect((await login(typed, typed, A)).status).toBe(401);
    for (let i = 0; i < 20; i++) expect((await login(u.email, typed, B)).status).toBe(401);
    // The pair is full: every refusal after this is answered from memory, the first one audited.
    for (let i = 0; i < 5; i++) expect((await login(u.email, u.password, B)).status).toBe(429);
    const rows = await db.sql`
      select org_id, actor_type, actor_id, action, target, details, address from audit_log where id > ${since} order by id`;
    const failed = rows.filter((r) => r.action === "session.sign_in_failed");
    expect(failed.length).toBe(3 + 20);
    expect(failed[0]).toEqual({ org_id: 2, actor_type: "anonymous", actor_id: "sign-in", action: "session.sign_in_failed", target: `user:${u.id}`, details: { reason: "password" }, address: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(failed[1]).toMatchObject({ org_id: null, target: "", details: { reason: "password" } });
    expect(failed[0]!.address).not.toBe(failed[3]!.address);
    const throttled = rows.filter((r) => r.action === "session.sign_in_throttled");
    expect(throttled).toEqual([
      { org_id: 2, actor_type: "anonymous", actor_id: "sign-in", action: "session.sign_in_throttled", target: `user:${u.id}`, details: { limit: "login_pair" }, address: failed[3]!.address },
    ]);
    const text = JSON.stringify(rows);
    for (const secret of [typed, u.password, "not-an-account-5e2b", A, B]) expect(text).not.toContain(secret);
    const [{ n }] = await db.sql`select count(*)::int as n from rate_counters where bucket like ${"%" + u.email + "%"}`;
    expect(n).toBe(0);
  });
});

describe("Host: the console's forms and sign-in answer only BASE_URL's host name or a loopback address", () => {
  test("DNS rebinding: a sign-in whose Host and Origin are the attacker's name is refused (403) and signs nobody in", async () => {
    nextHour();
    const u = await user();
    const port = new URL(app.base).port;
    const [{ before }] = await db.sql`select count(*)::int as before from console_sessions`;
    for (const host of [`evil.example:${port}`, "evil.example", `localhost.evil.example:${port}`]) {
      const r = await login(u.email, u.password, A, { host, origin: `http://${host}` });
      expect([host, r.status, r.cookie]).toEqual([host, 403, null]);
      expect(r.body).toContain("Not the console&#39;s address");
      expect(r.body).not.toContain("localhost:0");
    }
    const [{ after }] = await db.sql`select count(*)::int as after from console_sessions`;
    expect(after).toBe(before);
    // BASE_URL (http://localhost:0 here) by name, any port; loopback addresses.
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) {
      expect([host, (await login(u.email, u.password, A, { host, origin: `http://${host}` })).status]).toEqual([host, 303]);
    }
  });

  test("behind a proxy: BASE_URL's name signs in, another name is refused", async () => {
    const proxied = await startApp(db.url, { BASE_URL: "https://leads.example.com" }, { clock, passwords: { cost: CHEAP } });
    try {
      const u = await user();
      // The form's Origin is the site's own; the Host is what the proxy passed on.
      const post = (host: string) =>
        fetch(`${proxied.base}/console/login`, {
          method: "POST",
          redirect: "manual",
          headers: { host, origin: "https://leads.example.com", "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": A },
          body: new URLSearchParams({ email: u.email, password: u.password }).toString(),
        });
      expect((await post("leads.example.com")).status).toBe(303);
      expect((await post("LEADS.example.com.")).status).toBe(303);
      expect((await post("leads.example.org")).status).toBe(403);
      expect((await post("evil.leads.example.com")).status).toBe(403);
    } finally {
      await proxied.stop();
    }
  });

  test("every POST route of the console, sign-out and the invite routes refuse a foreign Host before anything else", async () => {
    nextHour();
    const u = await user({ role: "manager" });
    const c = await signIn(app.base, u.email, u.password);
    const routes = declaredRoutes(app.running.deps).filter((r) => r.tag === "Console" && (r.method === "POST" || r.path.startsWith("/console/invite/")));
    expect(routes.length).toBeGreaterThan(15);
    const port = new URL(app.base).port;
    for (const r of routes) {
      const path = r.path.replace(/\{[^}]+\}/g, (p) => (p === "{token}" ? "x".repeat(43) : "1"));
      const res = await fetch(app.base + path, {
        method: r.method,
        redirect: "manual",
        headers: {
          host: `evil.example:${port}`,
          origin: `http://evil.example:${port}`,
          cookie: c.cookie,
          "x-csrf-token": c.csrf,
          ...(r.method === "POST" ? { "content-type": "application/x-www-form-urlencoded" } : {}),
        },
        body: r.method === "POST" ? new URLSearchParams({ _csrf: c.csrf }).toString() : undefined,
      });
      const text = await res.text();
      expect([r.id, res.status]).toEqual([r.id, 403]);
      expect([r.id, (res.headers.get("content-type") ?? "").startsWith("text/html") ? text.includes("Not the console&#39;s address") : text.includes("csrf_rejected")]).toEqual([r.id, true]);
    }
    // Nothing happened: the session that "signed out everywhere" is alive.
    expect((await c.get("/console/account")).status).toBe(200);
    expect((await c.post("/console/account/sign-out-everywhere")).status).toBe(303);
  });
});
