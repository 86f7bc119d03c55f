// Two-step sign-in cannot be replaced or removed with a stolen session (issue 27, point 3), through
// the account page's forms with session, CSRF and Origin as a browser sends them: turning it on,
// moving it to a new device and turning it off need the password and, while it is on, a current
// code of the device in use; tries are limited per user (10 wrong an hour, sign-in's codes
// included), raced for real; a change ends every other session of the user and is audited.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Argon2Cost } from "../src/auth/passwords";
import { codeAt, stepOf } from "../src/console/totp";
import { startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { makeUser, sessionClient, signIn, type ConsoleClient, type MadeUser } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);

const CHEAP: Argon2Cost = { memoryCost: 64, timeCost: 1 };
let db: TestDatabase;
let app: TestApp;
const clock = new ManualClock(Date.parse("2026-11-25T15:00:10Z"));

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url, {}, { clock, passwords: { slots: 2, waiting: 64, cost: CHEAP } });
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
}, 30_000);

/** A fresh hour (the limits' windows start empty), ten seconds into its first step. */
const nextHour = () => clock.set(Math.ceil((clock.now() + 1) / 3_600_000) * 3_600_000 + 10_000);
/** The next 30-second step: a code of it has not been used. */
const nextStep = () => clock.advance(30_000);
const code = (secret: string) => codeAt(secret, stepOf(clock.now()));
const wrongCode = (secret: string) => (code(secret) === "000000" ? "111111" : "000000");

const totp = async (id: string) => (await db.sql`select totp_secret, totp_pending from users where id = ${id}`)[0] as { totp_secret: string | null; totp_pending: string | null };
const audits = async (id: string) =>
  (await db.sql`select action, details from audit_log where actor_id = ${id} and action like 'user.two_step%' order by id`).map((r) => ({ action: r.action, details: r.details }));

/** Starts a setup (or a move) and reads the new secret off the page. */
async function pendingSecret(c: ConsoleClient): Promise<string> {
  expect((await c.post("/console/account/two-step/setup")).headers.get("location")).toBe("/console/account/two-step");
  const page = await c.get("/console/account/two-step");
  expect(page.status).toBe(200);
  return /otpauth:\/\/totp\/Leadline:[^?]+\?secret=([A-Z2-7]+)&amp;/.exec(page.body)![1]!;
}

/** A user with two-step sign-in on (turned on through the page); the secret and the session that did it. */
async function withTwoStep(): Promise<{ u: MadeUser; secret: string; c: ConsoleClient }> {
  const u = await makeUser(db.sql, { role: "agent", orgId: 1, cost: CHEAP });
  const c = await signIn(app.base, u.email, u.password);
  const secret = await pendingSecret(c);
  const on = await c.post("/console/account/two-step/confirm", { code: code(secret), password: u.password });
  expect(on.headers.get("location")).toBe("/console/account?done=two-step-on");
  nextStep();
  return { u, secret, c };
}

