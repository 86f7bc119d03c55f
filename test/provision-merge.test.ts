// Provisioning and the console agree (operations.md §3): within an object that exists, a field the
// file leaves out keeps its stored value, a field given replaces it, `null` clears a field that may
// be empty; `--dry-run` prints what a run would create and change and writes nothing; every change
// is audited with its previous and new values, secrets as "changed".
import { afterAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { capture, spawnCli } from "./harness/capture";
import { testDatabase, type TestDatabase } from "./harness/db";
import { systemActor } from "../src/auth/actor";
import { provisionCommand } from "../src/provision/command";
import { applyProvisioning } from "../src/provision/service";
import { parseProvisioning, ProvisioningError } from "../src/provision/validate";
import type { Sql } from "../src/db/client";

const opened: TestDatabase[] = [];
afterAll(() => Promise.all(opened.map((db) => db.drop())));
async function freshDb(): Promise<TestDatabase> {
  const db = await testDatabase();
  opened.push(db);
  return db;
}
const fresh = async (): Promise<Sql> => (await freshDb()).sql;

const dir = mkdtempSync(join(tmpdir(), "leadline-provision-merge-"));
let fileNo = 0;
function fileOf(content: unknown): string {
  const path = join(dir, `p${++fileNo}.json`);
  writeFileSync(path, JSON.stringify(content, null, 2));
  return path;
}

const KEY = randomBytes(32);
const TOKEN = "tok-" + randomBytes(12).toString("hex");
const SMTP = `smtp://user:${randomBytes(9).toString("hex")}@smtp.example.com:587`;
const SECRET = "whsec_" + randomBytes(24).toString("base64");

const provision = (sql: Sql, content: unknown, ...flags: string[]) => capture(() => provisionCommand(sql, [...flags, fileOf(content)], undefined, KEY));
/** Applied as the console's settings screens will: the service itself, with a partial object. */
const apply = (sql: Sql, content: unknown, actor = systemActor("operator", "provision", null)) =>
  applyProvisioning(sql, parseProvisioning(JSON.stringify(content)), { secretKey: KEY, actor });
const problemsOf = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error("expected the file to be rejected");
    },
    (err) => {
      if (!(err instanceof ProvisioningError)) throw err;
      return err.problems;
    },
  );

function base() {
  return {
    settings: { COMMS_INBOUND_LIST_ID: 900 },
    orgs: [{
      id: 1, name: "Acme Roofing", timezone: "America/Chicago",
      billing: { status: "active", subscription: "active", credits: 25 },
      sms: { base_url: "https://api.twilio.com", account_sid: "AC0123", auth_token: TOKEN, from: "5125550100" },
    }],
    campaigns: [{ id: "ACME", org_id: 1, name: "Acme inbound" }],
    lists: [{ id: 101, campaign_id: "ACME" }],
    users: [{ id: "agent7", org_id: 1, name: "Dana Diaz" }],
    api_keys: [{ name: "crm sync", org_id: 1, scopes: ["leads:read"] }],
    dni_pools: [{ key: "acme-site", org_id: 1, numbers: ["5125550101", "5125550102"], fallback: "5125550100" }],
    calendars: [{ id: 1, org_id: 1, name: "Estimates", timezone: "America/Chicago", hours: { mon: [["09:00", "17:00"]] }, links: [{ slug: "acme-estimate" }] }],
    webhooks: [{ id: 1, org_id: 1, url: "https://hooks.acme.example/leadline", secret: SECRET, events: ["lead.created"] }],
    automations: [{ id: 1, org_id: 1, trigger: "new_lead", channel: "email", subject: "Thanks", body: "Hi {first_name}" }],
  } as Record<string, any>;
}

const TABLES = ["settings", "orgs", "org_billing", "campaigns", "lists", "users", "api_keys", "dni_pools",
  "dni_numbers", "calendars", "calendar_links", "webhooks", "automations", "credit_ledger", "audit_log"] as const;

