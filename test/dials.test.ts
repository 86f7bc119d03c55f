// Who reaches a dial (src/cti/reach.ts), over cti_queue.php claims and calls.php reports by
// dial_id, for every pairing of queuing key and claiming/reporting key. All dials here are queued
// for the house agent house1, the agent that keys of both organizations may be bound to.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { migrate } from "../src/db/migrate";
import { migrations } from "../src/db/migrations";
import { testDatabase, type TestDatabase } from "./harness/db";
import { call, startApp, type TestApp } from "./harness/app";
import { makeKey, makeLead, seedWorld } from "./harness/factory";

let db: TestDatabase;
let app: TestApp;

type Queuer = "platform" | "org1" | "org2";
type Actor = "platform@house1" | "org1@house1" | "org2@house1" | "platform@agent7" | "org1@agent7" | "org2@agent9";
const QUEUERS: Queuer[] = ["platform", "org1", "org2"];
const ACTORS: Actor[] = ["platform@house1", "org1@house1", "org2@house1", "platform@agent7", "org1@agent7", "org2@agent9"];
const GRANTS: Record<Queuer | Actor, { org: number | null; agent: string }> = {
  platform: { org: null, agent: "house1" },
  org1: { org: 1, agent: "house1" },
  org2: { org: 2, agent: "house1" },
  "platform@house1": { org: null, agent: "house1" },
  "org1@house1": { org: 1, agent: "house1" },
  "org2@house1": { org: 2, agent: "house1" },
  "platform@agent7": { org: null, agent: "agent7" },
  "org1@agent7": { org: 1, agent: "agent7" },
  "org2@agent9": { org: 2, agent: "agent9" },
};
const keys = {} as Record<Queuer | Actor, string>;

/** The phone each queuer dials when its dial has a lead: a lead of its organization (org 2's for the platform). */
const LEAD_PHONE: Record<Queuer, string> = { platform: "5170000002", org1: "5170000001", org2: "5170000002" };
const LEADS = {} as Record<Queuer, number>;
const NO_LEAD_PHONE = "5179999999";

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url);
  for (const [name, grant] of Object.entries(GRANTS)) {
    keys[name as Queuer | Actor] = (await makeKey(db.sql, { scopes: ["cti", "calls:write"], org: grant.org, agent: grant.agent, name })).key;
  }
  LEADS.org1 = await makeLead(db.sql, { list: 101, phone: LEAD_PHONE.org1, first: "Ann", last: "Acme" });
  LEADS.org2 = LEADS.platform = await makeLead(db.sql, { list: 201, phone: LEAD_PHONE.org2, first: "Bo", last: "Bolt" });
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

async function queue(queuer: Queuer, withLead: boolean): Promise<{ id: number; lead_id: number | null; phone: string }> {
  const phone = withLead ? LEAD_PHONE[queuer] : NO_LEAD_PHONE;
  const r = await call(app.base, "/hooks/api_v1.php?r=cti/dial", { method: "POST", key: keys[queuer], json: { phone } });
  const lead_id = withLead ? LEADS[queuer] : null;
  expect(r.status).toBe(200);
  expect(r.body).toEqual({ ok: true, id: expect.any(Number), lead_id });
  return { id: r.body.id, lead_id, phone };
}

const claim = (actor: Actor) => call(app.base, "/hooks/cti_queue.php", { key: keys[actor] });
const report = (actor: Actor, dialId: number, summary = `from ${actor}`) =>
  call(app.base, "/hooks/calls.php", {
    method: "POST",
    key: keys[actor],
    json: { dial_id: dialId, status: "ANSWERED", secs: 30, agent: "house1", ai_summary: summary },
  });
const dialRow = async (id: number) =>
  (await db.sql`select status, (select count(*)::int from calls c where c.dial_id = d.id) as calls from dials d where id = ${id}`)[0];

/**
 * The rule, written out as a table: the keys that reach a dial queued by `queuer` for house1.
 * Platform keys reach every dial. A tenant key reaches its organization's dials (by lead, or by
 * the queuing key when there is no lead) and the platform's dials for its own agent; a dial with
 * a lead of org 2 queued by the platform is also org 2's.
 */
