import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testDatabase, type TestDatabase } from "./harness/db";
import { call, startApp, type TestApp } from "./harness/app";
import { makeKey, makeLead, seedWorld } from "./harness/factory";
import { expectEventsMatchModels } from "./harness/events";
import { LOCK_WAIT_MS } from "../src/db/deadline";
import { connect } from "../src/db/client";
import { createOrDedupLeadIn, resolveList } from "../src/leads/queries";
import { parseLeadInput } from "../src/leads/model";

let db: TestDatabase;
let app: TestApp;
let acme: string; // tenant key of org 1
let bolt: string; // tenant key of org 2
let global: string;
let readOnly: string;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url);
  acme = (await makeKey(db.sql, { scopes: ["leads:write", "leads:read"], org: 1 })).key;
  bolt = (await makeKey(db.sql, { scopes: ["leads:write", "leads:read"], org: 2 })).key;
  global = (await makeKey(db.sql, { scopes: ["leads:write", "leads:read"] })).key;
  readOnly = (await makeKey(db.sql, { scopes: ["leads:read"], org: 1 })).key;
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

const intake = (key: string | undefined, json: unknown, headers: Record<string, string> = {}) =>
  call(app.base, "/hooks/lead_intake.php", { method: "POST", key, json, headers });

const EXACT_LEAD_FIELDS = ["address1", "campaign", "city", "email", "first_name", "last_name", "lead_id", "phone", "postal_code", "state", "status"];

