// The console's settings pages through HTTP, across two organizations: each form goes through the
// provisioning service (validation, merge, audit with previous and new values, secrets as
// "changed"), secrets are write-only (set / not set, replaced when given, never displayed), a
// manager of one organization neither reads nor changes another's, and a refusal names nothing of
// the other organization.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);

let db: TestDatabase;
let app: TestApp;
let acme: ConsoleClient;
let bolt: ConsoleClient;
let agent: ConsoleClient;
let admin: ConsoleClient;

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
  app = await startApp(db.url);
  const [m, b, a, s] = await Promise.all([
    makeUser(db.sql, { role: "manager", orgId: 1 }),
    makeUser(db.sql, { role: "manager", orgId: 2 }),
    makeUser(db.sql, { role: "agent", orgId: 1 }),
    makeUser(db.sql, { role: "admin", orgId: null }),
  ]);
  [acme, bolt, agent, admin] = await Promise.all([
    signIn(app.base, m.email, m.password),
    signIn(app.base, b.email, b.password),
    signIn(app.base, a.email, a.password),
    signIn(app.base, s.email, s.password),
  ]);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("organization settings", () => {
  test("agents get the 404 page; nothing is written", async () => {
    expect((await agent.get("/console/settings/org")).status).toBe(404);
    expect((await agent.post("/console/settings/org/1", acmeForm({ name: "Agent was here" }))).status).toBe(404);
    expect((await orgRow(1)).name).toBe("Acme");
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
