import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, startApp } from "./harness/app";
import { capture, spawnCli } from "./harness/capture";
import { testDatabase, type TestDatabase } from "./harness/db";
import { provisionCommand } from "../src/provision/command";
import { keysCommand } from "../src/auth/command";
import { hashKey } from "../src/auth/keys";
import { UsageError } from "../src/errors";
import type { Sql } from "../src/db/client";

const opened: TestDatabase[] = [];
afterAll(() => Promise.all(opened.map((db) => db.drop())));
async function freshDb(): Promise<TestDatabase> {
  const db = await testDatabase();
  opened.push(db);
  return db;
}
const fresh = async (): Promise<Sql> => (await freshDb()).sql;

const dir = mkdtempSync(join(tmpdir(), "leadline-provision-"));
let fileNo = 0;
function fileOf(content: unknown): string {
  const path = join(dir, `p${++fileNo}.json`);
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content, null, 2));
  return path;
}


const provision = (sql: Sql, content: unknown) => capture(() => provisionCommand(sql, [fileOf(content)]));
const failure = (sql: Sql, content: unknown) =>
  provision(sql, content).then(
    () => {
      throw new Error("provisioning was expected to fail");
    },
    (err: Error) => err.message,
  );

const SECRET = "whsec_" + Buffer.from("0123456789abcdef01234567").toString("base64");

/** The example of operations.md §3, with real values where it shows placeholders (…). */
function example() {
  return {
    settings: { COMMS_INBOUND_LIST_ID: 900 },
    orgs: [{
      id: 1, name: "Acme Roofing", company: "Acme Roofing LLC",
      timezone: "America/New_York",
      quiet_hours: { start: "21:00", end: "08:00" },
      consent: "implied",
      billing: { status: "active", subscription: "active", credits: 25.0, sms_cost: 0.01, email_cost: 0.001 },
      sms: { base_url: "https://api.twilio.com", account_sid: "AC0123", auth_token: "tok", from: "5125550100" },
      email: { smtp_url: "smtp://user:pass@smtp.example.com:587", from: "Acme <hello@acme.example>" },
    }],
    campaigns: [{ id: "ACME", org_id: 1, name: "Acme inbound" }],
    lists: [{ id: 101, campaign_id: "ACME", name: "Web leads" }],
    users: [{ id: "agent7", org_id: 1, name: "Dana Diaz" }],
    api_keys: [{ key: "lk_test_acme_leads", name: "site form", org_id: 1,
                 scopes: ["leads:write", "leads:read"], agent: null, active: true }],
    dni_pools: [{ key: "acme-site", org_id: 1, name: "Acme website",
                  numbers: ["5125550101", "5125550102"], fallback: "5125550100",
                  placeholder: "5125550199", ttl_seconds: 1800 }],
    calendars: [{ id: 1, org_id: 1, name: "Estimates", timezone: "America/Chicago",
                  slot_minutes: 30, capacity: 1, min_notice_minutes: 60, horizon_days: 14,
                  hours: { mon: [["09:00", "17:00"]], tue: [["09:00", "12:00"], ["13:00", "17:00"]] },
                  links: [{ slug: "acme-estimate" }] }],
    webhooks: [{ id: 1, org_id: 1, url: "https://hooks.acme.example/leadline", secret: SECRET, events: ["lead.created"] }],
    automations: [{ id: 1, org_id: 1, trigger: "new_lead", channel: "sms",
                    body: "Hi {first_name}, thanks for contacting {company}!" }],
  } as Record<string, any>;
}

const TABLES = ["settings", "orgs", "org_billing", "campaigns", "lists", "users", "api_keys", "dni_pools",
  "dni_numbers", "calendars", "calendar_links", "webhooks", "automations"] as const;

/** Every provisioned table, as text, so that any change at all (updated_at included) shows. */
async function snapshot(sql: Sql): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const table of TABLES) {
    const rows = await sql<{ r: string }[]>`select t::text as r from ${sql(table)} t order by 1`;
    out[table] = rows.map((x) => x.r);
  }
  return out;
}

/** A query's rows as a plain array, for toEqual. */
const rows = async (query: PromiseLike<readonly Record<string, unknown>[]>) => [...(await query)];

const rowCount = async (sql: Sql, table: (typeof TABLES)[number]) =>
  (await sql<{ n: number }[]>`select count(*)::int as n from ${sql(table)}`)[0].n;

