// Each lead carries its campaign and organization (sql/0002), so tenant reads touch one table.
// These tests move leads, lists and campaigns around and check that every read follows at once,
// and that the copies cannot be written around the triggers.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { migrate } from "../src/db/migrate";
import { migrations } from "../src/db/migrations";
import { testDatabase, type TestDatabase } from "./harness/db";
import { call, startApp, type TestApp } from "./harness/app";
import { makeKey, makeLead, seedWorld } from "./harness/factory";

let db: TestDatabase;
let app: TestApp;
let acme: string; // org 1
let bolt: string; // org 2
let global: string;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url);
  const scopes = ["leads:read", "cti", "conversations:read"];
  acme = (await makeKey(db.sql, { scopes, org: 1, agent: "agent7" })).key;
  bolt = (await makeKey(db.sql, { scopes, org: 2, agent: "agent9" })).key;
  global = (await makeKey(db.sql, { scopes, agent: "house1" })).key;
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

const getLead = (key: string, id: number) => call(app.base, `/hooks/api_v1.php?r=leads/${id}`, { key });
const lookup = (key: string, phone: string) => call(app.base, `/hooks/api_v1.php?r=cti/lookup&phone=${phone}`, { key });
const conversation = (key: string, id: number) => call(app.base, `/hooks/api_v1.php?r=conversations/${id}`, { key });

/** Status of get lead, lookup and conversation for `key`, and the campaign get lead reports. */
async function seenBy(key: string, id: number, phone: string) {
  const [lead, found, conv] = await Promise.all([getLead(key, id), lookup(key, phone), conversation(key, id)]);
  return {
    lead: lead.status,
    campaign: lead.body?.lead?.campaign ?? null,
    lookup: found.body?.found ? found.body.lead_id : null,
    conversation: conv.status,
  };
}

const visible = (id: number, campaign: string) => ({ lead: 200, campaign, lookup: id, conversation: 200 });
const hidden = { lead: 404, campaign: null, lookup: null, conversation: 404 };

describe("lead placement follows its list, campaign and organization", () => {
  test("a new lead takes its list's campaign and organization", async () => {
    const id = await makeLead(db.sql, { list: 102, phone: "5120000101" });
    const [row] = await db.sql`select campaign_id, org_id from leads where id = ${id}`;
    expect(row).toEqual({ campaign_id: "ACME", org_id: 1 });
    expect(await seenBy(acme, id, "5120000101")).toEqual(visible(id, "ACME"));
    expect(await seenBy(bolt, id, "5120000101")).toEqual(hidden);
  });

  test("a lead moved to another org's list changes hands at once", async () => {
    const id = await makeLead(db.sql, { list: 101, phone: "5120000102" });
    await db.sql`update leads set list_id = 201 where id = ${id}`;
    expect(await seenBy(acme, id, "5120000102")).toEqual(hidden);
    expect(await seenBy(bolt, id, "5120000102")).toEqual(visible(id, "BOLT"));
  });

  test("a list moved to another campaign moves its leads", async () => {
    await db.sql`insert into lists (id, campaign_id, name) values (103, 'ACME', 'Moving')`;
    const id = await makeLead(db.sql, { list: 103, phone: "5120000103" });
    await db.sql`update lists set campaign_id = 'BOLT' where id = 103`;
    expect(await seenBy(acme, id, "5120000103")).toEqual(hidden);
    expect(await seenBy(bolt, id, "5120000103")).toEqual(visible(id, "BOLT"));
  });

  test("a campaign moved to another organization, or to none, moves the leads of all its lists", async () => {
    await db.sql`insert into campaigns (id, org_id, name) values ('SPLIT', 1, 'Split')`;
    await db.sql`insert into lists (id, campaign_id, name) values (104, 'SPLIT', 'A'), (105, 'SPLIT', 'B')`;
    const a = await makeLead(db.sql, { list: 104, phone: "5120000104" });
    const b = await makeLead(db.sql, { list: 105, phone: "5120000105" });
    await db.sql`update campaigns set org_id = 2 where id = 'SPLIT'`;
    expect(await seenBy(acme, a, "5120000104")).toEqual(hidden);
    expect(await seenBy(bolt, b, "5120000105")).toEqual(visible(b, "SPLIT"));
    await db.sql`update campaigns set org_id = null where id = 'SPLIT'`;
    expect(await seenBy(bolt, a, "5120000104")).toEqual(hidden);
    expect(await seenBy(global, a, "5120000104")).toEqual(visible(a, "SPLIT"));
  });

  test("the copies cannot be written directly: the trigger derives them again", async () => {
    const id = await makeLead(db.sql, { list: 201, phone: "5120000106" });
    await db.sql`update leads set org_id = 1, campaign_id = 'ACME' where id = ${id}`;
    const [row] = await db.sql`select campaign_id, org_id from leads where id = ${id}`;
    expect(row).toEqual({ campaign_id: "BOLT", org_id: 2 });
    expect(await seenBy(acme, id, "5120000106")).toEqual(hidden);
    const [inserted] = await db.sql<{ id: number }[]>`
      insert into leads (list_id, phone, org_id, campaign_id) values (201, '5120000107', 1, 'ACME') returning id`;
    expect(await seenBy(acme, inserted.id, "5120000107")).toEqual(hidden);
    expect(await seenBy(bolt, inserted.id, "5120000107")).toEqual(visible(inserted.id, "BOLT"));
  });

  test("a campaign without an organization is seen by platform-global keys only", async () => {
    const id = await makeLead(db.sql, { list: 900, phone: "5120000108" });
    expect(await seenBy(acme, id, "5120000108")).toEqual(hidden);
    expect(await seenBy(global, id, "5120000108")).toEqual(visible(id, "HOUSE"));
  });
});