/** Every table provisioning writes, as text, so that any change at all (updated_at included) shows. */
async function snapshot(sql: Sql): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const table of TABLES) out[table] = (await sql<{ r: string }[]>`select t::text as r from ${sql(table)} t order by 1`).map((x) => x.r);
  return out;
}

const one = async <T>(q: PromiseLike<readonly T[]>) => (await q)[0]!;

describe("merge: absent keeps, given replaces, null clears", () => {
  test("a later run of an older file keeps what was changed since; a field it gives replaces the stored value", async () => {
    const sql = await fresh();
    const older = base();
    expect((await provision(sql, older)).code).toBe(0);
    // Changed since, through the service functions with partial objects, as the console's settings do.
    await apply(sql, {
      orgs: [{ id: 1, quiet_hours: { start: "21:00", end: "08:00" }, consent: "explicit", email: { smtp_url: SMTP, from: "Acme <a@acme.example>" } }],
      calendars: [{ id: 1, org_id: 1, capacity: 3, min_notice_minutes: 60 }],
      automations: [{ id: 1, org_id: 1, active: false, delay_seconds: 300 }],
      webhooks: [{ id: 1, org_id: 1, active: false }],
      api_keys: [{ name: "crm sync", org_id: 1, agent: "agent7", active: false }],
    });
    const changed = await snapshot(sql);
    const again = await provision(sql, older);
    expect(again.err).not.toMatch(/[1-9]\d* (created|updated)/);
    expect(await snapshot(sql)).toEqual(changed);
    const org = await one(sql`select quiet_start, quiet_end, consent, email is not null as email, name, timezone from orgs`);
    expect(org).toEqual({ quiet_start: "21:00", quiet_end: "08:00", consent: "explicit", email: true, name: "Acme Roofing", timezone: "America/Chicago" });
    expect(await one(sql`select capacity, min_notice_minutes, hours from calendars`)).toEqual({ capacity: 3, min_notice_minutes: 60, hours: { mon: [["09:00", "17:00"]] } });
    expect(await one(sql`select active, delay_seconds, subject from automations`)).toEqual({ active: false, delay_seconds: 300, subject: "Thanks" });
    expect(await one(sql`select active, agent, scopes from api_keys`)).toEqual({ active: false, agent: "agent7", scopes: ["leads:read"] });

    // A newer file that gives a field replaces it; the others stay as they are.
    const newer = base();
    newer.calendars[0].capacity = 2;
    newer.orgs[0].consent = "implied";
    newer.webhooks[0].active = true;
    await provision(sql, newer);
    expect(await one(sql`select capacity, min_notice_minutes from calendars`)).toEqual({ capacity: 2, min_notice_minutes: 60 });
    expect(await one(sql`select consent, quiet_start from orgs`)).toEqual({ consent: "implied", quiet_start: "21:00" });
    expect(await one(sql`select active from webhooks`)).toEqual({ active: true });
  });

  test("an object that exists may be given in part; one created needs its required fields, each named", async () => {
    const sql = await fresh();
    const problems = await problemsOf(apply(sql, {
      orgs: [{ id: 1 }],
      calendars: [{ id: 1, org_id: 1 }],
      webhooks: [{ id: 1, org_id: 1, active: true }],
      automations: [{ id: 1, org_id: 1, subject: "x" }],
      api_keys: [{ name: "bot", org_id: 1 }],
      dni_pools: [{ key: "p", org_id: 1 }],
    }));
    expect(problems).toEqual([
      "orgs[0].name: required to create org 1",
      'api_keys[0].scopes: required to create key "bot" (org 1)',
      'dni_pools[0].numbers: required to create pool "p"',
      "calendars[0].timezone: required to create calendar 1",
      "webhooks[0].url: required to create webhook 1",
      "webhooks[0].secret: required to create webhook 1",
      "webhooks[0].events: required to create webhook 1",
      "automations[0].trigger: required to create automation 1",
      "automations[0].channel: required to create automation 1",
      "automations[0].body: required to create automation 1",
    ]);
    expect(await one(sql`select count(*)::int as n from orgs`)).toEqual({ n: 0 });
    await provision(sql, base());
    const before = await snapshot(sql);
    // Parts of existing objects: only what is given changes.
    await apply(sql, { orgs: [{ id: 1, company: "Acme LLC" }], dni_pools: [{ key: "acme-site", org_id: 1, ttl_seconds: 600 }] });
    expect(await one(sql`select name, company, timezone from orgs`)).toEqual({ name: "Acme Roofing", company: "Acme LLC", timezone: "America/Chicago" });
    expect(await one(sql`select fallback, ttl_seconds from dni_pools`)).toEqual({ fallback: "5125550100", ttl_seconds: 600 });
    expect([...(await sql`select number from dni_numbers where active order by 1`)].map((r) => r.number)).toEqual(["5125550101", "5125550102"]);
    const after = await snapshot(sql);
    for (const table of ["campaigns", "lists", "users", "api_keys", "calendars", "webhooks", "automations", "org_billing"] as const) {
      expect(after[table]).toEqual(before[table]);
    }
  });

  test("a merged object (sms, email, billing) changes only the fields given; one set up anew must be complete", async () => {
    const sql = await fresh();
    await provision(sql, base());
    const token = "tok-" + randomBytes(12).toString("hex");
    await apply(sql, { orgs: [{ id: 1, sms: { auth_token: token }, billing: { credits: 30, sms_cost: 0.02 } }] });
    const org = await one(sql<{ sms: Record<string, string> }[]>`select sms from orgs`);
    expect({ ...org.sms, auth_token: "" } as Record<string, string>).toEqual({ base_url: "https://api.twilio.com", account_sid: "AC0123", auth_token: "", from: "5125550100" });
    expect(org.sms.auth_token).toStartWith("enc:v1:");
    expect(JSON.stringify(org.sms)).not.toContain(token);
    expect(await one(sql`select status, subscription, credits::float8 as credits, granted::float8 as granted, sms_cost::float8 as sms_cost from org_billing`))
      .toEqual({ status: "active", subscription: "active", credits: 30, granted: 30, sms_cost: 0.02 });
    const problems = await problemsOf(apply(sql, { orgs: [{ id: 1, email: { from: "Acme <a@acme.example>" } }, { id: 2, name: "Bolt", billing: { credits: 5 } }] }));
    expect(problems).toEqual([
      "orgs[0].email.smtp_url: required to set up email (org 1 has none stored)",
      "orgs[1].billing.status: required to set up billing (org 2 has none stored)",
      "orgs[1].billing.subscription: required to set up billing (org 2 has none stored)",
    ]);
  });

  test("null clears a field that may be empty; null for one that may not is refused, naming it", async () => {
    const sql = await fresh();
    const file = base();
    file.orgs[0].company = "Acme LLC";
    file.orgs[0].quiet_hours = { start: "21:00", end: "08:00" };
    file.settings.BASE_URL = "https://leads.acme.example";
    file.api_keys[0].agent = "agent7";
    await provision(sql, file);
    await apply(sql, {
      settings: { BASE_URL: null },
      orgs: [{ id: 1, company: null, quiet_hours: null, sms: null, billing: null }],
      campaigns: [{ id: "ACME", org_id: 1, name: null }],
      api_keys: [{ name: "crm sync", org_id: 1, agent: null }],
      dni_pools: [{ key: "acme-site", org_id: 1, fallback: null }],
      calendars: [{ id: 1, org_id: 1, hours: null }],
      automations: [{ id: 1, org_id: 1, subject: null }],
    });
    expect(await one(sql`select company, quiet_start, quiet_end, sms from orgs`)).toEqual({ company: "", quiet_start: null, quiet_end: null, sms: null });
    expect(await one(sql`select count(*)::int as n from org_billing`)).toEqual({ n: 0 });
    expect([...(await sql`select key from settings order by key`)]).toEqual([{ key: "COMMS_INBOUND_LIST_ID" }]);
    expect(await one(sql`select name from campaigns`)).toEqual({ name: "" });
    expect(await one(sql`select agent from api_keys`)).toEqual({ agent: null });
    expect(await one(sql`select fallback from dni_pools`)).toEqual({ fallback: "" });
    expect(await one(sql`select hours from calendars`)).toEqual({ hours: {} });
    expect(await one(sql`select subject from automations`)).toEqual({ subject: null });

    const refused = fileOf({
      orgs: [{ id: 1, name: null, timezone: null, consent: null, email: { smtp_url: null, from: "x" } }],
      calendars: [{ id: 1, org_id: 1, slot_minutes: null, links: null }],
      dni_pools: [{ key: "acme-site", org_id: 1, numbers: null, ttl_seconds: null }],
      webhooks: [{ id: 1, org_id: 1, secret: null, active: null }],
      api_keys: [{ name: "crm sync", org_id: 1, scopes: null }],
      users: [{ id: "agent7", org_id: 1, email: null }],
    });
    const message = await capture(() => provisionCommand(sql, [refused], undefined, KEY)).then(
      () => "",
      (err: Error) => err.message,
    );
    for (const path of ["orgs[0].name", "orgs[0].timezone", "orgs[0].consent", "orgs[0].email.smtp_url", "calendars[0].slot_minutes", "calendars[0].links",
      "dni_pools[0].numbers", "dni_pools[0].ttl_seconds", "webhooks[0].secret", "webhooks[0].active", "api_keys[0].scopes", "users[0].email"]) {
      expect(message).toContain(`${path}: cannot be null (it may not be empty)`);
    }
    // org_id null is not a clearing but the house scope, and stays a value of its own.
    await apply(sql, { campaigns: [{ id: "HOUSE", org_id: null }] });
    expect(await one(sql`select org_id from campaigns where id = 'HOUSE'`)).toEqual({ org_id: null });
  });

  test("a console role is checked on the user as it will be stored", async () => {
    const sql = await fresh();
    await provision(sql, base());
    expect(await problemsOf(apply(sql, { users: [{ id: "agent7", org_id: 1, role: "agent" }] }))).toEqual(["users[0].role: a console role needs an email"]);
    await apply(sql, { users: [{ id: "agent7", org_id: 1, email: "Dana@Acme.example", role: "agent" }] });
    // Given alone, the role changes and the email stays.
    await apply(sql, { users: [{ id: "agent7", org_id: 1, role: "manager" }] });
    expect(await one(sql`select email, role from users`)).toEqual({ email: "dana@acme.example", role: "manager" });
    expect(await problemsOf(apply(sql, { users: [{ id: "agent7", org_id: 1, role: "admin" }] }))).toEqual(["users[0].role: an admin acts for every organization (org_id null)"]);
    expect(await problemsOf(apply(sql, { users: [{ id: "agent7", org_id: null }] }))).toEqual(["users[0].role: a manager belongs to one organization (org_id)"]);
    // An email another user has is refused, naming both (not a database error).
    expect(await problemsOf(apply(sql, { users: [{ id: "agent8", org_id: 1, email: "DANA@acme.example", role: "agent" }] }))).toEqual([
      'users[0].email: "dana@acme.example" is already user "agent7"',
    ]);
    // Written again on its own user, the email is no conflict.
    await apply(sql, { users: [{ id: "agent7", org_id: 1, email: "dana@acme.example" }] });
  });

  test("an organization's user reaches its own organization's objects only; another's answers as missing", async () => {
    const sql = await fresh();
    const file = base();
    file.orgs.push({ id: 2, name: "Bolt" });
    file.calendars.push({ id: 2, org_id: 2, timezone: "America/Denver" });
    await provision(sql, file);
    const manager = { orgId: 1, type: "user" as const, id: "mgr", agent: null, keyId: null, address: "h" };
    expect(await problemsOf(apply(sql, { calendars: [{ id: 2, org_id: 1, capacity: 9 }] }, manager))).toEqual(["calendars[0]: calendar 2 does not exist"]);
    expect(await problemsOf(apply(sql, { calendars: [{ id: 3, org_id: 2, timezone: "UTC" }] }, manager))).toEqual(["calendars[0]: org_id: org 2 does not exist"]);
    expect(await problemsOf(apply(sql, { orgs: [{ id: 2, consent: "explicit" }], settings: { BASE_URL: null }, lists: [{ id: 101, campaign_id: "ACME", name: "x" }] }, manager))).toEqual([
      "settings: belong to the platform",
      "orgs[0]: org 2 does not exist",
      "lists[0]: lists belong to the platform",
    ]);
    await apply(sql, { calendars: [{ id: 1, org_id: 1, capacity: 4 }] }, manager);
    expect([...(await sql`select id, capacity from calendars order by id`)]).toEqual([{ id: 1, capacity: 4 }, { id: 2, capacity: 1 }]);
    expect(await one(sql`select actor_type, actor_id, action, org_id, address from audit_log where target = 'calendar:1' and action = 'calendar.update'`))
      .toEqual({ actor_type: "user", actor_id: "mgr", action: "calendar.update", org_id: 1, address: "h" });
  });

  test("changes to different fields of one object at the same moment both survive", async () => {
    const sql = await fresh();
    await provision(sql, base());
    // Each run reads the row it merges into under the provisioning lock, so neither writes back
    // a stale copy of the field the other changed.
    for (let round = 0; round < 8; round++) {
      const company = `Acme ${round}`;
      const capacity = round + 2;
      await Promise.all([
        apply(sql, { orgs: [{ id: 1, company }], calendars: [{ id: 1, org_id: 1, capacity }] }),
        apply(sql, { orgs: [{ id: 1, consent: round % 2 ? "explicit" : "implied" }], calendars: [{ id: 1, org_id: 1, horizon_days: 20 + round }] }),
      ]);
      expect(await one(sql`select company, consent from orgs`)).toEqual({ company, consent: round % 2 ? "explicit" : "implied" });
      expect(await one(sql`select capacity, horizon_days from calendars`)).toEqual({ capacity, horizon_days: 20 + round });
    }
  });
});