describe("provision FILE", () => {
  test("the example of operations.md §3 applies", async () => {
    const sql = await fresh();
    const r = await provision(sql, example());
    expect(r.code).toBe(0);
    expect(r.out).toBe(""); // its only key is given in the file, so nothing is generated
    // The example's key is 18 characters: a warning naming it (never showing it), then the summary.
    const said = r.err.trim().split("\n");
    expect(said).toHaveLength(2);
    expect(said[0]).toMatch(/^warning: api key \d+ "site form" was chosen with 18 characters; chosen keys should have at least 32 random characters/);
    expect(said[1]).toStartWith("provisioned: ");

    const [org] = await sql`select * from orgs`;
    expect(org).toMatchObject({ id: 1, name: "Acme Roofing", company: "Acme Roofing LLC", timezone: "America/New_York",
      quiet_start: "21:00", quiet_end: "08:00", consent: "implied" });
    expect(org.sms).toEqual(example().orgs[0].sms);
    const [billing] = await sql`select status, subscription, credits::float8 as credits, sms_cost::float8 as sms_cost from org_billing`;
    expect(billing).toEqual({ status: "active", subscription: "active", credits: 25, sms_cost: 0.01 });
    expect(await rows(sql`select value from settings where key = 'COMMS_INBOUND_LIST_ID'`)).toEqual([{ value: 900 }]);
    expect(await rows(sql`select id, campaign_id from lists`)).toEqual([{ id: 101, campaign_id: "ACME" }]);
    expect(await rows(sql`select id, org_id from users`)).toEqual([{ id: "agent7", org_id: 1 }]);
    const [key] = await sql`select * from api_keys`;
    expect(key).toMatchObject({ name: "site form", org_id: 1, agent: null, active: true, provisioned: true });
    expect([...key.scopes].sort()).toEqual(["leads:read", "leads:write"]);
    expect(Buffer.from(key.key_hash).equals(hashKey("lk_test_acme_leads"))).toBe(true);
    expect(await rows(sql`select number, active from dni_numbers order by number`)).toEqual([
      { number: "5125550101", active: true },
      { number: "5125550102", active: true },
    ]);
    const [cal] = await sql`select timezone, hours from calendars`;
    expect(cal.hours).toEqual(example().calendars[0].hours);
    expect(await rows(sql`select slug, calendar_id from calendar_links`)).toEqual([{ slug: "acme-estimate", calendar_id: 1 }]);
    expect(await rows(sql`select url, secret, events from webhooks`)).toEqual([
      { url: "https://hooks.acme.example/leadline", secret: SECRET, events: ["lead.created"] },
    ]);
    expect(await rows(sql`select channel, subject, active from automations`)).toEqual([{ channel: "sms", subject: null, active: true }]);
  });

  test("applying the same file twice changes nothing and prints no key the second time", async () => {
    const sql = await fresh();
    const file = example();
    file.api_keys.push({ name: "crm sync", org_id: 1, scopes: ["leads:read"] });
    file.api_keys.push({ name: "platform", org_id: null, scopes: ["metrics:write"], agent: null });

    const first = await provision(sql, file);
    const lines = first.out.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^key \d+ "crm sync" lk_[A-Za-z0-9_-]{43}$/);
    expect(lines[1]).toMatch(/^key \d+ platform lk_[A-Za-z0-9_-]{43}$/);
    const before = await snapshot(sql);

    const second = await provision(sql, file);
    expect(second.out).toBe("");
    expect(second.err).not.toMatch(/[1-9]\d* (created|updated)/);
    expect(second.err).toContain("0 keys generated");
    expect(await snapshot(sql)).toEqual(before);
    expect(await rowCount(sql, "api_keys")).toBe(3);
  });

  test("keys are stored only as hashes; a generated key is printed once and matches its hash", async () => {
    const sql = await fresh();
    const file = example();
    file.api_keys.push({ name: "generated", org_id: 1, scopes: ["cti"], agent: "agent7" });
    const r = await provision(sql, file);
    const [, id, , plaintext] = r.out.trim().split(" ");
    const rows = await sql`select * from api_keys`;
    const dump = JSON.stringify(rows) + rows.map((x) => Buffer.from(x.key_hash).toString("latin1")).join("");
    for (const secret of ["lk_test_acme_leads", plaintext]) expect(dump).not.toContain(secret);
    const [gen] = await sql`select key_hash, agent from api_keys where id = ${Number(id)}`;
    expect(Buffer.from(gen.key_hash).equals(hashKey(plaintext))).toBe(true);
    expect(gen.agent).toBe("agent7");
  });

  test("no clear part of a chosen key is stored; a generated key keeps lk_ and 4 characters", async () => {
    const sql = await fresh();
    const file = example();
    // 37 characters (no warning), every 4 in a row holding a character that is not hex or a digit.
    const chosen = "QZX-vwPK-mTRL-wYHs-UaNo-GJtq-ZzQw-Kk9";
    file.api_keys = [
      { key: chosen, name: "long chosen", org_id: 1, scopes: ["leads:read"] },
      { name: "generated", org_id: 1, scopes: ["cti"] },
    ];
    const r = await provision(sql, file);
    expect(r.err).not.toContain("warning");
    const [, id, , plaintext] = r.out.trim().split(" ");
    const stored = await sql<{ id: number; key_prefix: string; text: string }[]>`
      select id, key_prefix, k::text as text from api_keys k order by id`;
    const given = stored.find((k) => k.id !== Number(id))!;
    expect(given.key_prefix).toBe("");
    // Not even four characters of it in a row, anywhere in the row.
    for (let i = 0; i + 4 <= chosen.length; i++) expect(given.text).not.toContain(chosen.slice(i, i + 4));
    expect(stored.find((k) => k.id === Number(id))!.key_prefix).toBe(plaintext.slice(0, 7));
    expect(plaintext.slice(0, 7)).toMatch(/^lk_[A-Za-z0-9_-]{4}$/);
  });

  test("a chosen key under 32 characters keeps working and is named in a warning on every apply, never shown", async () => {
    const db = await freshDb();
    const sql = db.sql;
    const file = example();
    const short = "Sh0rt-but-valid-key-31-chars-xx"; // 31 characters
    file.api_keys = [
      { key: short, name: "old dialer", org_id: 1, scopes: ["leads:read"] },
      { key: "k".repeat(32), name: "long enough", org_id: 1, scopes: ["leads:read"] },
    ];
    for (let apply = 0; apply < 2; apply++) {
      const r = await provision(sql, file);
      const [row] = await sql<{ id: number }[]>`select id from api_keys where key_hash = ${hashKey(short)}`;
      expect(r.err.split("\n").filter((l) => l.startsWith("warning:"))).toEqual([
        `warning: api key ${row.id} "old dialer" was chosen with 31 characters; chosen keys should have at least 32` +
          " random characters (it keeps working: replace it)",
      ]);
      expect(r.out + r.err).not.toContain(short);
    }
    const app = await startApp(db.url);
    try {
      expect((await call(app.base, "/hooks/api_v1.php?r=leads/999999", { key: short })).status).toBe(404);
    } finally {
      await app.stop();
    }
  });

  test("an unknown section is rejected by name and nothing is written", async () => {
    const sql = await fresh();
    const message = await failure(sql, { ...example(), campaign: [] });
    expect(message).toContain("campaign: unknown section");
    expect(await rowCount(sql, "orgs")).toBe(0);
  });

  test("unknown fields at any depth are rejected with their paths", async () => {
    const sql = await fresh();
    const file = example();
    file.orgs[0].billing.credit = 5;
    file.orgs[0].quiet_hour = { start: "21:00", end: "08:00" };
    file.calendars[0].links[0].url = "x";
    file.settings.BASE_URI = "http://x";
    const message = await failure(sql, file);
    expect(message).toContain("orgs[0].billing.credit: unknown field");
    expect(message).toContain("orgs[0].quiet_hour: unknown field");
    expect(message).toContain("calendars[0].links[0].url: unknown field");
    expect(message).toContain("settings.BASE_URI: unknown field");
    expect(message.split("\n")).toHaveLength(1);
    expect(await rowCount(sql, "orgs")).toBe(0);
  });

  test("wrong types, formats and duplicates are all reported together, each with its path", async () => {
    const sql = await fresh();
    const file = example();
    file.lists.push({ id: "102", campaign_id: "ACME" });
    file.orgs[0].consent = "maybe";
    file.orgs[0].billing.status = "open";
    file.orgs[0].timezone = "Mars/Olympus";
    file.orgs[0].quiet_hours.start = "9pm";
    file.orgs[0].name = null;
    file.orgs[0].sms.base_url = 5;
    file.dni_pools[0].numbers.push("512555");
    file.calendars[0].links.push({ slug: "Acme Estimate" });
    file.calendars[0].hours.wed = [["17:00", "09:00"]];
    file.webhooks[0].url = "ftp://hooks.acme.example/";
    file.webhooks.push({ id: 1, org_id: null, url: "https://h.example/", secret: "sekrit", events: [] });
    file.api_keys[0].scopes.push("leads:delete");
    file.automations[0].channel = "fax";
    file.settings.COMMS_INBOUND_LIST_ID = "900";
    file.settings.BASE_URL = "leads.acme.example";
    const message = await failure(sql, file);
    for (const expected of [
      "lists[1].id: expected integer",
      "orgs[0].consent: expected one of implied, explicit",
      "orgs[0].billing.status: expected one of active, frozen",
      'orgs[0].timezone: unknown time zone "Mars/Olympus"',
      "orgs[0].quiet_hours.start: expected HH:MM time",
      "orgs[0].name: cannot be null (it may not be empty)",
      "orgs[0].sms.base_url: expected string",
      "dni_pools[0].numbers[2]: expected 10-digit phone number",
      "calendars[0].links[1].slug: expected slug",
      "calendars[0].hours.wed[0]: start must be before end",
      "webhooks[0].url: expected an http or https URL",
      'webhooks[1].secret: expected "whsec_" followed by base64',
      "webhooks[1].id: duplicate 1 (also webhooks[0])",
      "api_keys[0].scopes[2]: expected one of leads:read",
      "automations[0].channel: expected one of sms, email, note",
      "settings.COMMS_INBOUND_LIST_ID: expected integer",
      "settings.BASE_URL: expected an http or https URL",
    ]) {
      expect(message).toContain(expected);
    }
    expect(await rowCount(sql, "orgs")).toBe(0);
  });

  test("an empty file and empty sections apply and change nothing", async () => {
    const sql = await fresh();
    const empty = { settings: {}, orgs: [], campaigns: [], lists: [], users: [], api_keys: [], dni_pools: [],
      calendars: [], webhooks: [], automations: [] };
    for (const file of [{}, empty]) {
      const r = await provision(sql, file);
      expect(r.code).toBe(0);
      expect(r.out).toBe("");
    }
    for (const table of TABLES) expect(await rowCount(sql, table)).toBe(0);
  });

  test("a file that is not JSON, or not an object, is rejected", async () => {
    const sql = await fresh();
    expect(await failure(sql, "{ orgs: [] ")).toContain("not valid JSON");
    expect(await failure(sql, "[]")).toContain("expected a JSON object");
  });

  test("dangling references are rejected with their paths and nothing is written", async () => {
    const sql = await fresh();
    const file = example();
    file.lists[0].campaign_id = "NOPE";
    file.users.push({ id: "agent9", org_id: 2 });
    file.api_keys[0].agent = "ghost";
    file.webhooks[0].org_id = 3;
    const message = await failure(sql, file);
    expect(message).toContain('lists[0].campaign_id: campaign "NOPE" does not exist');
    expect(message).toContain("users[1].org_id: org 2 does not exist");
    expect(message).toContain('api_keys[0].agent: user "ghost" does not exist');
    expect(message).toContain("webhooks[0].org_id: org 3 does not exist");
    for (const table of TABLES) expect(await rowCount(sql, table)).toBe(0);
  });

  test("references may be satisfied by the database; an agent of another org is not", async () => {
    const sql = await fresh();
    await provision(sql, { orgs: [{ id: 1, name: "Acme" }, { id: 2, name: "Bolt" }], users: [{ id: "agent9", org_id: 2 }] });
    await provision(sql, { campaigns: [{ id: "ACME", org_id: 1 }] });
    await provision(sql, { lists: [{ id: 101, campaign_id: "ACME" }] });
    expect(await rowCount(sql, "lists")).toBe(1);
    const message = await failure(sql, { api_keys: [{ name: "x", org_id: 1, scopes: ["cti"], agent: "agent9" }] });
    expect(message).toContain('api_keys[0].agent: user "agent9" belongs to org 2, not 1');
    expect(await rowCount(sql, "api_keys")).toBe(0);
  });

  test("a user may not move to another org while a key of its old org is bound to it", async () => {
    const sql = await fresh();
    await provision(sql, {
      orgs: [{ id: 1, name: "Acme" }, { id: 2, name: "Bolt" }],
      users: [{ id: "agent7", org_id: 1 }, { id: "desk", org_id: null }],
      api_keys: [{ name: "dialer", org_id: 1, scopes: ["cti"], agent: "agent7" }, { name: "house", org_id: 2, scopes: ["cti"], agent: "desk" }],
    });
    const [dialer] = await sql`select id from api_keys where name = 'dialer'`;
    const [house] = await sql`select id from api_keys where name = 'house'`;
    const message = await failure(sql, { users: [{ id: "desk", org_id: 1 }, { id: "agent7", org_id: 2 }] });
    expect(message).toBe(
      `provisioning file rejected: users[0].org_id: user "desk" is the agent of API key ${house.id} of org 2, not 1; ` +
        `users[1].org_id: user "agent7" is the agent of API key ${dialer.id} of org 1, not 2`,
    );
    expect([...(await sql`select id, org_id from users order by id`)]).toEqual([{ id: "agent7", org_id: 1 }, { id: "desk", org_id: null }]);
    // Into the house, or along with a key that the same file unbinds, the move is allowed.
    await provision(sql, { users: [{ id: "agent7", org_id: null }] });
    await provision(sql, {
      users: [{ id: "agent7", org_id: 2 }],
      api_keys: [{ name: "dialer", org_id: 1, scopes: ["cti"], agent: null }],
    });
    expect((await sql`select org_id from users where id = 'agent7'`)[0].org_id).toBe(2);
    // A revoked key never acts again and does not hold its agent back.
    await sql`update api_keys set active = false, revoked_at = now() where id = ${house.id}`;
    await provision(sql, { users: [{ id: "desk", org_id: 1 }] });
  });

  test("numbers dropped from a pool are deactivated, not deleted; billing written null is removed, left out is kept", async () => {
    const sql = await fresh();
    await provision(sql, example());
    const file = example();
    file.dni_pools[0].numbers = ["5125550102", "5125550103"];
    delete file.orgs[0].billing;
    const r = await provision(sql, file);
    expect(r.err).toContain("orgs: 1 unchanged;");
    expect(r.err).toContain("dni_pools: 1 updated;");
    expect(await rows(sql`select number, active from dni_numbers order by number`)).toEqual([
      { number: "5125550101", active: false },
      { number: "5125550102", active: true },
      { number: "5125550103", active: true },
    ]);
    expect(await rowCount(sql, "org_billing")).toBe(1);
    file.orgs[0].billing = null;
    expect((await provision(sql, file)).err).toContain("orgs: 1 updated;");
    expect(await rowCount(sql, "org_billing")).toBe(0);
    // A number still active in a pool the file does not mention cannot be given to another.
    const message = await failure(sql, {
      dni_pools: [{ key: "other", org_id: 1, numbers: ["5125550102"] }],
    });
    expect(message).toContain('dni_pools[0].numbers[0]: 5125550102 is active in pool "acme-site"');
    // Nor to another while the file names its pool without numbers: that pool keeps its own.
    const kept = await failure(sql, {
      dni_pools: [{ key: "acme-site", org_id: 1 }, { key: "other", org_id: 1, numbers: ["5125550102"] }],
    });
    expect(kept).toContain('dni_pools[1].numbers[0]: 5125550102 is active in pool "acme-site"');
    // An empty list gives up every number.
    await provision(sql, { dni_pools: [{ key: "acme-site", org_id: 1, numbers: [] }] });
    expect(await rows(sql`select number from dni_numbers where active`)).toEqual([]);
  });

  test("credits are a grant: re-applying gives nothing back that sends spent; a changed grant moves the balance by the difference", async () => {
    const sql = await fresh();
    const withCredits = (credits: number) => {
      const file = example();
      file.orgs[0].billing.credits = credits;
      return file;
    };
    const balance = async () =>
      (await sql<{ credits: number; granted: number }[]>`select credits::float8 as credits, granted::float8 as granted from org_billing`)[0];
    const grants = async () =>
      (await sql<{ amount: number; balance: number }[]>`
        select amount::float8 as amount, balance::float8 as balance from credit_ledger where kind = 'grant' order by id`).map((r) => [r.amount, r.balance]);
    await provision(sql, withCredits(25));
    expect(await balance()).toEqual({ credits: 25, granted: 25 });
    // Sends spend 5 (as the send path does: balance down, under the row lock).
    await sql`update org_billing set credits = credits - 5`;
    await provision(sql, withCredits(25));
    expect(await balance()).toEqual({ credits: 20, granted: 25 });
    await provision(sql, withCredits(30));
    expect(await balance()).toEqual({ credits: 25, granted: 30 });
    await provision(sql, withCredits(10));
    expect(await balance()).toEqual({ credits: 5, granted: 10 });
    // A grant lowered below what was spent empties the balance; it never goes negative.
    await provision(sql, withCredits(0));
    expect(await balance()).toEqual({ credits: 0, granted: 0 });
    expect(await grants()).toEqual([[25, 25], [5, 25], [-20, 5], [-5, 0]]);
  });

  test("a revoked key stays revoked; a revoked generated key is replaced; a rotated one is kept", async () => {
    const sql = await fresh();
    const file = example();
    file.api_keys.push({ name: "bot", org_id: 1, scopes: ["leads:read"] });
    const first = await provision(sql, file);
    const botId = Number(first.out.split(" ")[1]);
    const [given] = await sql<{ id: number }[]>`select id from api_keys where name = 'site form'`;

    await capture(() => keysCommand(sql, ["revoke", String(given.id)]));
    await capture(() => keysCommand(sql, ["rotate", String(botId)]));
    const again = await provision(sql, file);
    expect(again.out).toBe(""); // the rotated key is provisioned too, so it is found again
    expect(await rows(sql`select active from api_keys where id = ${given.id}`)).toEqual([{ active: false }]);

    const [rotated] = await sql<{ id: number }[]>`select id from api_keys where name = 'bot' and revoked_at is null`;
    await capture(() => keysCommand(sql, ["revoke", String(rotated.id)]));
    const replaced = await provision(sql, file);
    expect(replaced.out).toMatch(/^key \d+ bot lk_\S+\n$/);
  });

  test("usage: exactly one FILE", async () => {
    const sql = await fresh();
    await expect(provisionCommand(sql, [])).rejects.toBeInstanceOf(UsageError);
    await expect(provisionCommand(sql, ["a.json", "b.json"])).rejects.toBeInstanceOf(UsageError);
    await expect(provisionCommand(sql, ["--dry-run"])).rejects.toBeInstanceOf(UsageError);
    await expect(provisionCommand(sql, ["--dry-run", "--dry-run", "a.json"])).rejects.toBeInstanceOf(UsageError);
    await expect(provisionCommand(sql, ["--dry", "a.json"])).rejects.toBeInstanceOf(UsageError);
    await expect(provisionCommand(sql, [join(dir, "missing.json")])).rejects.toThrow("cannot read");
  });

  test("the executable: exit 1 and one stderr line on a bad file; keys on stdout on a good one", async () => {
    const db = await freshDb();
    const run = (file: string) => spawnCli(db.url, "provision", file);
    const bad = example();
    bad.orgs[0].billing.credit = 1;
    bad.lists[0].id = "101";
    const rejected = await run(fileOf(bad));
    expect(rejected.code).toBe(1);
    expect(rejected.out).toBe("");
    expect(rejected.err.trimEnd().split("\n")).toHaveLength(1);
    expect(rejected.err).toContain("orgs[0].billing.credit: unknown field; lists[0].id: expected integer");

    const crossed = example();
    crossed.orgs.push({ id: 2, name: "Bolt" });
    crossed.users.push({ id: "agent9", org_id: 2 });
    crossed.api_keys.push({ name: "bot", org_id: 1, scopes: ["cti"], agent: "agent9" });
    const refused = await run(fileOf(crossed));
    expect(refused.code).toBe(1);
    expect(refused.out).toBe("");
    expect(refused.err).toBe(
      "leadline: provisioning file rejected: api_keys[1].agent: user \"agent9\" belongs to org 2, not 1 " +
        "(a key of an organization may be bound only to a user of that organization or to a house user)\n",
    );

    const good = example();
    good.api_keys.push({ name: "bot", org_id: 1, scopes: ["cti"] });
    const applied = await run(fileOf(good));
    expect(applied.code).toBe(0);
    expect(applied.out).toMatch(/^key \d+ bot lk_\S+\n$/);
    // The example's chosen key is short: warned about on stderr, so stdout still holds only secrets.
    expect(applied.err).toMatch(/^warning: api key \d+ "site form" was chosen with 18 characters;[^\n]*\nprovisioned: /);
  });
});

describe("deploy/provision.example.json", () => {
  test("the example shipped for operators applies, and twice generates its keys once", async () => {
    const db = await freshDb();
    const file = join(import.meta.dir, "..", "deploy", "provision.example.json");
    const first = await capture(() => provisionCommand(db.sql, [file]));
    expect(first.code).toBe(0);
    expect(first.out.trim().split("\n").filter((l) => l.startsWith("key ")).length).toBe(2);
    const again = await capture(() => provisionCommand(db.sql, [file]));
    expect(again.code).toBe(0);
    expect(again.out.trim()).toBe("");
  });
});