const REACH: Record<Queuer, Record<"lead" | "none", Actor[]>> = {
  platform: {
    lead: ["platform@house1", "org1@house1", "org2@house1", "platform@agent7", "org2@agent9"],
    none: ["platform@house1", "org1@house1", "org2@house1", "platform@agent7"],
  },
  org1: {
    lead: ["platform@house1", "org1@house1", "platform@agent7", "org1@agent7"],
    none: ["platform@house1", "org1@house1", "platform@agent7", "org1@agent7"],
  },
  org2: {
    lead: ["platform@house1", "org2@house1", "platform@agent7", "org2@agent9"],
    none: ["platform@house1", "org2@house1", "platform@agent7", "org2@agent9"],
  },
};
/** Claims also need the dial's agent: only keys bound to house1 ever claim these dials. */
const claims = (actor: Actor, queuer: Queuer, lead: "lead" | "none") => actor.endsWith("@house1") && REACH[queuer][lead].includes(actor);

const CASES = QUEUERS.flatMap((queuer) =>
  (["lead", "none"] as const).flatMap((lead) => ACTORS.map((actor) => ({ queuer, lead, actor }))),
);

/** What a claimed dial also says (issue 31; test/do-not-contact-dials.test.ts sets the clock for them). */
const WINDOW_FIELDS = { dnc: false, outside_window: expect.any(Boolean), local_time: expect.any(String) };

describe("cti_queue.php claims only dials within reach", () => {
  test.each(CASES)("queued by $queuer ($lead), claimed by $actor", async ({ queuer, lead, actor }) => {
    // One pending dial at a time, so the claim answers for this dial alone.
    await db.sql`update dials set status = 'done' where status = 'pending'`;
    const d = await queue(queuer, lead === "lead");
    const r = await claim(actor);
    expect(r.status).toBe(200);
    if (claims(actor, queuer, lead)) {
      const name = d.lead_id === null ? null : d.lead_id === LEADS.org1 ? "Ann Acme" : "Bo Bolt";
      expect(r.body).toEqual({ ok: true, dial: { id: d.id, lead_id: d.lead_id, phone: d.phone, name, epoch: expect.any(Number), ...WINDOW_FIELDS } });
      expect((await dialRow(d.id)).status).toBe("dialing");
    } else {
      expect(r.body).toEqual({ ok: true, dial: null });
      expect((await dialRow(d.id)).status).toBe("pending");
    }
  });

  test("a dial out of reach is passed over, not blocking the next one the key reaches", async () => {
    await db.sql`update dials set status = 'done' where status = 'pending'`;
    const foreign = await queue("org2", true);
    const own = await queue("org1", false);
    const r = await claim("org1@house1");
    expect(r.body).toEqual({ ok: true, dial: { id: own.id, lead_id: null, phone: NO_LEAD_PHONE, name: null, epoch: expect.any(Number), ...WINDOW_FIELDS } });
    expect((await claim("org1@house1")).body).toEqual({ ok: true, dial: null });
    expect((await dialRow(foreign.id)).status).toBe("pending");
    expect((await claim("org2@house1")).body.dial.id).toBe(foreign.id);
  });
});

describe("calls.php reports by dial_id only for dials within reach", () => {
  test.each(CASES)("queued by $queuer ($lead), reported by $actor", async ({ queuer, lead, actor }) => {
    const d = await queue(queuer, lead === "lead");
    const r = await report(actor, d.id);
    if (REACH[queuer][lead].includes(actor)) {
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ ok: true, call_id: expect.any(Number), lead_id: d.lead_id });
      expect(await dialRow(d.id)).toEqual({ status: "done", calls: 1 });
    } else {
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ ok: false, error: "not_found", message: "no such dial" });
      expect(await dialRow(d.id)).toEqual({ status: "pending", calls: 0 });
    }
  });
});

