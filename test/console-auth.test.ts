// The console's door: sign-in (the same answer for an unknown account and a wrong password),
// sessions (cookie attributes, idle and absolute ends, revocation, a password change), CSRF on
// every state-changing request, invite links (the token traded for a cookie at the first GET, a
// new invite revoking older ones), the CLI's users commands and console users in the provisioning
// file. Sign-in's limits, its bound on password checks and the Host check: console-sign-in.test.ts;
// two-step changes: console-two-step.test.ts.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Io } from "../src/args";
import { usersCommand } from "../src/console/command";
import { ABSOLUTE_MS, IDLE_MS, sessionCookie } from "../src/console/sessions";
import { applyProvisioning } from "../src/provision/service";
import { parseProvisioning, ProvisioningError } from "../src/provision/validate";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { makeUser, sessionClient, signIn, type ConsoleClient, type MadeUser } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeLead, seedWorld } from "./harness/factory";

// Every sign-in verifies an Argon2id hash (64 MiB, on purpose slow): seconds on a loaded machine.
setDefaultTimeout(60_000);

let db: TestDatabase;
let app: TestApp;
const clock = new ManualClock(Date.parse("2026-11-25T15:00:00Z"));
let manager: MadeUser;
let agent: MadeUser;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url, {}, { clock });
  manager = await makeUser(db.sql, { role: "manager", orgId: 1 });
  agent = await makeUser(db.sql, { role: "agent", orgId: 1, id: "agent7" });
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
}, 30_000);

function captureIo(input = ""): Io & { out: (t: string) => void; text: () => string; errText: () => string } {
  let out = "";
  let err = "";
  return {
    out: (t: string) => void (out += t),
    err: (t: string) => void (err += t),
    readInput: async () => input,
    flush: async () => {},
    text: () => out,
    errText: () => err,
  } as never;
}

const form = (fields: Record<string, string>) => ({
  method: "POST",
  redirect: "manual" as const,
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(fields).toString(),
});