describe("lead intake", () => {
  test("creates a lead with every field rule applied, and get lead returns exactly the contract's fields", async () => {
    const r = await intake(acme, {
      phone: "+1 (512) 555-0142",
      list_id: 101,
      first_name: "A".repeat(70),
      last_name: "Ng",
      email: "  Dana@Example.COM ",
      address1: "x".repeat(130),
      city: "Austin",
      state: "tx",
      postal_code: "78701-12345678901234567",
      source: "s".repeat(60),
      extra: { anything: true },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true, lead_id: expect.any(Number), deduped: false });
    expect(Object.keys(r.body).sort()).toEqual(["deduped", "lead_id", "ok"]);
    const got = await call(app.base, `/hooks/api_v1.php?r=leads/${r.body.lead_id}`, { key: acme });
    expect(got.status).toBe(200);
    expect(Object.keys(got.body).sort()).toEqual(["lead", "ok"]);
    expect(Object.keys(got.body.lead).sort()).toEqual(EXACT_LEAD_FIELDS);
    expect(got.body.lead).toEqual({
      lead_id: r.body.lead_id,
      first_name: "A".repeat(60),
      last_name: "Ng",
      phone: "5125550142",
      email: "dana@example.com",
      address1: "x".repeat(120),
      city: "Austin",
      state: "TX",
      postal_code: "78701-12345678901234",
      status: "NEW",
      campaign: "ACME",
    });
    const [row] = await db.sql`select source from leads where id = ${r.body.lead_id}`;
    expect(row.source).toBe("s".repeat(50));
  });

  test("an invalid email is emptied without failing; a leading US 1 is removed", async () => {
    const r = await intake(acme, { phone: "15125550143", list_id: 101, email: "not-an-email" });
    expect(r.status).toBe(200);
    const got = await call(app.base, `/hooks/api_v1.php?r=leads/${r.body.lead_id}`, { key: acme });
    expect(got.body.lead.email).toBe("");
    expect(got.body.lead.phone).toBe("5125550143");
  });

  test("form bodies work, and the api_key body field is accepted when no header is sent", async () => {
    const form = new URLSearchParams({ phone: "5125550144", list_id: "101", first_name: "Form", api_key: acme });
    const r = await call(app.base, "/hooks/lead_intake.php", { method: "POST", body: form });
    expect(r.status).toBe(200);
    expect(r.body.deduped).toBe(false);
    const multi = new FormData();
    multi.set("phone", "5125550145");
    multi.set("list_id", "101");
    multi.set("api_key", acme);
    const m = await call(app.base, "/hooks/lead_intake.php", { method: "POST", body: multi });
    expect(m.status).toBe(200);
    const j = await intake(undefined, { phone: "5125550146", api_key: acme, list_id: 101 });
    expect(j.status).toBe(200);
  });

  test("the header is preferred over the body field", async () => {
    const r = await intake(readOnly, { phone: "5125550147", list_id: 101, api_key: acme });
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ ok: false, error: "forbidden" });
  });

  test("a phone under 10 digits, or none, is 422 bad_phone and nothing is written", async () => {
    const before = await db.sql`select count(*)::int as n from leads`;
    for (const phone of ["512555014", "", null, { x: 1 }, ["5125550148"], "abc"]) {
      const r = await intake(acme, { phone, list_id: 101 });
      expect(r.status).toBe(422);
      expect(r.body.error).toBe("bad_phone");
    }
    const none = await intake(acme, { list_id: 101 });
    expect(none.body.error).toBe("bad_phone");
    const after = await db.sql`select count(*)::int as n from leads`;
    expect(after[0].n).toBe(before[0].n);
  });

  test("numeric JSON types are accepted as text", async () => {
    const r = await intake(acme, { phone: 5125550149, list_id: "101", postal_code: 78701, first_name: true });
    expect(r.status).toBe(200);
    const got = await call(app.base, `/hooks/api_v1.php?r=leads/${r.body.lead_id}`, { key: acme });
    expect(got.body.lead.postal_code).toBe("78701");
  });

  test("duplicates in the resolved list return the newest lead untouched, without hopper, trigger or event", async () => {
    const first = await intake(acme, { phone: "5125550150", list_id: 101, first_name: "One", hopper: true });
    // A second lead with that phone can exist by another path (booking, dialer import); dedup returns the newest.
    const second = { body: { lead_id: await makeLead(db.sql, { list: 101, phone: "5125550150", first: "One" }) } };
    const dup = await intake(acme, { phone: "(512) 555-0150", list_id: 101, first_name: "Changed", hopper: "yes" });
    expect(dup.status).toBe(200);
    expect(dup.body).toEqual({ ok: true, lead_id: second.body.lead_id, deduped: true });
    const lead = await call(app.base, `/hooks/api_v1.php?r=leads/${second.body.lead_id}`, { key: acme });
    expect(lead.body.lead.first_name).toBe("One");
    const hopper = await db.sql`select lead_id from hopper where lead_id in (${first.body.lead_id}, ${second.body.lead_id})`;
    expect(hopper.map((h) => h.lead_id)).toEqual([first.body.lead_id]);
    const events = await db.sql`select count(*)::int as n from outbox_events where payload->'data'->>'phone' = '5125550150'`;
    expect(events[0].n).toBe(1);
    const triggers = await db.sql`select count(*)::int as n from automation_triggers where lead_id in (${first.body.lead_id}, ${second.body.lead_id})`;
    expect(triggers[0].n).toBe(1);
  });

  test("the same phone in another list is a new lead", async () => {
    const a = await intake(acme, { phone: "5125550151", list_id: 101 });
    const b = await intake(acme, { phone: "5125550151", list_id: 102 });
    expect(b.body.deduped).toBe(false);
    expect(b.body.lead_id).not.toBe(a.body.lead_id);
  });

  test("a fresh lead writes channels, hopper, new_lead trigger and a lead.created event with source", async () => {
    const r = await intake(acme, {
      phone: "5125550152",
      list_id: 101,
      email: "x@y.co",
      source: "google-ads",
      hopper: 1,
      consent: { sms: true },
    });
    const id = r.body.lead_id;
    const channels = await db.sql`select channel, address, consent from lead_channels where lead_id = ${id} order by channel`;
    expect([...channels]).toEqual([
      { channel: "email", address: "x@y.co", consent: "none" },
      { channel: "sms", address: "5125550152", consent: "in" },
    ]);
    expect((await db.sql`select campaign_id from hopper where lead_id = ${id}`)[0].campaign_id).toBe("ACME");
    const [trg] = await db.sql`select org_id, trigger from automation_triggers where lead_id = ${id}`;
    expect(trg).toEqual({ org_id: 1, trigger: "new_lead" });
    const [evt] = await db.sql`select org_id, payload from outbox_events where (payload->'data'->>'lead_id')::bigint = ${id}`;
    expect(evt.org_id).toBe(1);
    expect(evt.payload.type).toBe("lead.created");
    expect(evt.payload.data).toEqual({
      lead_id: id,
      list_id: 101,
      campaign: "ACME",
      org_id: 1,
      phone: "5125550152",
      source: "google-ads",
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      attribution: null,
    });
    expect(evt.payload.timestamp).toMatch(/Z$/);
    const noHop = await intake(acme, { phone: "5125550153", list_id: 101, hopper: "0" });
    expect((await db.sql`select count(*)::int as n from hopper where lead_id = ${noHop.body.lead_id}`)[0].n).toBe(0);
  });

  test("list resolution: other org's list and missing list fall back to the inbound list; none → 422 invalid_list", async () => {
    // No inbound list configured: a tenant key naming another org's list fails.
    const r = await intake(acme, { phone: "5125550154", list_id: 201 });
    expect(r.status).toBe(422);
    expect(r.body.error).toBe("invalid_list");
    expect((await intake(acme, { phone: "5125550154" })).body.error).toBe("invalid_list");
    expect((await intake(acme, { phone: "5125550154", list_id: 99999 })).body.error).toBe("invalid_list");
    // The global key can use any list.
    const g = await intake(global, { phone: "5125550154", list_id: 201 });
    expect(g.status).toBe(200);
    // A provisioned inbound list in the key's org is used when the list is missing or invalid.
    await db.sql`insert into settings (key, value) values ('COMMS_INBOUND_LIST_ID', '102')`;
    const fb = await intake(acme, { phone: "5125550155", list_id: 201 });
    expect(fb.status).toBe(200);
    expect((await db.sql`select list_id from leads where id = ${fb.body.lead_id}`)[0].list_id).toBe(102);
    // Tenant confinement: an inbound list outside the key's org is not usable by that key.
    const b = await intake(bolt, { phone: "5125550155" });
    expect(b.body.error).toBe("invalid_list");
    await db.sql`delete from settings where key = 'COMMS_INBOUND_LIST_ID'`;
  });

  test("COMMS_INBOUND_LIST_ID in the environment overrides the provisioned setting", async () => {
    await db.sql`insert into settings (key, value) values ('COMMS_INBOUND_LIST_ID', '102')`;
    const other = await startApp(db.url, { COMMS_INBOUND_LIST_ID: "900" });
    try {
      const r = await call(other.base, "/hooks/lead_intake.php", { method: "POST", key: global, json: { phone: "5125550156" } });
      expect(r.status).toBe(200);
      expect((await db.sql`select list_id from leads where id = ${r.body.lead_id}`)[0].list_id).toBe(900);
    } finally {
      await other.stop();
      await db.sql`delete from settings where key = 'COMMS_INBOUND_LIST_ID'`;
    }
  });

  test("20 concurrent intakes of one phone into one list create exactly one lead", async () => {
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => intake(acme, { phone: "5125550160", list_id: 101, first_name: `r${i}` })),
    );
    expect(replies.every((r) => r.status === 200)).toBe(true);
    const ids = new Set(replies.map((r) => r.body.lead_id));
    expect(ids.size).toBe(1);
    expect(replies.filter((r) => !r.body.deduped).length).toBe(1);
    const [n] = await db.sql`select count(*)::int as n from leads where phone = '5125550160'`;
    expect(n.n).toBe(1);
    const [e] = await db.sql`select count(*)::int as n from outbox_events where payload->'data'->>'phone' = '5125550160'`;
    expect(e.n).toBe(1);
  });

  test("an intake waits its turn behind another of the same phone longer than serve's lock wait, within the deadline", async () => {
    const conn = await db.sql.reserve();
    try {
      await conn`begin`;
      await conn`select pg_advisory_xact_lock(hashtextextended(${"lead:101:5125550161"}, 0))`;
      const pending = intake(acme, { phone: "5125550161", list_id: 101 });
      // Past LOCK_WAIT_MS (a hot table's statements give up there), well inside the 1 s deadline.
      await Bun.sleep(LOCK_WAIT_MS + 300);
      await conn`commit`;
      const r = await pending;
      expect([r.status, r.body.deduped]).toEqual([200, false]);
    } finally {
      conn.release();
    }
  });

  test("past its turn an intake waits for other locks only as long as serve's lock wait: a locked leads table is a quick 503", async () => {
    // The deadline's lock wait is for the (list, phone) lock alone: the rest of the transaction
    // waiting a second on a locked table held a connection four times as long as other statements.
    const sql = connect(db.url, { max: 1, statementTimeoutMs: 0, lockTimeoutMs: LOCK_WAIT_MS });
    try {
      const list = (await resolveList(sql, null, 101, null))!;
      const wait = await sql.begin(async (tx) => {
        await createOrDedupLeadIn(tx, list, parseLeadInput({ phone: "5125550162", list_id: 101 })!, new Date());
        const [{ lock_timeout }] = await tx`select current_setting('lock_timeout') as lock_timeout`;
        return lock_timeout;
      });
      expect(wait).toBe(`${LOCK_WAIT_MS}ms`);
    } finally {
      await sql.end({ timeout: 1 });
    }
    const conn = await db.sql.reserve();
    try {
      await conn`begin`;
      await conn`lock table leads in access exclusive mode`;
      const r = await intake(acme, { phone: "5125550163", list_id: 101 });
      expect([r.status, r.body.error]).toEqual([503, "unavailable"]);
    } finally {
      await conn`rollback`;
      conn.release();
    }
    expect((await intake(acme, { phone: "5125550163", list_id: 101 })).status).toBe(200);
  });

  test("bad bodies get contract errors, never 500", async () => {
    const raw = (body: string | Uint8Array, type?: string) =>
      call(app.base, "/hooks/lead_intake.php", {
        method: "POST",
        key: acme,
        body,
        headers: type ? { "content-type": type } : {},
      });
    expect((await raw("{not json", "application/json")).body.error).toBe("malformed_json");
    expect((await raw("[1,2,3]", "application/json")).body.error).toBe("malformed_body");
    expect((await raw("42", "application/json")).status).toBe(422);
    expect((await raw(new Uint8Array([0, 255, 254, 1, 2, 3]), "application/octet-stream")).status).toBe(422);
    const big = await raw(JSON.stringify({ phone: "5125550170", pad: "x".repeat(200_000) }), "application/json");
    expect(big.status).toBe(413);
    expect(big.body.error).toBe("body_too_large");
    const nul = await intake(acme, { phone: "5125550171", list_id: 101, first_name: "a\u0000b", city: "\ud800x" });
    expect(nul.status).toBe(200);
    const junkMultipart = await raw("--x\r\ngarbage", "multipart/form-data; boundary=x");
    expect(junkMultipart.status).toBe(422);
  });
});

describe("get lead", () => {
  test("missing and other-org leads are the same 404, byte for byte; the global key sees all", async () => {
    const r = await intake(bolt, { phone: "5125550180", list_id: 201 });
    const other = await fetch(`${app.base}/hooks/api_v1.php?r=leads/${r.body.lead_id}`, { headers: { "x-api-key": acme } });
    const missing = await fetch(`${app.base}/hooks/api_v1.php?r=leads/987654321`, { headers: { "x-api-key": acme } });
    expect(other.status).toBe(404);
    expect(missing.status).toBe(404);
    const a = await other.text();
    expect(a).toBe(await missing.text());
    expect(JSON.parse(a)).toEqual({ ok: false, error: "not_found" });
    const g = await call(app.base, `/hooks/api_v1.php?r=leads/${r.body.lead_id}`, { key: global });
    expect(g.status).toBe(200);
    expect(g.body.lead.campaign).toBe("BOLT");
  });
});

test("every event written matches its model (src/events/model.ts)", () => expectEventsMatchModels(db.sql, ["lead.created"]));
