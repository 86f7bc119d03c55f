// The console's settings pages through HTTP, across two organizations: each form goes through the
// provisioning service (validation, merge, audit with previous and new values, secrets as
// "changed"), secrets are write-only (set / not set, replaced when given, never displayed), a
// manager of one organization neither reads nor changes another's, and a refusal names nothing of
// the other organization.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";
import { WebhookReceiver } from "./harness/webhook-receiver";
import { signature } from "../src/events/sign";

setDefaultTimeout(60_000);

let db: TestDatabase;
let app: TestApp;
let acme: ConsoleClient;
let bolt: ConsoleClient;
let agent: ConsoleClient;
let admin: ConsoleClient;
let acmeId = "";
let rx: WebhookReceiver;

const TOKEN = "tok-acme-very-secret-1";
const SMTP = "smtp://acme:pw-acme-very-secret@mail.example.test:587";

const orgRow = async (id: number) => (await db.sql<{ name: string; timezone: string; quiet_start: string | null; quiet_end: string | null; consent: string; sms: Record<string, string> | null; email: Record<string, string> | null }[]>`select * from orgs where id = ${id}`)[0]!;
const audits = (target: string) => db.sql<{ action: string; actor_id: string; org_id: number | null; details: { changes: Record<string, unknown> } }[]>`select * from audit_log where target = ${target} order by id`;

/** The form as the page shows it, posted back with `changes`. */
const acmeForm = (changes: Record<string, string> = {}) => ({
  name: "Acme",
  company: "Acme Roofing LLC",
  timezone: "America/New_York",
  quiet_start: "",
  quiet_end: "",
  consent: "implied",
  sms_base_url: "https://api.twilio.example",
  sms_account_sid: "AC123",
  sms_auth_token: "",
  sms_from: "5550001111",
  email_smtp_url: "",
  email_from: "team@acme.example",
  ...changes,
});

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await db.sql`update orgs set sms = ${db.sql.json({ base_url: "https://api.twilio.example", account_sid: "AC123", auth_token: TOKEN, from: "5550001111" })},
                email = ${db.sql.json({ smtp_url: SMTP, from: "team@acme.example" })} where id = 1`;
  rx = await WebhookReceiver.start();
  app = await startApp(db.url, { WEBHOOK_ALLOW_PRIVATE: "true" });
  const [m, b, a, s] = await Promise.all([
    makeUser(db.sql, { role: "manager", orgId: 1 }),
    makeUser(db.sql, { role: "manager", orgId: 2 }),
    makeUser(db.sql, { role: "agent", orgId: 1 }),
    makeUser(db.sql, { role: "admin", orgId: null }),
  ]);
  acmeId = m.id;
  [acme, bolt, agent, admin] = await Promise.all([
    signIn(app.base, m.email, m.password),
    signIn(app.base, b.email, b.password),
    signIn(app.base, a.email, a.password),
    signIn(app.base, s.email, s.password),
  ]);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await rx?.stop();
  await db?.drop();
});