describe("entry and sign-in", () => {
  test("/console leads to the inbox; a page without a session to the sign-in page with next", async () => {
    const home = await fetch(`${app.base}/console`, { redirect: "manual" });
    expect(home.status).toBe(303);
    expect(home.headers.get("location")).toBe("/console/inbox");
    const page = await fetch(`${app.base}/console/account?x=1`, { redirect: "manual" });
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe("/console/login?next=%2Fconsole%2Faccount%3Fx%3D1");
    // htmx asking for a part of a page (older entries) is told to send the tab to sign in, back to
    // the page it shows, instead of getting the sign-in page to put inside that page.
    const part = (headers: Record<string, string>) => fetch(`${app.base}/console/leads/1/timeline/older?before=1`, { redirect: "manual", headers });
    const hx = await part({ "hx-request": "true", "hx-current-url": `${app.base}/console/leads/1?before=5` });
    expect([hx.status, hx.headers.get("hx-redirect"), await hx.text()]).toEqual([401, "/console/login?next=%2Fconsole%2Fleads%2F1%3Fbefore%3D5", ""]);
    const elsewhere = await part({ "hx-request": "true", "hx-current-url": "https://evil.example/phish" });
    expect(elsewhere.headers.get("hx-redirect")).toBe("/console/login?next=%2Fconsole%2Fleads%2F1%2Ftimeline%2Folder%3Fbefore%3D1");
    const plain = await part({});
    expect([plain.status, plain.headers.get("hx-redirect")]).toEqual([303, null]);
    const login = await fetch(`${app.base}/console/login`);
    expect(login.status).toBe(200);
    expect(login.headers.get("content-security-policy")).toContain("default-src 'none'; script-src 'self'");
    const html = await login.text();
    expect(html).toContain('<label for="email">Email</label>');
    expect(html).not.toMatch(/<script>|style="/);
  });

  test("an unknown account and a wrong password get the same answer", async () => {
    const wrong = await fetch(`${app.base}/console/login`, form({ email: manager.email, password: "not the password at all" }));
    const unknown = await fetch(`${app.base}/console/login`, form({ email: "nobody@example.test", password: "not the password at all" }));
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.headers.get("set-cookie")).toBeNull();
    const a = (await wrong.text()).replace(manager.email, "EMAIL");
    const b = (await unknown.text()).replace("nobody@example.test", "EMAIL");
    expect(a).toBe(b);
  });

  test("signing in sets an HttpOnly, SameSite=Lax session cookie and goes to next (a console path only)", async () => {
    const res = await fetch(`${app.base}/console/login`, form({ email: manager.email.toUpperCase(), password: manager.password, next: "/console/account" }));
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/console/account");
    const cookie = res.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^leadline_session=[A-Za-z0-9_-]{43}; Path=\/console; HttpOnly; SameSite=Lax; Max-Age=\d+$/);
    expect(sessionCookie("t", true)).toContain("; Secure");
    for (const next of ["//evil.example/", "https://evil.example/", "/\\evil.example", "/console/../x y"]) {
      const r = await fetch(`${app.base}/console/login`, form({ email: manager.email, password: manager.password, next }));
      expect(r.headers.get("location")).toBe("/console");
    }
    const [row] = await db.sql`select action, org_id, actor_id, address from audit_log where action = 'session.sign_in' order by id desc limit 1`;
    expect(row).toMatchObject({ action: "session.sign_in", org_id: 1, actor_id: manager.id });
    expect(row.address).toMatch(/^[0-9a-f]{64}$/);
  });

  test("a form posted from another site does not sign in", async () => {
    const r = await fetch(`${app.base}/console/login`, { ...form({ email: manager.email, password: manager.password }), headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://evil.example" } });
    expect(r.status).toBe(403);
    expect(r.headers.get("set-cookie")).toBeNull();
  });
});

describe("CSRF", () => {
  test("a state-changing request needs the session's token and the console's origin", async () => {
    const c = await signIn(app.base, manager.email, manager.password);
    const path = "/console/account/sign-out-everywhere";
    expect((await c.post(path, { _csrf: "" })).status).toBe(403);
    expect((await c.post(path, { _csrf: c.csrf.slice(1) + "x" })).status).toBe(403);
    expect((await c.post(path, {}, { origin: "https://evil.example" })).status).toBe(403);
    expect((await c.post(path, {}, { "sec-fetch-site": "cross-site" })).status).toBe(403);
    expect((await c.get("/console/account")).status).toBe(200);
    const ok = await c.post(path, {}, { origin: app.base });
    expect(ok.status).toBe(303);
    expect((await c.get("/console/account")).status).toBe(303);
  });
});

describe("sessions end", () => {
  test("after two idle hours, and twelve hours after sign-in however busy", async () => {
    const c = await signIn(app.base, agent.email, agent.password);
    clock.advance(IDLE_MS - 120_000);
    expect((await c.get("/console/account")).status).toBe(200);
    clock.advance(IDLE_MS - 120_000);
    expect((await c.get("/console/account")).status).toBe(200);
    clock.advance(IDLE_MS + 1000);
    expect((await c.get("/console/account")).status).toBe(303);
    const d = await signIn(app.base, agent.email, agent.password);
    for (let t = 0; t < ABSOLUTE_MS; t += IDLE_MS / 2) {
      expect((await d.get("/console/account")).status).toBe(200);
      clock.advance(IDLE_MS / 2);
    }
    expect((await d.get("/console/account")).status).toBe(303);
  });

  test("the console's own refreshes (X-Leadline-Poll) do not keep a session alive; an ended one is told so", async () => {
    const lead = await makeLead(db.sql, { phone: "5125550142", first: "Rosa" });
    const poll = { "x-leadline-poll": "1" };
    const inbox = (c: ConsoleClient) =>
      c.get("/console/inbox?view=open", { ...poll, "hx-request": "true", "hx-current-url": `${app.base}/console/inbox?view=open` });
    const timeline = `/console/api/leads/${lead}/timeline`;
    const c = await signIn(app.base, agent.email, agent.password);
    // Polled all along, as an open inbox and lead page do: every answer served, the idle time kept.
    for (let t = 0; t < IDLE_MS - 120_000; t += 600_000) {
      expect((await inbox(c)).status).toBe(200);
      expect((await c.get(timeline, poll)).status).toBe(200);
      clock.advance(600_000);
    }
    clock.advance(120_000 + 1000);
    // Two idle hours since the last request of the person: the inbox's refresh is sent to sign-in, back to the page it shows.
    const ended = await inbox(c);
    expect(ended.status).toBe(401);
    expect(ended.headers.get("hx-redirect")).toBe(`/console/login?next=${encodeURIComponent("/console/inbox?view=open")}`);
    const json = await c.get(timeline, poll);
    expect([json.status, json.body]).toEqual([401, { ok: false, error: "unauthenticated" }]);
    expect((await c.get("/console/account")).status).toBe(303);
    // The same requests without the header are the person's: they keep the session.
    const d = await signIn(app.base, agent.email, agent.password);
    for (let t = 0; t < IDLE_MS + 600_000; t += 600_000) {
      expect((await d.get(timeline)).status).toBe(200);
      clock.advance(600_000);
    }
    expect((await d.get("/console/account")).status).toBe(200);
  });

  test("users revoke-sessions signs the user out everywhere; a password change too", async () => {
    const a = await signIn(app.base, agent.email, agent.password);
    const b = await signIn(app.base, agent.email, agent.password);
    const io = captureIo();
    expect(await usersCommand(db.sql, ["revoke-sessions", "--email", agent.email], { baseUrl: app.base }, io, clock)).toBe(0);
    expect(io.text()).toMatch(/^ended \d+ sessions\n$/);
    expect((await a.get("/console/account")).status).toBe(303);
    expect((await b.get("/console/account")).status).toBe(303);
    const c = await signIn(app.base, agent.email, agent.password);
    const newPassword = "a brand new pass phrase";
    expect(await usersCommand(db.sql, ["passwd", "--email", agent.email], { baseUrl: app.base }, captureIo(newPassword + "\n"), clock)).toBe(0);
    expect((await c.get("/console/account")).status).toBe(303);
    await expect(signIn(app.base, agent.email, agent.password)).rejects.toThrow();
    await signIn(app.base, agent.email, newPassword);
    agent.password = newPassword;
  });

  test("a forged or stale cookie is no session", async () => {
    const forged = sessionClient(app.base, "leadline_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "x");
    expect((await forged.get("/console/account")).status).toBe(303);
    const json = await call(app.base, "/console/account", { headers: { cookie: "leadline_session=%00%ff" }, redirect: "manual" });
    expect(json.status).toBe(303);
  });
});

describe("invite links", () => {
  /** Opens a link as a browser would: the 303 on to the clean address and the cookie it sets. */
  const open = async (url: string) => {
    const r = await fetch(url, { redirect: "manual" });
    const set = r.headers.get("set-cookie");
    return { status: r.status, location: r.headers.get("location"), set, cookie: set?.split(";")[0] ?? "" };
  };
  const post = (cookie: string, fields: Record<string, string>) => {
    const f = form(fields);
    return fetch(`${app.base}/console/invite`, { ...f, headers: { ...f.headers, cookie } });
  };

  test("users create prints a one-time link; the first GET trades its token for a cookie and a clean address; the form sets the password once", async () => {
    const io = captureIo();
    expect(await usersCommand(db.sql, ["create", "--email", "Newbie@Example.test", "--role", "manager", "--org", "2", "--name", "New Bie"], { baseUrl: app.base }, io, clock)).toBe(0);
    const url = io.text().trim();
    expect(url).toMatch(new RegExp(`^${app.base}/console/invite/[A-Za-z0-9_-]{43}$`));
    expect(io.errText()).toContain("created manager newbie@example.test (user newbie, org 2)");
    const linkToken = url.slice(url.lastIndexOf("/") + 1);
    const opened = await open(url);
    expect(opened.status).toBe(303);
    expect(opened.location).toBe("/console/invite");
    expect(opened.set).toMatch(/^leadline_invite=[A-Za-z0-9_-]{43}; Path=\/console\/invite; HttpOnly; SameSite=Lax; Max-Age=1800$/);
    expect(opened.cookie).not.toContain(linkToken);
    // Spent: whoever reads the link in an access log finds nothing behind it.
    expect((await open(url)).status).toBe(404);
    const page = await fetch(`${app.base}/console/invite`, { headers: { cookie: opened.cookie } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<form method="post" action="/console/invite">');
    expect(html).toContain("newbie@example.test");
    expect(html).not.toContain(linkToken);
    expect((await fetch(`${app.base}/console/invite`)).status).toBe(404);
    const short = await post(opened.cookie, { password: "short", confirm: "short" });
    expect(short.status).toBe(422);
    expect(await short.text()).toContain("at least 12 characters");
    expect((await post(opened.cookie, { password: "long enough password", confirm: "long enough passw0rd" })).status).toBe(422);
    expect((await post("", { password: "long enough password", confirm: "long enough password" })).status).toBe(404);
    const set = await post(opened.cookie, { password: "long enough password", confirm: "long enough password" });
    expect(set.status).toBe(303);
    expect(set.headers.get("location")).toBe("/console/login?done=password");
    expect(set.headers.get("set-cookie")).toBe("leadline_invite=; Path=/console/invite; HttpOnly; SameSite=Lax; Max-Age=0");
    // Used up: the same cookie neither shows the form nor sets a password again.
    expect((await fetch(`${app.base}/console/invite`, { headers: { cookie: opened.cookie } })).status).toBe(404);
    expect((await post(opened.cookie, { password: "another long password", confirm: "another long password" })).status).toBe(404);
    await signIn(app.base, "newbie@example.test", "long enough password");
  });

  test("a new invite revokes the user's older links, opened or not; two opening one link at once: one gets the form", async () => {
    const invite = async () => {
      const io = captureIo();
      await usersCommand(db.sql, ["invite", "--email", agent.email], { baseUrl: app.base }, io, clock);
      expect(io.errText()).toContain("older links no longer work");
      return io.text().trim();
    };
    const first = await invite();
    const second = await invite();
    expect((await open(first)).status).toBe(404);
    const secondOpened = await open(second);
    expect(secondOpened.status).toBe(303);
    await invite();
    // The form of the opened link stops working too.
    expect((await fetch(`${app.base}/console/invite`, { headers: { cookie: secondOpened.cookie } })).status).toBe(404);
    expect((await post(secondOpened.cookie, { password: "a password nobody set", confirm: "a password nobody set" })).status).toBe(404);
    const race = await invite();
    const both = await Promise.all([open(race), open(race)]);
    expect(both.map((o) => o.status).sort()).toEqual([303, 404]);
    await signIn(app.base, agent.email, agent.password);
  });

  test("an opened link's form works 30 minutes; an unopened link 72 hours; refused arguments name the problem", async () => {
    const link = async () => {
      const io = captureIo();
      await usersCommand(db.sql, ["invite", "--email", manager.email], { baseUrl: app.base }, io, clock);
      return io.text().trim();
    };
    const opened = await open(await link());
    clock.advance(30 * 60_000 - 1000);
    expect((await fetch(`${app.base}/console/invite`, { headers: { cookie: opened.cookie } })).status).toBe(200);
    clock.advance(2000);
    expect((await fetch(`${app.base}/console/invite`, { headers: { cookie: opened.cookie } })).status).toBe(404);
    const late = await link();
    clock.advance(72 * 3_600_000 + 1000);
    expect((await open(late)).status).toBe(404);
    const bad = async (args: string[]) => {
      const e = captureIo();
      await expect(usersCommand(db.sql, args, { baseUrl: app.base }, e, clock)).rejects.toThrow();
    };
    await bad(["create", "--email", "x@example.test", "--role", "manager"]);
    await bad(["create", "--email", "x@example.test", "--role", "admin", "--org", "1"]);
    await bad(["create", "--email", "not-an-email", "--role", "agent", "--org", "1"]);
    await bad(["create", "--email", manager.email, "--role", "agent", "--org", "1"]);
    await bad(["create", "--email", "y@example.test", "--role", "agent", "--org", "99"]);
    await bad(["create", "--email", "y@example.test", "--role", "agent", "--org", "1", "--id", "agent9"]);
    await bad(["invite", "--email", "nobody@example.test"]);
    const list = captureIo();
    await usersCommand(db.sql, ["list", "--json"], { baseUrl: app.base }, list, clock);
    const users = JSON.parse(list.text());
    expect(users.find((u: { email: string }) => u.email === manager.email)).toMatchObject({ role: "manager", org_id: 1, password_set: true });
  });
});

describe("the provisioning file", () => {
  test("users with an email and a role can sign in once invited; roles are checked against org_id", async () => {
    const file = parseProvisioning(
      JSON.stringify({ users: [{ id: "prov-mgr", org_id: 2, name: "Pat", email: "Pat@Example.test", role: "manager" }, { id: "agent9", org_id: 2 }] }),
    );
    await applyProvisioning(db.sql, file, { now: new Date(clock.now()), secretKey: null });
    const [row] = await db.sql`select email, role, org_id from users where id = 'prov-mgr'`;
    expect(row).toEqual({ email: "pat@example.test", role: "manager", org_id: 2 });
    const bad = (users: unknown[]) => expect(applyProvisioning(db.sql, parseProvisioning(JSON.stringify({ users })), { now: new Date(clock.now()), secretKey: null })).rejects.toThrow(ProvisioningError);
    await bad([{ id: "a", org_id: null, email: "a@example.test", role: "manager" }]);
    await bad([{ id: "a", org_id: 1, email: "a@example.test", role: "admin" }]);
    await bad([{ id: "a", org_id: 1, role: "agent" }]);
    await bad([{ id: "a", org_id: 1, email: "a@x.test", role: "agent" }, { id: "b", org_id: 1, email: "A@x.test", role: "agent" }]);
  });
});

describe("pruning", () => {
  test("ended and expired sessions and old invites are deleted a day later; live ones stay", async () => {
    const { pruneSessions } = await import("../src/console/sessions");
    const live = await signIn(app.base, manager.email, manager.password);
    const [{ before }] = await db.sql`select count(*)::int as before from console_sessions`;
    expect(before).toBeGreaterThan(1);
    await pruneSessions(db.sql, clock.now());
    const [{ after }] = await db.sql`select count(*)::int as after from console_sessions`;
    expect(after).toBeLessThan(before);
    expect((await live.get("/console/account")).status).toBe(200);
    await pruneSessions(db.sql, clock.now() + ABSOLUTE_MS + 25 * 3_600_000);
    const [{ n }] = await db.sql`select count(*)::int as n from console_sessions`;
    const [{ i }] = await db.sql`select count(*)::int as i from console_invites`;
    expect([n, i]).toEqual([0, 0]);
  });
});

describe("two-step sign-in", () => {
  test("RFC 6238's test vector; base32 both ways", async () => {
    const { codeAt, fromBase32, toBase32 } = await import("../src/console/totp");
    // RFC 6238 appendix B, SHA-1 key "12345678901234567890": T = 59 s → 94287082 (8 digits; 6 are 287082).
    const secret = toBase32(Buffer.from("12345678901234567890"));
    expect(fromBase32(secret).toString()).toBe("12345678901234567890");
    expect(codeAt(secret, 1)).toBe("287082");
    expect(codeAt(secret, Math.floor(1111111109 / 30))).toBe("081804");
  });

  test("set up from the account page, then the sign-in needs a fresh code; users totp-off turns it off", async () => {
    const { codeAt, stepOf } = await import("../src/console/totp");
    const u = await makeUser(db.sql, { role: "agent", orgId: 1 });
    const c = await signIn(app.base, u.email, u.password);
    expect((await c.post("/console/account/two-step/setup")).headers.get("location")).toBe("/console/account/two-step");
    const setup = await c.get("/console/account/two-step");
    expect(setup.status).toBe(200);
    const secret = /otpauth:\/\/totp\/Leadline:[^?]+\?secret=([A-Z2-7]+)&amp;/.exec(setup.body)![1]!;
    const wrong = await c.post("/console/account/two-step/confirm", { code: "000000" === codeAt(secret, stepOf(clock.now())) ? "111111" : "000000", password: u.password });
    expect(wrong.status).toBe(200);
    expect(wrong.body).toContain("The password or a code does not match");
    const on = await c.post("/console/account/two-step/confirm", { code: codeAt(secret, stepOf(clock.now())), password: u.password });
    expect(on.headers.get("location")).toBe("/console/account?done=two-step-on");
    const [row] = await db.sql`select totp_secret, totp_pending from users where id = ${u.id}`;
    expect(row.totp_pending).toBeNull();
    expect(row.totp_secret).toBe(secret); // no LEADLINE_SECRET_KEY in this app: stored as given
    const login = (code?: string) =>
      fetch(`${app.base}/console/login`, form({ email: u.email, password: u.password, ...(code === undefined ? {} : { code }) })).then((r) => r.status);
    // The password alone, a wrong code, and the code just used to turn it on are refused alike.
    expect(await login()).toBe(401);
    expect(await login("123456")).toBe(401);
    expect(await login(codeAt(secret, stepOf(clock.now())))).toBe(401);
    clock.advance(30_000);
    const fresh = codeAt(secret, stepOf(clock.now()));
    expect(await login(fresh.slice(0, 3) + " " + fresh.slice(3))).toBe(303);
    expect(await login(fresh)).toBe(401);
    const [audited] = await db.sql`select count(*)::int as n from audit_log where action = 'user.two_step_on' and actor_id = ${u.id}`;
    expect(audited.n).toBe(1);
    expect(await usersCommand(db.sql, ["totp-off", "--email", u.email], { baseUrl: app.base }, captureIo(), clock)).toBe(0);
    expect(await login()).toBe(303);
  });
});

describe("two-step secrets at rest", () => {
  test("sealed under LEADLINE_SECRET_KEY like other stored secrets, and re-sealed by secrets rotate", async () => {
    const { randomBytes } = await import("node:crypto");
    const { openSecret, seal, sealedBy, keyId } = await import("../src/secrets/seal");
    const { rotateSecrets, checkStoredSecrets } = await import("../src/secrets/stored");
    const oldKey = randomBytes(32);
    const newKey = randomBytes(32);
    const u = await makeUser(db.sql, { role: "agent", orgId: 2 });
    await db.sql`update users set totp_secret = ${seal(oldKey, "JBSWY3DPEHPK3PXP")}, totp_pending = ${seal(oldKey, "KRSXG5CTMVRXEZLU")} where id = ${u.id}`;
    // Every other stored secret of this database is in clear: they are sealed on the way.
    await rotateSecrets(db.sql, newKey, oldKey);
    const [row] = await db.sql`select totp_secret, totp_pending from users where id = ${u.id}`;
    expect(sealedBy(row.totp_secret)).toBe(keyId(newKey));
    expect(openSecret(newKey, row.totp_secret)).toBe("JBSWY3DPEHPK3PXP");
    expect(openSecret(newKey, row.totp_pending)).toBe("KRSXG5CTMVRXEZLU");
    await expect(checkStoredSecrets(db.sql, oldKey)).rejects.toThrow(/two-step sign-in secret/);
    await db.sql`update users set totp_secret = null, totp_pending = null where id = ${u.id}`;
  });
});
