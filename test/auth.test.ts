import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testDatabase, type TestDatabase } from "./harness/db";
import { call, startApp, type TestApp } from "./harness/app";
import { expectKeyRefusals, KEY_ROUTES } from "./harness/auth-matrix";
import { makeKey, seedWorld } from "./harness/factory";

let db: TestDatabase;
let app: TestApp;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url);
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("every key-authenticated route fails closed", () => {
  for (const route of KEY_ROUTES) {
    test(route.name, () => expectKeyRefusals(app.base, db.sql, route));
  }
});

describe("api keys", () => {
  test("keys are stored only as hashes", async () => {
    const { id, key } = await makeKey(db.sql, { scopes: ["leads:read"] });
    const [row] = await db.sql`select * from api_keys where id = ${id}`;
    expect(JSON.stringify(Object.values(row).map(String))).not.toContain(key);
  });

  test("cti/dial and the cti queue need a bound agent", async () => {
    const key = (await makeKey(db.sql, { scopes: ["cti"], org: 1 })).key;
    const d = await call(app.base, "/hooks/api_v1.php?r=cti/dial", { method: "POST", key, json: { phone: "5125550100" } });
    expect(d.status).toBe(403);
    expect(d.body).toEqual({ ok: false, error: "no_bound_agent" });
    const q = await call(app.base, "/hooks/cti_queue.php", { key });
    expect(q.body).toEqual({ ok: false, error: "no_bound_agent" });
    // Lookup needs no agent.
    const l = await call(app.base, "/hooks/api_v1.php?r=cti/lookup&phone=5125550100", { key });
    expect(l.status).toBe(200);
  });

  test("last use is recorded (coalesced)", async () => {
    const { id, key } = await makeKey(db.sql, { scopes: ["leads:read"] });
    const before = Date.now();
    await call(app.base, "/hooks/api_v1.php?r=leads/1", { key });
    const after = Date.now();
    await app.running.deps.keys.flushLastUse();
    const [row] = await db.sql`select last_used_at from api_keys where id = ${id}`;
    expect(row.last_used_at).toBeInstanceOf(Date);
    // The time of the request (the instance's clock, the real one here), however long it took.
    expect(row.last_used_at.getTime()).toBeGreaterThanOrEqual(before);
    expect(row.last_used_at.getTime()).toBeLessThanOrEqual(after);
  });

  test("a revocation reaches a running instance's cache through NOTIFY", async () => {
    const { id, key } = await makeKey(db.sql, { scopes: ["leads:read"] });
    expect((await call(app.base, "/hooks/api_v1.php?r=leads/1", { key })).status).toBe(404);
    await db.sql`update api_keys set active = false, revoked_at = now() where id = ${id}`;
    await db.sql`select pg_notify('leadline_keys', '')`;
    let status = 0;
    for (let i = 0; i < 50 && status !== 403; i++) {
      await Bun.sleep(20);
      status = (await call(app.base, "/hooks/api_v1.php?r=leads/1", { key })).status;
    }
    expect(status).toBe(403);
  });

  test("an over-long or odd key header is simply forbidden", async () => {
    for (const key of ["x".repeat(5000), "lk_\"<>%00", " "]) {
      const r = await call(app.base, "/hooks/api_v1.php?r=leads/1", { key });
      expect(r.status).toBe(403);
    }
  });
});

describe("api_v1 routing", () => {
  test("only the contract's method/r pairs exist; everything else is 404 not_found", async () => {
    const key = (await makeKey(db.sql, { scopes: ["leads:read", "conversations:read", "cti", "messages:write"], agent: "agent7" })).key;
    const cases: [string, string][] = [
      ["GET", ""],
      ["GET", "?r="],
      ["GET", "?r=leads/"],
      ["GET", "?r=leads/abc"],
      ["GET", "?r=leads/1/x"],
      ["GET", "?r=messages"],
      ["GET", "?r=cti/dial"],
      ["POST", "?r=leads/1"],
      ["POST", "?r=conversations/1"],
      ["POST", "?r=cti/lookup"],
      ["POST", "?r=nope"],
      ["PUT", "?r=messages"],
      ["DELETE", "?r=leads/1"],
    ];
    for (const [method, q] of cases) {
      const r = await call(app.base, `/hooks/api_v1.php${q}`, { method, key, json: method === "GET" ? undefined : {} });
      expect({ method, q, status: r.status, body: r.body }).toEqual({ method, q, status: 404, body: { ok: false, error: "not_found" } });
    }
    const unknownPath = await call(app.base, "/hooks/nothing.php");
    expect(unknownPath.status).toBe(404);
    expect(unknownPath.body).toEqual({ ok: false, error: "not_found" });
  });
});

describe("health", () => {
  test("/healthz and /readyz", async () => {
    expect((await call(app.base, "/healthz")).body).toEqual({ ok: true });
    const r = await call(app.base, "/readyz");
    expect(r.status).toBe(200);
  });
});