describe("organization settings", () => {
  test("agents get the 404 page; nothing is written", async () => {
    expect((await agent.get("/console/settings/org")).status).toBe(404);
    expect((await agent.post("/console/settings/org/1", acmeForm({ name: "Agent was here" }))).status).toBe(404);
    expect((await orgRow(1)).name).toBe("Acme");
  });

  test("/console/settings, as people type it, is the organization's settings for managers and admins; the 404 page for agents", async () => {
    for (const who of [acme, admin]) {
      const res = await who.get("/console/settings");
      expect([res.status, res.headers.get("location")]).toEqual([303, "/console/settings/org"]);
    }
    expect((await agent.get("/console/settings")).status).toBe(404);
  });

  test("a manager sees their organization's form; secrets only as set, never their values", async () => {
    const page = await acme.get("/console/settings/org");
    expect(page.status).toBe(200);
    const body = page.body as string;
    expect(body).toContain('value="Acme"');
    expect(body).toContain('value="AC123"');
    expect(body).toContain("team@acme.example");
    expect(body).not.toContain(TOKEN);
    expect(body).not.toContain("pw-acme-very-secret");
    expect(body).not.toContain("mail.example.test");
    expect((body.match(/badge badge-ok">set</g) ?? []).length).toBe(2);
    expect(body).not.toContain("Bolt");
    // Billing is an admin's: a manager has no billing fields.
    expect(body).not.toContain('name="billing_status"');
    expect(body).toContain("Settings");
  });

  test("a manager of another organization neither reads nor changes it, and the refusal names nothing of it", async () => {
    // `org` is an admin's picker: a manager sees their own.
    const page = await bolt.get("/console/settings/org?org=1");
    expect(page.status).toBe(200);
    expect(page.body).toContain('value="Bolt"');
    expect(page.body).not.toContain("Acme");
    const r = await bolt.post("/console/settings/org/1", acmeForm({ name: "Taken over", sms_auth_token: "bolt-token" }));
    expect(r.status).toBe(404);
    expect(r.body).not.toContain("Acme");
    expect(r.body).not.toContain("Taken over");
    const o = await orgRow(1);
    expect(o.name).toBe("Acme");
    expect(o.sms!.auth_token).toBe(TOKEN);
    // Nor a missing one: provisioning would create it.
    expect((await bolt.post("/console/settings/org/77", acmeForm({ name: "New" }))).status).toBe(404);
    expect((await admin.post("/console/settings/org/77", acmeForm({ name: "New" }))).status).toBe(404);
    expect(await db.sql`select 1 from orgs where id = 77`).toHaveLength(0);
    expect(await audits("org:1")).toHaveLength(0);
  });

  test("a save goes through provisioning: an empty secret keeps it, a given one replaces it; audited with previous and new values, the secret as changed", async () => {
    const r = await acme.post("/console/settings/org/1", acmeForm({ name: "Acme Roofing", timezone: "America/Chicago", quiet_start: "21:00", quiet_end: "08:00", consent: "explicit" }));
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe("/console/settings/org?done=saved");
    let o = await orgRow(1);
    expect([o.name, o.timezone, o.quiet_start, o.quiet_end, o.consent]).toEqual(["Acme Roofing", "America/Chicago", "21:00", "08:00", "explicit"]);
    expect(o.sms!.auth_token).toBe(TOKEN);
    expect(o.email!.smtp_url).toBe(SMTP);
    let [entry] = await audits("org:1");
    expect(entry!.action).toBe("org.update");
    expect(entry!.org_id).toBe(1);
    expect(entry!.details.changes.name).toEqual({ from: "Acme", to: "Acme Roofing" });
    expect(entry!.details.changes.quiet_hours).toEqual({ from: null, to: { start: "21:00", end: "08:00" } });
    expect(Object.keys(entry!.details.changes).some((k) => k.startsWith("sms"))).toBe(false);

    const replaced = await acme.post("/console/settings/org/1", acmeForm({ name: "Acme Roofing", timezone: "America/Chicago", quiet_start: "21:00", quiet_end: "08:00", consent: "explicit", sms_auth_token: "new-token-2" }));
    expect(replaced.status).toBe(303);
    o = await orgRow(1);
    expect(o.sms!.auth_token).toBe("new-token-2");
    entry = (await audits("org:1"))[1];
    expect(entry!.details.changes).toEqual({ "sms.auth_token": "changed" });
    expect(JSON.stringify(await audits("org:1"))).not.toContain("new-token-2");

    // The same form again changes nothing and says so.
    const again = await acme.post("/console/settings/org/1", acmeForm({ name: "Acme Roofing", timezone: "America/Chicago", quiet_start: "21:00", quiet_end: "08:00", consent: "explicit" }));
    expect(again.headers.get("location")).toBe("/console/settings/org?done=unchanged");
    expect(await audits("org:1")).toHaveLength(2);
  });

  test("bad input answers the form with the provisioning problems, never a 500, and writes nothing", async () => {
    const before = await orgRow(1);
    const cases: [Record<string, string>, string][] = [
      [{ timezone: "Mars/Olympus" }, "timezone"],
      [{ name: "" }, "name"],
      [{ quiet_start: "21:00" }, "quiet_hours.end"],
      [{ quiet_start: "25:00", quiet_end: "08:00" }, "quiet_hours.start"],
      [{ consent: "whatever" }, "consent"],
      [{ sms_base_url: "ftp://nope" }, "sms.base_url"],
      [{ name: "nul\u0000" }, ""],
    ];
    for (const [change, field] of cases) {
      const r = await acme.post("/console/settings/org/1", acmeForm(change));
      expect([422]).toContain(r.status);
      if (field) expect(r.body).toContain(field);
      expect(r.body).not.toContain(TOKEN);
    }
    // A new sender needs every field: Bolt has none stored.
    const partial = await bolt.post("/console/settings/org/2", { name: "Bolt", timezone: "America/New_York", consent: "implied", sms_from: "5550002222" });
    expect(partial.status).toBe(422);
    expect(partial.body).toContain("sms.auth_token: required to set up sms");
    expect(await orgRow(1)).toEqual(before);
    expect((await orgRow(2)).sms).toBeNull();
  });

  test("billing is written for admins only; a manager's billing fields are ignored", async () => {
    const r = await bolt.post("/console/settings/org/2", { name: "Bolt", timezone: "America/New_York", consent: "implied", billing_status: "active", billing_subscription: "active" });
    expect(r.status).toBe(303);
    expect(await db.sql`select 1 from org_billing where org_id = 2`).toHaveLength(0);
    const page = await admin.get("/console/settings/org?org=2");
    expect(page.body).toContain('name="billing_status"');
    expect(page.body).toContain('value="Bolt"');
    const set = await admin.post("/console/settings/org/2", { name: "Bolt", timezone: "America/New_York", consent: "implied", billing_status: "active", billing_subscription: "none" });
    expect(set.status).toBe(303);
    expect(set.headers.get("location")).toBe("/console/settings/org?org=2&done=saved");
    const [b] = await db.sql`select status, subscription from org_billing where org_id = 2`;
    expect(b).toEqual({ status: "active", subscription: "none" });
    const [entry] = await audits("org:2").then((rows) => rows.filter((x) => x.details.changes["billing.status"]));
    expect(entry!.details.changes["billing.status"]).toEqual({ from: null, to: "active" });
  });

  test("the form needs the session's CSRF token", async () => {
    const r = await acme.post("/console/settings/org/1", { ...acmeForm({ name: "Forged" }), _csrf: "nope" });
    expect(r.status).toBe(403);
    expect((await orgRow(1)).name).not.toBe("Forged");
  });
});

describe("users", () => {
  const linkOf = (body: string) => /<code id="invite-link">([^<]+)<\/code>/.exec(body)?.[1];
  /** The link as the app under test serves it (its BASE_URL is not the test server's address). */
  const opened = (link: string) => fetch(app.base + new URL(link).pathname, { redirect: "manual" });

  test("agents get the 404 page for every users route", async () => {
    expect((await agent.get("/console/settings/users")).status).toBe(404);
    expect((await agent.post("/console/settings/users", { email: "x@example.test", role: "agent" })).status).toBe(404);
    expect(await db.sql`select 1 from users where email = 'x@example.test'`).toHaveLength(0);
  });

  test("a manager invites into their organization: the link is shown once, works, and is audited", async () => {
    const r = await acme.post("/console/settings/users", { email: "New.Agent@acme.example", name: "Nia", role: "agent" });
    expect(r.status).toBe(200);
    expect(r.headers.get("cache-control")).toContain("no-store");
    const link = linkOf(r.body as string)!;
    expect(new URL(link).pathname).toMatch(/^\/console\/invite\/[A-Za-z0-9_-]{43}$/);
    const [u] = await db.sql<{ id: string; org_id: string; role: string }[]>`select id, org_id, role from users where email = 'new.agent@acme.example'`;
    expect([Number(u!.org_id), u!.role]).toEqual([1, "agent"]);
    expect(await db.sql`select 1 from audit_log where action = 'user.create' and target = ${`user:${u!.id}`} and org_id = 1`).toHaveLength(1);
    // Never again on the page.
    expect((await acme.get("/console/settings/users")).body).not.toContain(link);
    // The link sets the password (the invite flow of src/console/invite.ts).
    const open = await opened(link);
    expect(open.status).toBe(303);
    // A manager cannot make an admin, nor invite into another organization.
    const admin1 = await acme.post("/console/settings/users", { email: "boss@acme.example", role: "admin" });
    expect(admin1.status).toBe(422);
    const other = await acme.post("/console/settings/users", { email: "spy@bolt.example", role: "agent", org: "2" });
    expect(other.status).toBe(200);
    const [spy] = await db.sql<{ org_id: string }[]>`select org_id from users where email = 'spy@bolt.example'`;
    expect(Number(spy!.org_id)).toBe(1);
    expect(await db.sql`select 1 from users where email = 'boss@acme.example'`).toHaveLength(0);
    // A taken email: the CLI's refusal, not a 500.
    const taken = await acme.post("/console/settings/users", { email: "new.agent@acme.example", role: "agent" });
    expect(taken.status).toBe(422);
    expect(taken.body).toContain("already user");
  });

  test("a manager of another organization neither lists nor acts on this one's users; the 404 names nothing", async () => {
    const [u] = await db.sql<{ id: string }[]>`select id from users where email = 'new.agent@acme.example'`;
    const list = await bolt.get("/console/settings/users");
    expect(list.body).not.toContain("acme.example");
    for (const [path, form] of [
      [`/console/settings/users/${u!.id}/role`, { role: "manager" }],
      [`/console/settings/users/${u!.id}/invite`, {}],
      [`/console/settings/users/${u!.id}/two-step`, {}],
      [`/console/settings/users/${u!.id}/disable`, { confirm: "1" }],
    ] as const) {
      const r = await bolt.post(path, form);
      expect(r.status).toBe(404);
      expect(r.body).not.toContain("acme.example");
    }
    expect((await bolt.get(`/console/settings/users/${u!.id}/disable`)).status).toBe(404);
    const [after] = await db.sql`select role, disabled_at from users where id = ${u!.id}`;
    expect(after).toEqual({ role: "agent", disabled_at: null });
  });

  test("a role change goes through provisioning and is audited with previous and new values", async () => {
    const [u] = await db.sql<{ id: string }[]>`select id from users where email = 'new.agent@acme.example'`;
    const r = await acme.post(`/console/settings/users/${u!.id}/role`, { role: "manager" });
    expect(r.status).toBe(303);
    const [after] = await db.sql`select role from users where id = ${u!.id}`;
    expect(after!.role).toBe("manager");
    const [entry] = await db.sql<{ details: { changes: Record<string, unknown> } }[]>`select details from audit_log where action = 'user.update' and target = ${`user:${u!.id}`}`;
    expect(entry!.details.changes.role).toEqual({ from: "agent", to: "manager" });
    expect((await acme.post(`/console/settings/users/${u!.id}/role`, { role: "admin" })).status).toBe(422);
    expect((await acme.post(`/console/settings/users/${u!.id}/role`, { role: "agent" })).status).toBe(303);
  });

  test("disabling is confirmed on the server: without the box nothing happens; with it sessions end and bound keys are revoked", async () => {
    const victim = await makeUser(db.sql, { role: "agent", orgId: 1, id: "agent7" });
    const session = await signIn(app.base, victim.email, victim.password);
    const key = await makeKey(db.sql, { scopes: ["cti"], org: 1, agent: "agent7", name: "dialer" });
    const confirm = await acme.get("/console/settings/users/agent7/disable");
    expect(confirm.status).toBe(200);
    expect(confirm.body).toContain('name="confirm"');
    const stray = await acme.post("/console/settings/users/agent7/disable", {});
    expect(stray.status).toBe(303);
    expect(stray.headers.get("location")).toBe("/console/settings/users/agent7/disable");
    expect((await session.get("/console/account")).status).toBe(200);
    const r = await acme.post("/console/settings/users/agent7/disable", { confirm: "1" });
    expect(r.status).toBe(303);
    expect((await session.get("/console/account")).status).toBe(303);
    const [k] = await db.sql`select active, revoked_at is not null as revoked from api_keys where id = ${key!.id}`;
    expect(k!.revoked).toBe(true);
    const [entry] = await db.sql<{ actor_id: string; details: { revoked_keys: number[] } }[]>`select actor_id, details from audit_log where action = 'user.disable' and target = 'user:agent7'`;
    expect(entry!.details.revoked_keys).toEqual([key!.id]);
    // Nobody disables themselves here.
    const self = await acme.post(`/console/settings/users/${acmeId}/disable`, { confirm: "1" });
    expect(self.status).toBe(422);
    expect(await db.sql`select 1 from users where id = ${acmeId} and disabled_at is null`).toHaveLength(1);
  });

  test("a new link revokes the older one; two-step reset ends the user's sessions; both audited", async () => {
    const person = await makeUser(db.sql, { role: "agent", orgId: 1 });
    const first = linkOf((await acme.post(`/console/settings/users/${person.id}/invite`)).body as string)!;
    const second = linkOf((await acme.post(`/console/settings/users/${person.id}/invite`)).body as string)!;
    expect(first).not.toBe(second);
    expect((await opened(first)).status).toBe(404);
    expect((await opened(second)).status).toBe(303);
    await db.sql`update users set totp_secret = 'x' where id = ${person.id}`;
    const session = await signIn(app.base, person.email, person.password).catch(() => null);
    const r = await acme.post(`/console/settings/users/${person.id}/two-step`);
    expect(r.status).toBe(303);
    const [after] = await db.sql`select totp_secret from users where id = ${person.id}`;
    expect(after!.totp_secret).toBeNull();
    if (session) expect((await session.get("/console/account")).status).toBe(303);
    expect(await db.sql`select 1 from audit_log where action = 'user.invite' and target = ${`user:${person.id}`}`).toHaveLength(2);
    expect(await db.sql`select 1 from audit_log where action = 'user.two_step_reset' and target = ${`user:${person.id}`}`).toHaveLength(1);
  });

  test("a user changes their own password with the current one; a wrong one changes nothing", async () => {
    const me = await makeUser(db.sql, { role: "agent", orgId: 2 });
    const s = await signIn(app.base, me.email, me.password);
    const page = await s.get("/console/account");
    expect(page.body).toContain('action="/console/account/password"');
    const fresh = "a brand new long password";
    const wrong = await s.post("/console/account/password", { current: "not it at all", password: fresh, confirm: fresh });
    expect(wrong.headers.get("location")).toBe("/console/account?pw=wrong#password-h");
    const mismatch = await s.post("/console/account/password", { current: me.password, password: fresh, confirm: fresh + "x" });
    expect(mismatch.headers.get("location")).toBe("/console/account?pw=mismatch#password-h");
    const short = await s.post("/console/account/password", { current: me.password, password: "short", confirm: "short" });
    expect(short.headers.get("location")).toBe("/console/account?pw=rule#password-h");
    await expect(signIn(app.base, me.email, fresh)).rejects.toThrow();
    const ok = await s.post("/console/account/password", { current: me.password, password: fresh, confirm: fresh });
    expect(ok.headers.get("location")).toBe("/console/login?done=password");
    expect((await s.get("/console/account")).status).toBe(303);
    await expect(signIn(app.base, me.email, me.password)).rejects.toThrow();
    expect((await signIn(app.base, me.email, fresh)).csrf).toBeTruthy();
    expect(await db.sql`select 1 from audit_log where action = 'user.password_change' and target = ${`user:${me.id}`}`).toHaveLength(1);
  });
});

describe("webhook endpoints", () => {
  const secretOf = (body: string) => /<code id="webhook-secret">(whsec_[A-Za-z0-9+/=]+)<\/code>/.exec(body)?.[1];
  const hook = (id: number) => db.sql<{ org_id: string | null; url: string; secret: string; events: string[]; active: boolean }[]>`select * from webhooks where id = ${id}`.then((r) => r[0]);
  let acmeHook = 0;

  test("a manager adds an endpoint of their organization: the secret is shown once, audited as a create", async () => {
    expect((await acme.get("/console/settings/webhooks")).status).toBe(200);
    const r = await acme.post("/console/settings/webhooks", { url: rx.url("/acme"), "event.lead.created": "1", "event.call.completed": "1", org: "2" });
    expect(r.status).toBe(200);
    expect(r.headers.get("cache-control")).toContain("no-store");
    const secret = secretOf(r.body as string)!;
    expect(secret).toBeTruthy();
    const [row] = await db.sql<{ id: number }[]>`select id::float8 as id from webhooks where url = ${rx.url("/acme")}`;
    acmeHook = row!.id;
    const h = (await hook(acmeHook))!;
    // The manager's own organization, whatever the form said.
    expect(Number(h.org_id)).toBe(1);
    expect(h.events).toEqual(["lead.created", "call.completed"]);
    const [entry] = await db.sql<{ details: { changes: Record<string, unknown> } }[]>`select details from audit_log where action = 'webhook.create' and target = ${`webhook:${acmeHook}`}`;
    expect(entry!.details.changes.secret).toBe("changed");
    expect(JSON.stringify(entry)).not.toContain(secret);
    // Never shown again.
    expect((await acme.get(`/console/settings/webhooks/${acmeHook}`)).body).not.toContain(secret);
    // A bad URL or event list: the provisioning problems, nothing written.
    const bad = await acme.post("/console/settings/webhooks", { url: "ftp://x" });
    expect(bad.status).toBe(422);
    expect(bad.body).toContain("url");
    expect(await db.sql`select 1 from webhooks where url = 'ftp://x'`).toHaveLength(0);
  });

  test("two adds at once get two endpoints: neither overwrites the other", async () => {
    const [a, b] = await Promise.all([
      acme.post("/console/settings/webhooks", { url: rx.url("/race-a"), "event.*": "1" }),
      bolt.post("/console/settings/webhooks", { url: rx.url("/race-b"), "event.*": "1" }),
    ]);
    expect([a.status, b.status]).toEqual([200, 200]);
    const rows = await db.sql<{ url: string; org_id: string }[]>`select url, org_id from webhooks where url like '%/race-%' order by url`;
    expect(rows.map((r) => [r.url.slice(-6), Number(r.org_id)])).toEqual([["race-a", 1], ["race-b", 2]]);
    // Admins are confined to nothing: only the create-only run keeps the second from updating the first.
    const both = await Promise.all([1, 2, 3, 4].map((n) => admin.post("/console/settings/webhooks", { url: rx.url(`/admin-race-${n}`), "event.*": "1", org: String(1 + (n % 2)) })));
    expect(both.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(await db.sql`select 1 from webhooks where url like '%/admin-race-%'`).toHaveLength(4);
  });

  test("another organization's manager neither reads nor changes the endpoint; the 404 names nothing", async () => {
    for (const path of ["", "/rotate", "/disable"]) expect((await bolt.get(`/console/settings/webhooks/${acmeHook}${path}`)).status).toBe(404);
    for (const [path, form] of [
      ["", { url: rx.url("/stolen"), "event.*": "1", active: "1" }],
      ["/rotate", { confirm: "1" }],
      ["/disable", { confirm: "1" }],
      ["/test", {}],
    ] as const) {
      const r = await bolt.post(`/console/settings/webhooks/${acmeHook}${path}`, form);
      expect(r.status).toBe(404);
      expect(r.body).not.toContain(rx.url("/acme"));
    }
    const h = (await hook(acmeHook))!;
    expect([h.url, h.active]).toEqual([rx.url("/acme"), true]);
    expect(rx.at("/acme")).toHaveLength(0);
  });

  test("edit events through provisioning; the test event arrives signed with the endpoint's secret", async () => {
    const r = await acme.post(`/console/settings/webhooks/${acmeHook}`, { url: rx.url("/acme"), "event.*": "1", active: "1" });
    expect(r.status).toBe(303);
    expect((await hook(acmeHook))!.events).toEqual(["*"]);
    const [entry] = await db.sql<{ details: { changes: Record<string, unknown> } }[]>`select details from audit_log where action = 'webhook.update' and target = ${`webhook:${acmeHook}`} order by id desc limit 1`;
    expect(entry!.details.changes.events).toEqual({ from: ["lead.created", "call.completed"], to: ["*"] });
    const badEvent = await acme.post(`/console/settings/webhooks/${acmeHook}`, { url: "not a url", active: "1" });
    expect(badEvent.status).toBe(422);

    const t = await acme.post(`/console/settings/webhooks/${acmeHook}/test`);
    expect(t.status).toBe(200);
    expect(t.body).toContain("answered HTTP 200");
    const [got] = rx.at("/acme");
    const body = JSON.parse(got!.body);
    expect(body.type).toBe("webhook.test");
    const secret = (await hook(acmeHook))!.secret;
    const ts = Number(got!.headers["webhook-timestamp"]);
    expect(got!.headers["webhook-signature"]).toContain(signature(secret, got!.headers["webhook-id"]!, ts, got!.body));
    expect(await db.sql`select 1 from audit_log where action = 'webhook.test' and target = ${`webhook:${acmeHook}`}`).toHaveLength(1);
  });

  test("rotate and disable are confirmed on the server; rotation shows the new secret once", async () => {
    const before = (await hook(acmeHook))!.secret;
    const stray = await acme.post(`/console/settings/webhooks/${acmeHook}/rotate`, {});
    expect(stray.status).toBe(303);
    expect((await hook(acmeHook))!.secret).toBe(before);
    const confirm = await acme.get(`/console/settings/webhooks/${acmeHook}/rotate`);
    expect(confirm.body).toContain('name="confirm"');
    const r = await acme.post(`/console/settings/webhooks/${acmeHook}/rotate`, { confirm: "1" });
    const secret = secretOf(r.body as string)!;
    expect((await hook(acmeHook))!.secret).toBe(secret);
    expect(secret).not.toBe(before);
    expect((await acme.post(`/console/settings/webhooks/${acmeHook}/disable`, {})).status).toBe(303);
    expect((await hook(acmeHook))!.active).toBe(true);
    const d = await acme.post(`/console/settings/webhooks/${acmeHook}/disable`, { confirm: "1" });
    expect(d.headers.get("location")).toBe(`/console/settings/webhooks/${acmeHook}?done=disabled`);
    expect((await hook(acmeHook))!.active).toBe(false);
  });
});

describe("automations", () => {
  let autoId = 0;

  test("a manager adds an automation through provisioning; bad input gets the provisioning problems", async () => {
    const bad = await acme.post("/console/settings/automations", { trigger: "new_lead", channel: "fax", body: "", delay_minutes: "x" });
    expect(bad.status).toBe(422);
    for (const field of ["channel", "body", "delay_seconds"]) expect(bad.body).toContain(field);
    const r = await acme.post("/console/settings/automations", { trigger: "new_lead", channel: "sms", body: "Hi {first_name}, thanks from {company}!", delay_minutes: "5", active: "1", org: "2" });
    expect(r.status).toBe(303);
    autoId = Number(/automations\/(\d+)/.exec(r.headers.get("location")!)![1]);
    const [a] = await db.sql`select org_id, channel, delay_seconds, active from automations where id = ${autoId}`;
    expect([Number(a!.org_id), a!.channel, a!.delay_seconds, a!.active]).toEqual([1, "sms", 300, true]);
    expect(await db.sql`select 1 from audit_log where action = 'automation.create' and target = ${`automation:${autoId}`} and org_id = 1`).toHaveLength(1);
  });

  test("the preview renders the saved text for a real lead of the organization through the send path's merge", async () => {
    const [lead] = await db.sql<{ id: number }[]>`insert into leads (list_id, phone, first_name, last_name) values (101, '5551230000', 'Ada', 'Lovelace') returning id::float8 as id`;
    const [other] = await db.sql<{ id: number }[]>`insert into leads (list_id, phone, first_name, last_name) values (201, '5559870000', 'Boltina', 'Secret') returning id::float8 as id`;
    const page = await acme.get(`/console/settings/automations/${autoId}?lead=${lead!.id}`);
    expect(page.status).toBe(200);
    expect(page.body).toContain("{first_name}");
    expect(page.body).toMatch(/Hi Ada, thanks from (Acme Roofing|Acme)/);
    // Another organization's lead is not previewed, nor named.
    const foreign = await acme.get(`/console/settings/automations/${autoId}?lead=${other!.id}`);
    expect(foreign.status).toBe(200);
    expect(foreign.body).not.toContain("Boltina");
    expect(foreign.body).toContain("not one of this organization");
  });

  test("another organization's manager neither reads nor changes the automation", async () => {
    expect((await bolt.get(`/console/settings/automations/${autoId}`)).status).toBe(404);
    const r = await bolt.post(`/console/settings/automations/${autoId}`, { trigger: "new_lead", channel: "sms", body: "hijacked", active: "1" });
    expect(r.status).toBe(404);
    expect((await bolt.get("/console/settings/automations")).body).not.toContain("thanks from");
    const [a] = await db.sql`select body from automations where id = ${autoId}`;
    expect(a!.body).toBe("Hi {first_name}, thanks from {company}!");
  });

  test("saving audits previous and new values; off is a checkbox left empty", async () => {
    const r = await acme.post(`/console/settings/automations/${autoId}`, { trigger: "new_lead", channel: "sms", body: "Hello {first_name}", delay_minutes: "5" });
    expect(r.status).toBe(303);
    const [a] = await db.sql`select body, active from automations where id = ${autoId}`;
    expect(a).toEqual({ body: "Hello {first_name}", active: false });
    const [entry] = await db.sql<{ details: { changes: Record<string, unknown> } }[]>`select details from audit_log where action = 'automation.update' and target = ${`automation:${autoId}`}`;
    expect(entry!.details.changes.active).toEqual({ from: true, to: false });
    expect(entry!.details.changes.body).toEqual({ from: "Hi {first_name}, thanks from {company}!", to: "Hello {first_name}" });
  });
});

describe("calendars", () => {
  let calId = 0;

  test("the form's fields come from the provisioning field table; add and edit go through provisioning, audited", async () => {
    const page = await acme.get("/console/settings/calendars");
    expect(page.status).toBe(200);
    const { CALENDAR_FIELDS } = await import("../src/provision/model");
    for (const name of Object.keys(CALENDAR_FIELDS).filter((n) => !["org_id", "hours", "links"].includes(n))) expect(page.body).toContain(`name="${name}"`);
    const bad = await acme.post("/console/settings/calendars", { name: "Visits", timezone: "Nowhere/Else", slot_minutes: "2", "hours.mon": "9am to 5pm" });
    expect(bad.status).toBe(422);
    for (const field of ["timezone", "slot_minutes", "hours.mon"]) expect(bad.body).toContain(field);
    const r = await acme.post("/console/settings/calendars", { name: "Visits", timezone: "America/Chicago", slot_minutes: "45", capacity: "2", "hours.mon": "09:00-12:00, 13:00-17:00", org: "2" });
    expect(r.status).toBe(303);
    calId = Number(/calendars\/(\d+)/.exec(r.headers.get("location")!)![1]);
    const [c] = await db.sql`select org_id, slot_minutes, capacity, hours from calendars where id = ${calId}`;
    expect([Number(c!.org_id), c!.slot_minutes, c!.capacity, c!.hours]).toEqual([1, 45, 2, { mon: [["09:00", "12:00"], ["13:00", "17:00"]] }]);
    const form = await acme.get(`/console/settings/calendars/${calId}`);
    expect(form.body).toContain('value="09:00-12:00, 13:00-17:00"');
    const saved = await acme.post(`/console/settings/calendars/${calId}`, { name: "Visits", timezone: "America/Chicago", slot_minutes: "60", capacity: "2", "hours.tue": "10:00-14:00" });
    expect(saved.status).toBe(303);
    const [entry] = await db.sql<{ details: { changes: Record<string, unknown> } }[]>`select details from audit_log where action = 'calendar.update' and target = ${`calendar:${calId}`}`;
    expect(entry!.details.changes.slot_minutes).toEqual({ from: 45, to: 60 });
    expect(entry!.details.changes.hours).toEqual({ from: { mon: [["09:00", "12:00"], ["13:00", "17:00"]] }, to: { tue: [["10:00", "14:00"]] } });
  });

  test("another organization's manager neither reads nor changes the calendar", async () => {
    expect((await bolt.get(`/console/settings/calendars/${calId}`)).status).toBe(404);
    const r = await bolt.post(`/console/settings/calendars/${calId}`, { name: "Stolen", timezone: "UTC" });
    expect(r.status).toBe(404);
    expect((await bolt.get("/console/settings/calendars")).body).not.toContain("Visits");
    const [c] = await db.sql`select name from calendars where id = ${calId}`;
    expect(c!.name).toBe("Visits");
  });
});
