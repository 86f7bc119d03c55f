// Bad input of every shape gets a 4xx with a contract code, never a 500 or a crash, and loses
// nothing already accepted.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testDatabase, type TestDatabase } from "./harness/db";
import { call, startApp, type TestApp } from "./harness/app";
import { ALL_SCOPES, makeKey, seedWorld } from "./harness/factory";

let db: TestDatabase;
let app: TestApp;
let keys: string[];

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url);
  keys = await Promise.all(Array.from({ length: 12 }, () => makeKey(db.sql, { scopes: ALL_SCOPES, org: 1, agent: "agent7" }).then((k) => k.key)));
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

let used = 0;
// Spread requests over keys so the hourly limits never answer first.
const key = () => keys[Math.floor(used++ / 100) % keys.length];

const POST_ROUTES = [
  "/hooks/lead_intake.php",
  "/hooks/api_v1.php?r=cti/dial",
  "/hooks/api_v1.php?r=messages",
  "/hooks/kpi_ingest.php",
  "/hooks/calls.php",
];

function junkBodies(): [string, string | Uint8Array, string | null][] {
  const rnd = (n: number) => crypto.getRandomValues(new Uint8Array(n));
  const values = [null, true, false, 0, -1, 1e308, "", "x", [], {}, [[]], { a: { b: {} } }, "\u0000", "\ud800", "𝕏".repeat(100)];
  const fields = ["phone", "list_id", "email", "first_name", "state", "hopper", "consent", "metric_key", "value", "points", "status", "secs", "lead_id", "dial_id", "api_key"];
  const out: [string, string | Uint8Array, string | null][] = [
    ["empty", "", "application/json"],
    ["binary", rnd(4096), "application/octet-stream"],
    ["binary-json", rnd(4096), "application/json"],
    ["binary-form", rnd(4096), "application/x-www-form-urlencoded"],
    ["binary-multipart", rnd(4096), "multipart/form-data; boundary=zz"],
    ["no-type", "phone=5125550100", null],
    ["deep", "[".repeat(10_000) + "]".repeat(10_000), "application/json"],
    ["huge", "x".repeat(2_000_000), "application/json"],
    ["huge-json-string", JSON.stringify({ phone: "5125550100", first_name: "y".repeat(500_000) }), "application/json"],
    ["proto", '{"__proto__":{"polluted":1},"constructor":{"prototype":{"x":1}},"phone":"5125550100"}', "application/json"],
    ["form-proto", "__proto__=1&phone=5125550100&toString=x", "application/x-www-form-urlencoded"],
  ];
  for (const f of fields) for (const v of values) out.push([`${f}=${JSON.stringify(v)}`, JSON.stringify({ [f]: v }), "application/json"]);
  return out;
}

describe("junk never makes a 500", () => {
  for (const path of POST_ROUTES) {
    test(path, async () => {
      for (const [label, body, type] of junkBodies()) {
        const headers: Record<string, string> = { "x-api-key": key() };
        if (type) headers["content-type"] = type;
        const res = await fetch(app.base + path, { method: "POST", body, headers });
        const text = await res.text();
        const ok = res.status < 500;
        if (!ok) throw new Error(`${path} ${label}: ${res.status} ${text.slice(0, 200)}`);
        const parsed = JSON.parse(text);
        expect(typeof parsed.ok).toBe("boolean");
        if (!parsed.ok) expect(typeof parsed.error).toBe("string");
      }
    }, 60_000);
  }

  test("JSON that is not an object is 422 malformed_body on every body-reading route", async () => {
    for (const path of POST_ROUTES) {
      // KPI takes a bare array of points; every other route wants an object.
      const bodies = path.includes("kpi") ? ["42", "null", '"5125550142"', "true"] : ["[1]", "42", "null", '"5125550142"', "[]", "true"];
      for (const body of bodies) {
        const r = await call(app.base, path, { method: "POST", key: key(), body, headers: { "content-type": "application/json" } });
        expect({ path, body, status: r.status, error: r.body.error }).toEqual({ path, body, status: 422, error: "malformed_body" });
      }
    }
  });

  test("GET routes with odd queries", async () => {
    const qs = ["r=leads/99999999999999999999", "r=leads/0", "r=conversations/-1", "r=cti/lookup&phone=%00%ff", "r=cti/lookup&phone=" + "9".repeat(5000), "r=%E0%A4%A", "r=leads/1&r=leads/2"];
    for (const q of qs) {
      const r = await call(app.base, `/hooks/api_v1.php?${q}`, { key: key() });
      expect(r.status).toBeLessThan(500);
    }
  });

  test("the service still works and kept what it accepted", async () => {
    const r = await call(app.base, "/hooks/lead_intake.php", { method: "POST", key: key(), json: { phone: "5125559876", list_id: 101 } });
    expect(r.status).toBe(200);
    const got = await call(app.base, `/hooks/api_v1.php?r=leads/${r.body.lead_id}`, { key: key() });
    expect(got.body.lead.phone).toBe("5125559876");
  });
});
