import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testDatabase, type TestDatabase } from "./harness/db";
import { call, startApp, type TestApp } from "./harness/app";
import { makeKey, makeLead, seedWorld } from "./harness/factory";
import { expectEventsMatchModels } from "./harness/events";

let db: TestDatabase;
let app: TestApp;
let acme: string; // cti + calls, bound to agent7 (org 1)
let bolt: string; // cti, bound to agent9 (org 2)
let global: string;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url);
  acme = (await makeKey(db.sql, { scopes: ["cti", "calls:write", "conversations:read"], org: 1, agent: "agent7" })).key;
  bolt = (await makeKey(db.sql, { scopes: ["cti", "calls:write"], org: 2, agent: "agent9" })).key;
  global = (await makeKey(db.sql, { scopes: ["cti", "calls:write"], agent: "house1" })).key;
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

const lookup = (key: string, phone: string) =>
  call(app.base, `/hooks/api_v1.php?r=cti/lookup&phone=${encodeURIComponent(phone)}`, { key });
const dial = (key: string, json: unknown) => call(app.base, "/hooks/api_v1.php?r=cti/dial", { method: "POST", key, json });

describe("cti lookup", () => {
  test("matches the newest lead by last 10 digits and discloses only found, lead_id, name", async () => {
    await makeLead(db.sql, { phone: "5125551000", first: "Old" });
    const newest = await makeLead(db.sql, { phone: "5125551000", first: "New", last: "Lead" });
    const r = await lookup(acme, "+1 (512) 555-1000");
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true, found: true, lead_id: newest, name: "New Lead" });
    const none = await lookup(acme, "5125559999");
    expect(none.body).toEqual({ ok: true, found: false });
  });

  test("a tenant key searches only its organization; the global key searches all", async () => {
    const id = await makeLead(db.sql, { phone: "5125551001", list: 201 });
    expect((await lookup(acme, "5125551001")).body).toEqual({ ok: true, found: false });
    expect((await lookup(bolt, "5125551001")).body.lead_id).toBe(id);
    expect((await lookup(global, "5125551001")).body.lead_id).toBe(id);
  });

  test("fewer than 10 digits, or no phone, is 422 bad_phone", async () => {
    for (const q of ["&phone=512555100", "&phone=", "&phone=abcdefghijkl", ""]) {
      const r = await call(app.base, `/hooks/api_v1.php?r=cti/lookup${q}`, { key: acme });
      expect(r.status).toBe(422);
      expect(r.body).toEqual({ ok: false, error: "bad_phone", message: expect.any(String) });
    }
  });
});

describe("cti dial and queue", () => {
  test("queues a dial for the bound agent, matched in scope; lead_id null when no lead matches", async () => {
    const id = await makeLead(db.sql, { phone: "5125552000" });
    const r = await dial(acme, { phone: "1-512-555-2000", extra: true });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true, id: expect.any(Number), lead_id: id });
    const none = await dial(acme, { phone: "5125552999" });
    expect(none.body).toEqual({ ok: true, id: expect.any(Number), lead_id: null });
    const other = await dial(bolt, { phone: "5125552000" });
    expect(other.body.lead_id).toBeNull();
    const [row] = await db.sql`select agent, status, phone from dials where id = ${r.body.id}`;
    expect(row).toEqual({ agent: "agent7", status: "pending", phone: "15125552000" });
  });

  test("bad phones are 422 bad_phone, form bodies work", async () => {
    for (const phone of ["555-2000", "", null, 12345]) {
      const r = await dial(acme, { phone });
      expect(r.status).toBe(422);
      expect(r.body.error).toBe("bad_phone");
    }
    expect((await dial(acme, {})).body.error).toBe("bad_phone");
    const form = await call(app.base, "/hooks/api_v1.php?r=cti/dial", { method: "POST", body: new URLSearchParams({ phone: "5125552001", api_key: acme }) });
    expect(form.status).toBe(200);
  });

  test("the agent claims its dials oldest first, each exactly once, even when polled concurrently", async () => {
    await db.sql`update dials set status = 'done' where agent = 'agent9'`;
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push((await dial(bolt, { phone: `51255530${10 + i}` })).body.id);
    const claims = await Promise.all(Array.from({ length: 8 }, () => call(app.base, "/hooks/cti_queue.php", { key: bolt })));
    const got = claims.map((c) => c.body.dial?.id).filter(Boolean).sort((a, b) => a - b);
    expect(got).toEqual(ids);
    expect(claims.filter((c) => c.body.dial === null).length).toBe(3);
    const first = claims.find((c) => c.body.dial?.id === ids[0])!;
    expect(first.body.dial).toEqual({
      id: ids[0], lead_id: null, phone: "5125553010", name: null, epoch: expect.any(Number),
      // Calling-window facts on the real clock here (test/do-not-contact-dials.test.ts sets it).
      dnc: false, outside_window: expect.any(Boolean), local_time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d-0[56]:00$/),
    });
    const statuses = await db.sql`select distinct status from dials where id = any(${ids}::bigint[])`;
    expect(statuses.map((s) => s.status)).toEqual(["dialing"]);
  });
});