describe("provision --dry-run FILE", () => {
  test("on an empty database: prints what would be created, secrets as (changed), and writes nothing", async () => {
    const sql = await fresh();
    const before = await snapshot(sql);
    const r = await provision(sql, base(), "--dry-run");
    expect(r.code).toBe(0);
    expect(await snapshot(sql)).toEqual(before);
    const lines = r.out.split("\n");
    expect(lines.slice(0, 3)).toEqual(["update settings", "  COMMS_INBOUND_LIST_ID: null → 900", "create org 1"]);
    expect(lines).toContain('  name: "Acme Roofing"');
    expect(lines).toContain('  billing.status: "active"');
    expect(lines).toContain("  sms.auth_token: (changed)");
    expect(lines).toContain('create key "crm sync" (org 1) (its key generated and printed by the run)');
    expect(lines).toContain('create pool "acme-site"');
    expect(lines).toContain('  numbers: ["5125550101","5125550102"]');
    expect(lines).toContain("  secret: (changed)");
    expect(r.out + r.err).not.toContain(TOKEN);
    expect(r.out + r.err).not.toContain(SECRET.slice(6));
    expect(r.err).toBe(
      "dry run, nothing written: settings: 1 to update; orgs: 1 to create; users: 1 to create; campaigns: 1 to create; lists: 1 to create; " +
        "api_keys: 1 to create; dni_pools: 1 to create; calendars: 1 to create; webhooks: 1 to create; automations: 1 to create; 1 key to generate\n",
    );
  });

  test("on a provisioned database: each field that would change, old → new; nothing for what would not", async () => {
    const sql = await fresh();
    await provision(sql, base());
    const before = await snapshot(sql);
    const same = await provision(sql, base(), "--dry-run");
    expect(same.out).toBe("");
    expect(same.err).not.toMatch(/[1-9]\d* to (create|update)/);
    expect(same.err).toContain("0 keys to generate");

    const file = base();
    file.orgs[0].sms.auth_token = "tok-" + randomBytes(12).toString("hex");
    file.orgs[0].billing.credits = 40;
    file.orgs[0].consent = "explicit";
    file.dni_pools[0].numbers = ["5125550102", "5125550103"];
    file.calendars[0].links.push({ slug: "acme-visit" });
    file.automations.push({ id: 2, org_id: 1, trigger: "new_lead", channel: "note", body: "New lead" });
    const r = await provision(sql, file, "--dry-run");
    expect(r.out).toBe(
      [
        "update org 1",
        '  consent: "implied" → "explicit"',
        "  billing.credits: 25 → 40",
        "  sms.auth_token: (changed)",
        'update pool "acme-site"',
        '  numbers: ["5125550101","5125550102"] → ["5125550102","5125550103"]',
        "update calendar 1",
        '  links: [{"slug":"acme-estimate"}] → [{"slug":"acme-estimate"},{"slug":"acme-visit"}]',
        "create automation 2",
        "  org_id: 1",
        '  trigger: "new_lead"',
        '  channel: "note"',
        '  body: "New lead"',
        "  delay_seconds: 0",
        "  active: true",
        "",
      ].join("\n"),
    );
    expect(r.out + r.err).not.toContain(file.orgs[0].sms.auth_token);
    expect(r.err).toContain("orgs: 1 to update;");
    expect(await snapshot(sql)).toEqual(before);
    // The run the dry run described does exactly that.
    const run = await provision(sql, file);
    expect(run.err).toContain("orgs: 1 updated; users: 1 unchanged;");
    expect((await provision(sql, file, "--dry-run")).out).toBe("");
  });

  test("the sections their own services write are counted as the run would, a new org's among them, and nothing is written", async () => {
    const sql = await fresh();
    const file = {
      ...base(),
      do_not_contact: [{ org_id: 1, phone: "(512) 555-7100" }, { org_id: 1, email: "Old@Example.com" }],
      saved_replies: [{ id: 500, org_id: 1, name: "Directions", body: "We are at 1 Main St, {city}." }],
      conversion_feeds: [{ id: "acme-ads", org_id: 1, secret: "s".repeat(24), actions: [{ name: "Call", on: "call" }] }],
    };
    const count = async (table: string) => (await sql<{ n: number }[]>`select count(*)::int as n from ${sql(table)}`)[0]!.n;
    const tables = ["do_not_contact", "saved_replies", "conversion_feeds", ...TABLES] as const;
    const before = await Promise.all(tables.map(count));
    const dry = await provision(sql, file, "--dry-run");
    expect(dry.err).toContain("; do_not_contact: 2 to create; saved_replies: 1 to create; conversion_feeds: 1 to create; 1 key to generate\n");
    expect(await Promise.all(tables.map(count))).toEqual(before);
    const run = await provision(sql, file);
    expect(run.err).toContain("; do_not_contact: 2 created; saved_replies: 1 created; conversion_feeds: 1 created; 1 key generated\n");
    const again = await provision(sql, { ...file, saved_replies: [{ ...file.saved_replies[0]!, body: "We are at 2 Main St." }] }, "--dry-run");
    expect(again.err).toContain("; do_not_contact: 2 unchanged; saved_replies: 1 to update; conversion_feeds: 1 unchanged; 0 keys to generate\n");
    expect(await one(sql`select body from saved_replies where id = 500`)).toEqual({ body: "We are at 1 Main St, {city}." });
  });

  test("a file the run would refuse is refused the same way; the executable takes --dry-run before or after FILE", async () => {
    const db = await freshDb();
    const bad = base();
    bad.orgs[0].billing.credit = 1;
    const message = await provision(db.sql, bad, "--dry-run").then(
      () => "",
      (err: Error) => err.message,
    );
    expect(message).toBe("provisioning file rejected: orgs[0].billing.credit: unknown field");
    const path = fileOf(base());
    const cli = await spawnCli(db.url, "provision", path, "--dry-run");
    expect(cli.code).toBe(0);
    expect(cli.out).toStartWith("update settings\n");
    expect(cli.err).toStartWith("dry run, nothing written: ");
    expect(await one(db.sql`select count(*)::int as n from orgs`)).toEqual({ n: 0 });
    const refused = await spawnCli(db.url, "provision", "--dry-run", fileOf(bad));
    expect([refused.code, refused.out, refused.err]).toEqual([1, "", "leadline: provisioning file rejected: orgs[0].billing.credit: unknown field\n"]);
  });
});