describe("the reported incident", () => {
  test("org 1's key bound to org 2's house agent neither claims org 2's dial nor reports into its conversation", async () => {
    await db.sql`update dials set status = 'done' where status = 'pending'`;
    const d = await queue("org2", true);
    expect((await claim("org1@house1")).body).toEqual({ ok: true, dial: null });
    const r = await report("org1@house1", d.id, "planted by org 1");
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ ok: false, error: "not_found", message: "no such dial" });
    const events = await db.sql`select count(*)::int as n from outbox_events where payload::text like '%planted by org 1%'`;
    expect(events[0].n).toBe(0);
    const conv = await call(app.base, `/hooks/api_v1.php?r=conversations/${LEADS.org2}`, {
      key: (await makeKey(db.sql, { scopes: ["conversations:read"], org: 2 })).key,
    });
    expect(conv.status).toBe(200);
    expect(JSON.stringify(conv.body)).not.toContain("planted by org 1");
  });

  test("a lead that moves to another organization takes its dials along", async () => {
    await db.sql`update dials set status = 'done' where status = 'pending'`;
    const lead = await makeLead(db.sql, { list: 102, phone: "5170000003", first: "Moe" });
    const r = await call(app.base, "/hooks/api_v1.php?r=cti/dial", { method: "POST", key: keys.org1, json: { phone: "5170000003" } });
    expect(r.body.lead_id).toBe(lead);
    await db.sql`update leads set list_id = 201 where id = ${lead}`;
    expect((await claim("org1@house1")).body).toEqual({ ok: true, dial: null });
    expect((await report("org1@house1", r.body.id)).status).toBe(404);
    expect((await claim("org2@house1")).body.dial).toMatchObject({ id: r.body.id, lead_id: lead, name: "Moe" });
  });

  test("a dial whose lead is deleted stays with the organization that queued it", async () => {
    const lead = await makeLead(db.sql, { list: 201, phone: "5170000004" });
    const r = await call(app.base, "/hooks/api_v1.php?r=cti/dial", { method: "POST", key: keys.org2, json: { phone: "5170000004" } });
    expect(r.body.lead_id).toBe(lead);
    await db.sql`delete from leads where id = ${lead}`;
    expect((await report("org1@house1", r.body.id)).status).toBe(404);
    expect((await report("org2@house1", r.body.id)).body).toEqual({ ok: true, call_id: expect.any(Number), lead_id: null });
  });
});

describe("migration 0011 on a database that already has dials", () => {
  test("each dial takes its queuing key's organization, else its lead's, else none", async () => {
    const old = await testDatabase();
    try {
      await old.sql.unsafe("drop schema public cascade; create schema public");
      await migrate(old.sql, migrations.slice(0, 10));
      await seedWorld(old.sql);
      const [orgLead] = await old.sql`insert into leads (list_id, phone) values (201, '5170000010') returning id`;
      const key = async (org: number | null) =>
        (await old.sql`insert into api_keys (key_hash, key_prefix, org_id, agent) values (${Buffer.from(String(Math.random()))}, 'lk_', ${org}, 'house1') returning id`)[0].id;
      const [platform, org1, org2] = [await key(null), await key(1), await key(2)];
      const dial = async (keyId: number | null, leadId: number | null) =>
        (await old.sql`insert into dials (agent, key_id, lead_id, phone) values ('house1', ${keyId}, ${leadId}, '5170000010') returning id`)[0].id;
      const ids = {
        platformWithOrg2Lead: await dial(platform, orgLead.id),
        org1NoLead: await dial(org1, null),
        org2WithLead: await dial(org2, orgLead.id),
        noKeyOrg2Lead: await dial(null, orgLead.id),
        noKeyNoLead: await dial(null, null),
      };
      expect(await migrate(old.sql)).toEqual(migrations.slice(10).map((m) => m.name));
      const scope = async (id: number) => (await old.sql`select queued_org_id from dials where id = ${id}`)[0].queued_org_id;
      expect({
        platformWithOrg2Lead: await scope(ids.platformWithOrg2Lead),
        org1NoLead: await scope(ids.org1NoLead),
        org2WithLead: await scope(ids.org2WithLead),
        noKeyOrg2Lead: await scope(ids.noKeyOrg2Lead),
        noKeyNoLead: await scope(ids.noKeyNoLead),
      }).toEqual({ platformWithOrg2Lead: null, org1NoLead: 1, org2WithLead: 2, noKeyOrg2Lead: 2, noKeyNoLead: null });
    } finally {
      await old.drop();
    }
  });
});