describe("call reports", () => {
  test("a report joins the lead's conversation and ends its dial", async () => {
    const id = await makeLead(db.sql, { phone: "5125554000" });
    const d = await dial(acme, { phone: "5125554000" });
    const r = await call(app.base, "/hooks/calls.php", {
      method: "POST",
      key: acme,
      json: { dial_id: d.body.id, status: "ANSWERED", secs: 61, agent: "agent7", recording_id: 77, ai_summary: "wants a quote", epoch: 1_700_000_000 },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true, call_id: expect.any(Number), lead_id: id });
    expect((await db.sql`select status from dials where id = ${d.body.id}`)[0].status).toBe("done");
    const c = await call(app.base, `/hooks/api_v1.php?r=conversations/${id}`, { key: acme });
    expect(c.body.entries).toEqual([
      { kind: "call", status: "ANSWERED", secs: 61, agent: "agent7", recording_id: 77, ai_summary: "wants a quote", epoch: 1_700_000_000 },
    ]);
  });

  test("a report by phone matches the newest lead in scope; out-of-scope leads and dials are not_found", async () => {
    const id = await makeLead(db.sql, { phone: "5125554001" });
    const r = await call(app.base, "/hooks/calls.php", { method: "POST", key: acme, json: { phone: "5125554001", status: "NOANSWER", secs: 0, agent: "agent7" } });
    expect(r.body.lead_id).toBe(id);
    const other = await call(app.base, "/hooks/calls.php", { method: "POST", key: bolt, json: { lead_id: id, status: "X", secs: 1, agent: "a" } });
    expect(other.status).toBe(404);
    expect(other.body.error).toBe("not_found");
    const d = await dial(acme, { phone: "5125554001" });
    const od = await call(app.base, "/hooks/calls.php", { method: "POST", key: bolt, json: { dial_id: d.body.id, status: "X", secs: 1, agent: "a" } });
    expect(od.status).toBe(404);
  });

  test("invalid reports are 422 invalid_input naming the field", async () => {
    const cases: [unknown, string][] = [
      [{ phone: "5125554002", secs: 1, agent: "a" }, "status"],
      [{ phone: "5125554002", status: "A", secs: -1, agent: "a" }, "secs"],
      [{ phone: "5125554002", status: "A", secs: "abc", agent: "a" }, "secs"],
      [{ status: "A", secs: 1, agent: "a" }, "lead_id"],
      [{ lead_id: "x", status: "A", secs: 1, agent: "a" }, "lead_id"],
      [{ phone: "5125554002", status: "A", secs: 1, epoch: "soon", agent: "a" }, "epoch"],
      // operations.md §4 lists status, secs and agent as required.
      [{ phone: "5125554002", status: "A", agent: "a" }, "secs"],
      [{ phone: "5125554002", status: "A", secs: 1 }, "agent"],
      [{ phone: "5125554002", status: "A", secs: 1, agent: "  " }, "agent"],
      [{ phone: "5125554002", status: "A", secs: 1, agent: {} }, "agent"],
    ];
    for (const [json, field] of cases) {
      const r = await call(app.base, "/hooks/calls.php", { method: "POST", key: acme, json });
      expect(r.status).toBe(422);
      expect(r.body.error).toBe("invalid_input");
      expect(r.body.message).toStartWith(field);
    }
  });
});

test("every event written matches its model (src/events/model.ts)", () => expectEventsMatchModels(db.sql, ["call.completed"]));