describe("the audit log", () => {
  test("an organization's statuses changed by a run are audited once, by their own service", async () => {
    const sql = await fresh();
    await provision(sql, base());
    const last = (await one(sql<{ id: number }[]>`select max(id)::int as id from audit_log`)).id;
    const statuses = [{ code: "NEW", label: "New" }, { code: "WON", label: "Won" }];
    await provision(sql, { orgs: [{ id: 1, statuses }] });
    const rows = await sql<{ action: string; target: string }[]>`select action, target from audit_log where id > ${last} order by id`;
    expect(rows.map((r) => r.action)).toEqual(["lead_statuses.update"]);
    // With another field changed too, the org's row names that field alone.
    await provision(sql, { orgs: [{ id: 1, name: "Acme Roofing Co", statuses: [...statuses, { code: "LOST", label: "Lost" }] }] });
    const next = await sql<{ action: string; details: { changes?: Record<string, unknown> } }[]>`
      select action, details from audit_log where id > ${last} and action <> 'lead_statuses.update' order by id`;
    expect(next.map((r) => [r.action, Object.keys(r.details.changes ?? {})])).toEqual([["org.update", ["name"]]]);
  });

  test("a run writes one row per object it creates or changes, with previous and new values and secrets as changed", async () => {
    const sql = await fresh();
    const first = await provision(sql, base());
    const keyId = Number(first.out.split(" ")[1]);
    const rows = await sql<{ actor_type: string; actor_id: string; action: string; target: string; org_id: number | null; details: { changes: Record<string, unknown> } }[]>`
      select actor_type, actor_id, action, target, org_id, details from audit_log order by id`;
    expect(rows.map((r) => [r.actor_type, r.actor_id, r.action, r.target, r.org_id])).toEqual([
      ["operator", "provision", "settings.update", "settings", null],
      ["operator", "provision", "org.create", "org:1", 1],
      ["operator", "provision", "user.create", "user:agent7", 1],
      ["operator", "provision", "campaign.create", "campaign:ACME", 1],
      ["operator", "provision", "list.create", "list:101", null],
      ["operator", "provision", "key.create", `key:${keyId}`, 1],
      ["operator", "provision", "pool.create", "pool:acme-site", 1],
      ["operator", "provision", "calendar.create", "calendar:1", 1],
      ["operator", "provision", "webhook.create", "webhook:1", 1],
      ["operator", "provision", "automation.create", "automation:1", 1],
    ]);
    expect(rows[1]!.details.changes).toMatchObject({ name: { from: null, to: "Acme Roofing" }, "sms.auth_token": "changed", "billing.credits": { from: null, to: 25 } });
    expect(rows[8]!.details.changes.secret).toBe("changed");
    const text = JSON.stringify(rows);
    for (const secret of [TOKEN, SECRET, SECRET.slice(6), first.out.trim().split(" ").at(-1)!]) expect(text).not.toContain(secret);

    await provision(sql, base());
    expect(await one(sql`select count(*)::int as n from audit_log`)).toEqual({ n: 10 });
    const file = base();
    file.orgs[0].sms.auth_token = "tok-" + randomBytes(12).toString("hex");
    file.orgs[0].timezone = "America/Denver";
    await provision(sql, file);
    const last = await one(sql<{ action: string; details: unknown }[]>`select action, details from audit_log order by id desc limit 1`);
    expect(last).toEqual({ action: "org.update", details: { changes: { timezone: { from: "America/Chicago", to: "America/Denver" }, "sms.auth_token": "changed" } } });
  });
});