describe("concurrent reads of many keys share statements, each answered for its own key", () => {
  test("120 get-lead and lookup requests at once, from three keys of different reach", async () => {
    // Leads in org 1, org 2 and the org-less HOUSE campaign, with distinct phones.
    const placed = [
      { list: 101, phone: "5130000001" },
      { list: 201, phone: "5130000002" },
      { list: 900, phone: "5130000003" },
    ];
    const ids = await Promise.all(placed.map((p) => makeLead(db.sql, p)));
    const reach: Record<string, number[]> = { acme: [ids[0]], bolt: [ids[1]], global: ids };
    const keys: Record<string, string> = { acme, bolt, global };
    const jobs = Array.from({ length: 120 }, (_, n) => ({ who: ["acme", "bolt", "global"][n % 3], which: Math.floor(n / 3) % 3, kind: n % 2 }));
    const replies = await Promise.all(
      jobs.map((j) => (j.kind ? getLead(keys[j.who], ids[j.which]) : lookup(keys[j.who], placed[j.which].phone))),
    );
    jobs.forEach((j, n) => {
      const sees = reach[j.who].includes(ids[j.which]);
      const r = replies[n];
      if (j.kind) {
        expect(r.status).toBe(sees ? 200 : 404);
        if (sees) expect(r.body.lead.lead_id).toBe(ids[j.which]);
      } else {
        expect(r.status).toBe(200);
        expect(r.body).toEqual(sees ? { ok: true, found: true, lead_id: ids[j.which], name: "" } : { ok: true, found: false });
      }
    });
  });
});

describe("a dial belongs to the agent it was queued for", () => {
  // A platform key may be bound to an agent of some organization and dial any organization's
  // leads; the agent's own tenant key then reaches that dial, and nothing else of its lead.
  test("the agent sees and reports the dial by dial_id; by lead_id, and everywhere else, the lead stays out of reach", async () => {
    const platformForAgent7 = (await makeKey(db.sql, { scopes: ["cti"], agent: "agent7" })).key;
    const agent7 = (await makeKey(db.sql, { scopes: ["cti", "calls:write", "leads:read", "conversations:read"], org: 1, agent: "agent7" })).key;
    const acmeDialer = (await makeKey(db.sql, { scopes: ["calls:write"], org: 1 })).key;
    const boltDialer = (await makeKey(db.sql, { scopes: ["calls:write"], org: 2 })).key;
    const platformDialer = (await makeKey(db.sql, { scopes: ["calls:write"] })).key;
    const boltLead = await makeLead(db.sql, { list: 201, phone: "5140000001", first: "Bo", last: "Bolt" });

    const dialed = await call(app.base, "/hooks/api_v1.php?r=cti/dial", { method: "POST", key: platformForAgent7, json: { phone: "5140000001" } });
    expect(dialed.body).toEqual({ ok: true, id: expect.any(Number), lead_id: boltLead });
    const claimed = await call(app.base, "/hooks/cti_queue.php", { key: agent7 });
    expect(claimed.body.dial).toEqual({
      id: dialed.body.id, lead_id: boltLead, phone: "5140000001", name: "Bo Bolt", epoch: expect.any(Number),
      dnc: false, outside_window: expect.any(Boolean), local_time: expect.stringMatching(/-0[45]:00$/),
    });

    const report = (key: string, json: Record<string, unknown>) =>
      call(app.base, "/hooks/calls.php", { method: "POST", key, json: { status: "ANSWERED", secs: 5, agent: "agent7", ...json } });
    // By lead_id the agent's tenant key cannot reach the other organization's lead.
    expect((await report(agent7, { lead_id: boltLead })).status).toBe(404);
    expect((await report(agent7, { lead_id: boltLead, dial_id: dialed.body.id })).status).toBe(404);
    expect((await getLead(agent7, boltLead)).status).toBe(404);
    expect((await conversation(agent7, boltLead)).status).toBe(404);
    // Another key of the agent's organization, not bound to the agent, does not reach the dial.
    expect((await report(acmeDialer, { dial_id: dialed.body.id })).status).toBe(404);
    // The agent reports it by dial_id.
    const byAgent = await report(agent7, { dial_id: dialed.body.id });
    expect(byAgent.status).toBe(200);
    expect(byAgent.body).toEqual({ ok: true, call_id: expect.any(Number), lead_id: boltLead });
    // Keys that may address the lead anyway reach the dial too: its organization's, the platform's.
    expect((await report(boltDialer, { dial_id: dialed.body.id })).status).toBe(200);
    expect((await report(platformDialer, { dial_id: dialed.body.id })).status).toBe(200);
  });
});

describe("migration 0002 on a database that already has leads", () => {
  test("fills in every existing lead's campaign and organization", async () => {
    const old = await testDatabase();
    try {
      await old.sql.unsafe("drop schema public cascade; create schema public");
      await migrate(old.sql, migrations.slice(0, 1));
      await seedWorld(old.sql);
      await old.sql`insert into leads (list_id, phone) values (101, '5120000201'), (201, '5120000202'), (900, '5120000203')`;
      expect(await migrate(old.sql)).toEqual(migrations.slice(1).map((m) => m.name));
      const rows = await old.sql`select list_id, campaign_id, org_id from leads order by list_id`;
      expect([...rows]).toEqual([
        { list_id: 101, campaign_id: "ACME", org_id: 1 },
        { list_id: 201, campaign_id: "BOLT", org_id: 2 },
        { list_id: 900, campaign_id: "HOUSE", org_id: null },
      ]);
    } finally {
      await old.drop();
    }
  });
});