/** Another session of the user: signs in with the password and a fresh code of `secret`; null when refused. */
async function session(u: MadeUser, secret: string): Promise<ConsoleClient | null> {
  const r = await fetch(`${app.base}/console/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ email: u.email, password: u.password, next: "/console/account", code: code(secret) }).toString(),
  });
  nextStep();
  if (r.status !== 303) return null;
  const cookie = r.headers.get("set-cookie")!.split(";")[0]!;
  const page = await (await fetch(`${app.base}/console/account`, { headers: { cookie } })).text();
  const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(page)![1]!;
  return sessionClient(app.base, cookie, csrf);
}

describe("turning on", () => {
  test("needs the password as well as the new app's first code; it ends the user's other sessions and is audited", async () => {
    nextHour();
    const u = await makeUser(db.sql, { role: "agent", orgId: 1, cost: CHEAP });
    const [stolen, other] = [await signIn(app.base, u.email, u.password), await signIn(app.base, u.email, u.password)];
    const secret = await pendingSecret(stolen);
    for (const password of [undefined, "", "not the password at all"]) {
      const r = await stolen.post("/console/account/two-step/confirm", { code: code(secret), ...(password === undefined ? {} : { password }) });
      expect(r.status).toBe(200);
      expect(r.body).toContain("The password or a code does not match. Nothing changed.");
    }
    expect((await totp(u.id)).totp_secret).toBeNull();
    // With the password: on, and the other session has ended while this one goes on.
    const on = await stolen.post("/console/account/two-step/confirm", { code: code(secret), password: u.password }, { origin: app.base });
    expect(on.headers.get("location")).toBe("/console/account?done=two-step-on");
    expect((await totp(u.id)).totp_secret).toBe(secret);
    expect((await other.get("/console/account")).status).toBe(303);
    const account = await stolen.get("/console/account?done=two-step-on");
    expect(account.status).toBe(200);
    expect(account.body).toContain("Your other sessions have ended.");
    expect(await audits(u.id)).toEqual([
      { action: "user.two_step_refused", details: { reason: "mismatch" } },
      { action: "user.two_step_refused", details: { reason: "mismatch" } },
      { action: "user.two_step_refused", details: { reason: "mismatch" } },
      { action: "user.two_step_on", details: { sessions_ended: 1 } },
    ]);
  });
});

describe("a stolen session cannot replace the second factor", () => {
  test("moving to a new device needs the password and a current code of the device in use; done, it ends the other sessions", async () => {
    nextHour();
    const { u, secret, c: owner } = await withTwoStep();
    const stolen = (await session(u, secret))!;
    const thief = await pendingSecret(stolen);
    const page = await stolen.get("/console/account/two-step");
    expect(page.body).toContain("A current code from the device you use now");
    // The thief's own app's code, with or without a guessed password or a guessed current code.
    const tries: Record<string, string>[] = [
      { code: code(thief) },
      { code: code(thief), password: "a guessed password" },
      { code: code(thief), password: "a guessed password", current_code: wrongCode(secret) },
      // Even a code of the device in use (looked over the user's shoulder) does not do without the password.
      { code: code(thief), password: "a guessed password", current_code: code(secret) },
      { code: code(thief), password: u.password, current_code: wrongCode(secret) },
    ];
    for (const form of tries) {
      const r = await stolen.post("/console/account/two-step/confirm", form);
      expect(r.status).toBe(200);
      expect(r.body).toContain("The password or a code does not match. Nothing changed.");
    }
    expect((await totp(u.id)).totp_secret).toBe(secret);
    // The owner moves it (password and a current code of the old device): every other session ends.
    const fresh = await pendingSecret(owner);
    const moved = await owner.post("/console/account/two-step/confirm", { code: code(fresh), current_code: code(secret), password: u.password });
    expect(moved.headers.get("location")).toBe("/console/account?done=two-step-moved");
    expect((await totp(u.id)).totp_secret).toBe(fresh);
    expect((await stolen.get("/console/account")).status).toBe(303);
    expect((await owner.get("/console/account")).status).toBe(200);
    expect((await audits(u.id)).slice(-1)).toEqual([{ action: "user.two_step_change", details: { sessions_ended: 1 } }]);
    // The old device's codes no longer sign in; the new one's do.
    nextStep();
    expect(await session(u, secret)).toBeNull();
    expect(await session(u, fresh)).not.toBeNull();
  });

  test("turning off needs the password and a current code; done, it ends the other sessions and is audited", async () => {
    nextHour();
    const { u, secret, c: owner } = await withTwoStep();
    const stolen = (await session(u, secret))!;
    const tries: Record<string, string>[] = [{ code: code(secret) }, { code: code(secret), password: "a guessed password" }, { code: wrongCode(secret), password: u.password }, { password: u.password }];
    for (const form of tries) {
      const r = await stolen.post("/console/account/two-step/off", form);
      expect(r.status).toBe(200);
      expect(r.body).toContain("The password or code does not match: two-step sign-in is still on.");
    }
    expect((await totp(u.id)).totp_secret).toBe(secret);
    const off = await owner.post("/console/account/two-step/off", { code: code(secret), password: u.password });
    expect(off.headers.get("location")).toBe("/console/account?done=two-step-off");
    expect(await totp(u.id)).toEqual({ totp_secret: null, totp_pending: null });
    expect((await stolen.get("/console/account")).status).toBe(303);
    expect((await owner.get("/console/account")).status).toBe(200);
    expect((await audits(u.id)).slice(-1)).toEqual([{ action: "user.two_step_off", details: { sessions_ended: 1 } }]);
  });
});

describe("guesses are limited per user", () => {
  test("thirty guesses at once to turn it off: ten are checked, twenty refused (429); then even the right proof waits for the hour", async () => {
    nextHour();
    const { u, secret, c } = await withTwoStep();
    const guesses = await Promise.all(Array.from({ length: 30 }, (_, i) => c.post("/console/account/two-step/off", { code: String(100000 + i), password: u.password })));
    const statuses = guesses.map((g) => g.status);
    expect([statuses.filter((s) => s === 200).length, statuses.filter((s) => s === 429).length]).toEqual([10, 20]);
    const refused = guesses.find((g) => g.status === 429)!;
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.body).toContain("Too many wrong tries this hour. Nothing changed");
    expect((await c.post("/console/account/two-step/off", { code: code(secret), password: u.password })).status).toBe(429);
    expect((await totp(u.id)).totp_secret).toBe(secret);
    const throttled = (await audits(u.id)).filter((a) => a.details.reason === "throttled");
    expect(throttled.length).toBe(1);
    nextHour();
    expect((await c.post("/console/account/two-step/off", { code: code(secret), password: u.password })).headers.get("location")).toBe("/console/account?done=two-step-off");
  });

  test("a right proof is not counted: twelve moves in an hour all succeed", async () => {
    nextHour();
    const { u, c } = await withTwoStep();
    let secret = (await totp(u.id)).totp_secret!;
    for (let i = 0; i < 12; i++) {
      const fresh = await pendingSecret(c);
      const r = await c.post("/console/account/two-step/confirm", { code: code(fresh), current_code: code(secret), password: u.password });
      expect([i, r.headers.get("location")]).toEqual([i, "/console/account?done=two-step-moved"]);
      secret = fresh;
      nextStep();
    }
  });

  test("sign-in's wrong codes count too: past ten, the right code is refused like a wrong one (401, not a 429 that would confirm the password)", async () => {
    nextHour();
    const { u, secret } = await withTwoStep();
    const login = (c: string) =>
      fetch(`${app.base}/console/login`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": "198.51.100.9" },
        body: new URLSearchParams({ email: u.email, password: u.password, code: c }).toString(),
      }).then((r) => r.status);
    for (let i = 0; i < 10; i++) expect(await login(wrongCode(secret))).toBe(401);
    expect(await login(code(secret))).toBe(401);
    const rows = await db.sql`select action, details from audit_log where target = ${"user:" + u.id} and action like 'session.sign_in_%' order by id`;
    expect(rows.filter((r) => r.action === "session.sign_in_failed").every((r) => r.details.reason === "code")).toBe(true);
    expect(rows.filter((r) => r.action === "session.sign_in_throttled").map((r) => r.details)).toEqual([{ limit: "two_step_code" }]);
    nextHour();
    expect(await login(code(secret))).toBe(303);
  });
});
