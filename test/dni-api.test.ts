// POST /hooks/dni.php and GET /dni.js over HTTP against the real service: the contract's statuses,
// codes and exact fields, CORS on every answer, bad input of every kind, the per-address limit,
// the client address per TRUST_PROXY, the write-behind worker, and call attribution via calls.php.
import { createHmac } from "node:crypto";
import { Value } from "@sinclair/typebox/value";
import { LeaseResult } from "../src/dni/model";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { dniEngine } from "../src/dni/instance";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { overlappingHolds, poolNumbers, provisionPools, T0 } from "./harness/dni";
import { makeKey } from "./harness/factory";

const SALT = "test-salt";
/** The pool of the generated-input test: fewer numbers than leases, so some answer the fallback. */
const FUZZ_NUMBERS = Array.from({ length: 30 }, (_, i) => `646555${String(101 + i).padStart(4, "0")}`);
let db: TestDatabase;
let app: TestApp;
let clock: ManualClock;
const apps: TestApp[] = [];

async function launch(env: Record<string, string> = {}, c = clock): Promise<TestApp> {
  const a = await startApp(db.url, { NPK_IP_SALT: SALT, ...env }, { clock: c });
  apps.push(a);
  return a;
}

beforeAll(async () => {
  db = await testDatabase();
  clock = new ManualClock(T0);
  await provisionPools(db.sql, [
    { numbers: poolNumbers(50) },
    { key: "tiny", numbers: ["7375550101"], fallback: "7375550100", placeholder: "7375550199", ttl_seconds: 60 },
    { key: "p".repeat(49), numbers: ["9035550101"] },
    { key: "fuzz", numbers: FUZZ_NUMBERS },
  ]);
  app = await launch();
});
afterAll(async () => {
  await Promise.all(apps.map((a) => a.stop()));
  await db?.drop();
});

const CORS_ONLY = { "access-control-allow-origin": "*" };
let ipCounter = 0;
/** A fresh client address per call unless one is given, so tests do not share a rate bucket. */
const dni = (action: string | null, json?: unknown, init: RequestInit & { ip?: string; base?: string } = {}) => {
  const headers = new Headers(init.headers);
  if (!headers.has("x-forwarded-for")) headers.set("x-forwarded-for", init.ip ?? `10.1.${Math.floor(++ipCounter / 250)}.${ipCounter % 250}`);
  const path = action === null ? "/hooks/dni.php" : `/hooks/dni.php?action=${action}`;
  return call(init.base ?? app.base, path, { method: "POST", json, ...init, headers });
};

function expectCors(h: Headers) {
  expect(h.get("access-control-allow-origin")).toBe("*");
  expect(h.get("access-control-allow-credentials")).toBeNull();
}

describe("CORS and methods", () => {
  test("an OPTIONS preflight is 204, allowing POST and content-type for a long time, without credentials", async () => {
    const r = await call(app.base, "/hooks/dni.php?action=lease", {
      method: "OPTIONS",
      headers: { origin: "https://acme.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
    });
    expect(r.status).toBe(204);
    expect(r.body).toBe("");
    expectCors(r.headers);
    expect(r.headers.get("access-control-allow-methods")).toBe("POST");
    expect(r.headers.get("access-control-allow-headers")).toBe("content-type");
    expect(Number(r.headers.get("access-control-max-age"))).toBeGreaterThanOrEqual(3600);
  });

  test("any other method than POST is 405 with CORS", async () => {
    for (const method of ["GET", "PUT", "DELETE", "PATCH"]) {
      const r = await call(app.base, "/hooks/dni.php?action=lease", { method });
      expect({ method, status: r.status, body: r.body }).toEqual({ method, status: 405, body: { ok: false, error: "method_not_allowed" } });
      expectCors(r.headers);
      expect(r.headers.get("allow")).toBe("POST, OPTIONS");
    }
    const head = await fetch(app.base + "/hooks/dni.php?action=lease", { method: "HEAD" });
    expect(head.status).toBe(405);
    expectCors(head.headers);
  });

  test("an origin is never reflected and credentials are never allowed", async () => {
    const r = await dni("lease", { pool: "acme-site", visitor: "cors1" }, { headers: { origin: "https://evil.example", cookie: "a=b" } });
    expect(r.status).toBe(200);
    expectCors(r.headers);
  });
});

describe("validation", () => {
  test("unknown or missing action: 400 unknown_action", async () => {
    for (const action of ["nope", "", "LEASE", null]) {
      const r = await dni(action, { pool: "acme-site", visitor: "v" });
      expect({ action, status: r.status, body: r.body }).toEqual({ action, status: 400, body: { ok: false, error: "unknown_action" } });
      expectCors(r.headers);
    }
  });

  test("unknown, missing, mistyped or over-48-character pool: 404 pool_not_found, for every action", async () => {
    for (const action of ["lease", "heartbeat", "event"]) {
      for (const pool of ["nope", "", undefined, null, 42, ["acme-site"], { k: 1 }, "p".repeat(49)]) {
        const r = await dni(action, { pool, visitor: "v1" });
        expect({ action, pool, status: r.status, body: r.body }).toEqual({ action, pool, status: 404, body: { ok: false, error: "pool_not_found" } });
        expectCors(r.headers);
      }
    }
  });

  test("missing visitor, or one with no allowed character: 422 visitor_required", async () => {
    for (const action of ["lease", "heartbeat", "event"]) {
      for (const visitor of [undefined, null, "", "  ", "!!!", "éé", {}, []]) {
        const r = await dni(action, { pool: "acme-site", visitor });
        expect({ action, visitor, status: r.status, body: r.body }).toEqual({ action, visitor, status: 422, body: { ok: false, error: "visitor_required" } });
        expectCors(r.headers);
      }
    }
  });

  test("the visitor is sanitized to letters, digits, _ and - and cut to 48", async () => {
    const raw = "a.b c<d>e_f-g" + "h".repeat(60);
    const r = await dni("lease", { pool: "acme-site", visitor: raw });
    expect(r.status).toBe(200);
    const [row] = await db.sql`select visitor from dni_visitors where visitor like 'abcde_f-g%'`;
    expect(row.visitor).toBe(("abcde_f-g" + "h".repeat(60)).slice(0, 48));
    // The same visitor, spelled with other junk, holds the same number.
    const again = await dni("lease", { pool: "acme-site", visitor: "a b.c!d?e_f-g" + "h".repeat(39) + "zzz" });
    expect(again.body.number).toBe(r.body.number);
  });

  test("bodies over 65,536 bytes are not read and fail field validation (never a bare 413), with or without a length", async () => {
    const padded = JSON.stringify({ pool: "acme-site", visitor: "big", pad: "x".repeat(70_000) });
    const declared = await dni("lease", undefined, { body: padded, headers: { "content-type": "application/json" } });
    expect({ status: declared.status, body: declared.body }).toEqual({ status: 404, body: { ok: false, error: "pool_not_found" } });
    expectCors(declared.headers);
    // Streamed without a Content-Length: cut off at the limit.
    const chunks = [new TextEncoder().encode(padded)];
    const stream = new ReadableStream({ pull(c) { const next = chunks.shift(); if (next) c.enqueue(next); else c.close(); } });
    const streamed = await dni("lease", undefined, { body: stream, headers: { "content-type": "application/json" } });
    expect({ status: streamed.status, body: streamed.body }).toEqual({ status: 404, body: { ok: false, error: "pool_not_found" } });
    expectCors(streamed.headers);
    // A megabyte: still answered, still with CORS.
    const huge = await dni("lease", undefined, { body: "x".repeat(1024 * 1024) });
    expect(huge.status).toBe(404);
    expectCors(huge.headers);
    // Just under the limit is read.
    const fits = JSON.stringify({ pool: "acme-site", visitor: "fits", pad: "x".repeat(65_000) });
    expect((await dni("lease", undefined, { body: fits })).status).toBe(200);
  });

  test("non-JSON and non-object bodies fail field validation", async () => {
    for (const body of ["not json", "{", "[1,2]", '"acme-site"', "null", "42", ""]) {
      const r = await dni("lease", undefined, { body, headers: { "content-type": "application/json" } });
      expect({ body, status: r.status, error: r.body.error }).toEqual({ body, status: 404, error: "pool_not_found" });
      expectCors(r.headers);
    }
  });

  test("JSON sent as text/plain (the script's simple request) and form data are read", async () => {
    const plain = await dni("lease", undefined, { body: JSON.stringify({ pool: "acme-site", visitor: "plain1" }), headers: { "content-type": "text/plain;charset=UTF-8" } });
    expect(plain.body.ok).toBe(true);
    const form = await dni("lease", undefined, { body: "pool=acme-site&visitor=form1", headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(form.body.ok).toBe(true);
    // JSON declared as a form, as `curl -d '{…}'` sends it.
    const curlish = await dni("lease", undefined, { body: JSON.stringify({ pool: "acme-site", visitor: "curl1" }), headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(curlish.body.ok).toBe(true);
  });
});

describe("generated input", () => {
  test("any body for any action: 200, 404 or 422 with CORS, never a 500; every number leased is held and every event acknowledged is stored", async () => {
    const text = fc.oneof(fc.string({ unit: "binary", maxLength: 300 }), fc.string({ maxLength: 20 }));
    const field = fc.oneof(text, fc.anything({ maxDepth: 2 }));
    const body = fc.record(
      {
        pool: fc.oneof(fc.constant("fuzz"), field),
        visitor: field,
        utm: fc.oneof(fc.dictionary(fc.constantFrom("source", "medium", "campaign", "term", "content", "x"), field), field),
        gclid: field, landing: field, referrer: field,
        kind: fc.oneof(fc.constantFrom("pageview", "form", "custom"), field), name: field, value: field, meta: field,
      },
      { requiredKeys: [] },
    );
    const leased = new Map<string, string>();
    let events = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom("lease", "heartbeat", "event"), body, async (action, json) => {
        const r = await dni(action, json);
        expect([200, 404, 422]).toContain(r.status);
        expectCors(r.headers);
        expect(typeof r.body.ok).toBe("boolean");
        if (action === "lease" && r.status === 200 && r.body.fallback === false) leased.set(r.body.number, JSON.stringify(json));
        if (action === "event" && r.status === 200 && (json as { pool?: unknown }).pool === "fuzz") events++;
      }),
      { numRuns: 150 },
    );
    expect(leased.size).toBeGreaterThan(0);
    const held = await db.sql<{ number: string }[]>`
      select number from dni_holds where number = any(${[...leased.keys()]}) and visitor_id is not null and expires_at > ${new Date(clock.now())}`;
    expect(held.map((h) => h.number).sort()).toEqual([...leased.keys()].sort());
    // Every event acknowledged is written (behind, with the next batch).
    await dniEngine(app.running.deps).flush();
    const [{ n }] = await db.sql`select count(*)::int as n from dni_events where pool_key = 'fuzz'`;
    expect(events).toBeGreaterThan(0);
    expect(n).toBe(events);
  }, 60_000);
});

describe("actions", () => {
  test("lease: the contract's fields exactly; a returning visitor keeps the number; exhausted → fallback", async () => {
    const first = await dni("lease", { pool: "tiny", visitor: "t1", utm: { source: "google" } });
    expect({ status: first.status, body: first.body }).toEqual({
      status: 200,
      body: { ok: true, number: "7375550101", formatted: "(737) 555-0101", ttl: 60, fallback: false, placeholder: "7375550199", placeholder_formatted: "(737) 555-0199" },
    });
    expectCors(first.headers);
    expect(first.headers.get("content-type")).toStartWith("application/json");
    expect((await dni("lease", { pool: "tiny", visitor: "t1" })).body.number).toBe("7375550101");
    const other = await dni("lease", { pool: "tiny", visitor: "t2" });
    // The model of the answer (src/dni/model.ts) is closed: both answers have exactly its fields.
    for (const r of [first, other]) expect(Value.Check(LeaseResult, r.body)).toBe(true);
    expect(other.body).toEqual({
      ok: true, number: "7375550100", formatted: "(737) 555-0100", ttl: 0, fallback: true, placeholder: "7375550199", placeholder_formatted: "(737) 555-0199",
    });
  });

  test("heartbeat: {ok: true, ttl}; without an active hold 200 not_leased", async () => {
    await dni("lease", { pool: "acme-site", visitor: "hb1" });
    const ok = await dni("heartbeat", { pool: "acme-site", visitor: "hb1" });
    expect({ status: ok.status, body: ok.body }).toEqual({ status: 200, body: { ok: true, ttl: 1800 } });
    expectCors(ok.headers);
    const none = await dni("heartbeat", { pool: "acme-site", visitor: "never-leased" });
    expect({ status: none.status, body: none.body }).toEqual({ status: 200, body: { ok: false, error: "not_leased" } });
    expectCors(none.headers);
  });

  test("event: {ok: true}; kind, name, value and meta stored by the rules", async () => {
    const sent = [
      { kind: "pageview", name: "/home", meta: { title: "Home" } },
      { kind: "form", name: "n".repeat(100), value: "12.5" },
      { kind: "click", name: "cta", value: "abc", meta: { big: "x".repeat(5000) } },
      { kind: "custom", value: 3, meta: [1, 2] },
    ];
    for (const e of sent) {
      const r = await dni("event", { pool: "acme-site", visitor: "ev1", ...e });
      expect({ status: r.status, body: r.body }).toEqual({ status: 200, body: { ok: true } });
      expectCors(r.headers);
    }
    await dniEngine(app.running.deps).flush();
    const rows = await db.sql`select kind, name, value, meta from dni_events where visitor = 'ev1' order by id`;
    expect(rows.map((r) => ({ ...r }))).toEqual([
      { kind: "pageview", name: "/home", value: 0, meta: { title: "Home" } },
      { kind: "form", name: "n".repeat(80), value: 12.5, meta: null },
      { kind: "custom", name: "cta", value: 0, meta: null },
      { kind: "custom", name: "", value: 3, meta: null },
    ]);
  });

  test("raw addresses are never stored: the visitor keeps the address's HMAC-SHA-256 keyed by the salt", async () => {
    await dni("lease", { pool: "acme-site", visitor: "iphash" }, { ip: "203.0.113.9", headers: { "user-agent": "Mozilla/5.0 test" } });
    const [row] = await db.sql`select ip_hash, user_agent from dni_visitors where visitor = 'iphash'`;
    expect(row.ip_hash).toBe(createHmac("sha256", SALT).update("203.0.113.9").digest("hex"));
    expect(row.user_agent).toBe("Mozilla/5.0 test");
    const dump = await db.sql`select row_to_json(v)::text as t from dni_visitors v`;
    expect(dump.some((r) => r.t.includes("203.0.113.9"))).toBe(false);
  });

  test("renewals answered from memory reach the database through the worker, without a flush by hand", async () => {
    await dni("lease", { pool: "acme-site", visitor: "wb1" });
    clock.advance(60_000);
    expect((await dni("heartbeat", { pool: "acme-site", visitor: "wb1" })).body.ok).toBe(true);
    const want = clock.now() + 1800_000;
    // Written once its write delay (30 s for this pool) is up, by the worker's next tick.
    clock.advance(30_000);
    const deadline = Date.now() + 5000;
    for (;;) {
      const [row] = await db.sql`
        select h.expires_at from dni_holds h join dni_visitors v on v.id = h.visitor_id where v.visitor = 'wb1'`;
      if (row.expires_at.getTime() === want) break;
      if (Date.now() > deadline) throw new Error("the renewal was not written behind within 5 s");
      await Bun.sleep(100);
    }
  });
});

describe("the per-address limit", () => {
  test("3,600 an hour per hashed address, shared by all actions: the 3,601st is 429 with CORS; another address is unaffected", async () => {
    const a = await launch();
    const ip = "198.51.100.7";
    const actions = ["lease", "heartbeat", "event", "nope"];
    let admitted = 0;
    for (let i = 0; i < 3600; i += 100) {
      const batch = await Promise.all(Array.from({ length: 100 }, (_, j) => dni(actions[(i + j) % 4], { pool: "acme-site", visitor: "rl" }, { ip, base: a.base })));
      admitted += batch.filter((r) => r.status !== 429).length;
    }
    expect(admitted).toBe(3600);
    const over = await dni("lease", { pool: "acme-site", visitor: "rl" }, { ip, base: a.base });
    expect({ status: over.status, body: over.body }).toEqual({ status: 429, body: { ok: false, error: "rate_limited" } });
    expectCors(over.headers);
    expect(over.headers.get("retry-after")).toBeNull();
    // Refusals are decided from memory and not counted.
    for (let i = 0; i < 50; i++) expect((await dni("heartbeat", { pool: "acme-site", visitor: "rl" }, { ip, base: a.base })).status).toBe(429);
    expect((await dni("lease", { pool: "acme-site", visitor: "rl2" }, { ip: "198.51.100.8", base: a.base })).status).toBe(200);
    await a.running.deps.limits.flush();
    const hash = createHmac("sha256", SALT).update(ip).digest("hex");
    const [row] = await db.sql`select n from rate_counters where bucket = ${hash}`;
    expect(Number(row.n)).toBe(3600);
    // The next hour is a new window.
    const c2 = new ManualClock(T0);
    const b = await launch({}, c2);
    c2.advance(3_600_000);
    expect((await dni("heartbeat", { pool: "acme-site", visitor: "rl" }, { ip, base: b.base })).status).toBe(200);
  }, 60_000);

  test("across instances, counts meet in PostgreSQL: an instance admits past the limit only until its next flush", async () => {
    const c = new ManualClock(T0 + 7_200_000);
    const [a, b] = [await launch({}, c), await launch({}, c)];
    const ip = "198.51.100.20";
    for (let i = 0; i < 3600; i += 200) {
      await Promise.all(Array.from({ length: 200 }, () => dni("heartbeat", { pool: "nope", visitor: "x" }, { ip, base: a.base })));
    }
    expect((await dni("heartbeat", { pool: "nope" }, { ip, base: a.base })).status).toBe(429);
    await a.running.deps.limits.flush();
    // b has not flushed since: it admits what it has not heard of (the overshoot docs/several-instances.md states)…
    expect((await dni("heartbeat", { pool: "nope" }, { ip, base: b.base })).status).toBe(404);
    await b.running.deps.limits.flush();
    // …and refuses once the counts have met.
    expect((await dni("heartbeat", { pool: "nope" }, { ip, base: b.base })).status).toBe(429);
  }, 60_000);

  test("TRUST_PROXY: forwarded addresses count only as configured", async () => {
    const none = await launch({ TRUST_PROXY: "none" });
    await dni("lease", { pool: "acme-site", visitor: "tp-none" }, { ip: "192.0.2.1", base: none.base });
    await dni("lease", { pool: "acme-site", visitor: "tp-loop" }, { ip: "192.0.2.1" });
    await dni("lease", { pool: "acme-site", visitor: "tp-real" }, { headers: { "x-forwarded-for": "", "x-real-ip": "192.0.2.2" } });
    const rows = await db.sql`select visitor, ip_hash from dni_visitors where visitor like 'tp-%' order by visitor`;
    const h = (ip: string) => createHmac("sha256", SALT).update(ip).digest("hex");
    expect(rows.map((r) => [r.visitor, r.ip_hash])).toEqual([
      ["tp-loop", h("192.0.2.1")],
      ["tp-none", h("127.0.0.1")],
      ["tp-real", h("192.0.2.2")],
    ]);
  });
});

describe("two instances over HTTP", () => {
  test("visitors alternating between two instances: no number held by two visitors at once", async () => {
    const c = new ManualClock(T0 + 86_400_000);
    const [a, b] = [await launch({}, c), await launch({}, c)];
    const bases = [a.base, b.base];
    let turn = 0;
    for (let round = 0; round < 6; round++) {
      const who = Array.from({ length: 8 }, (_, i) => `alt${i}`).filter((_, i) => (i + round) % 4 !== 0);
      const answers = await Promise.all(who.map((v) => dni(round % 2 ? "heartbeat" : "lease", { pool: "tiny", visitor: v }, { base: bases[turn++ % 2] })));
      const numbers = answers.filter((r) => r.body.fallback === false).map((r) => r.body.number);
      expect(new Set(numbers).size).toBe(numbers.length);
      await Promise.all([a, b].map((x) => dniEngine(x.running.deps).flush()));
      c.advance(40_000);
    }
    expect(await overlappingHolds(db.sql)).toEqual([]);
  });
});

describe("GET /dni.js", () => {
  test("JavaScript, cacheable, with an ETag that answers 304; small", async () => {
    const r = await fetch(app.base + "/dni.js");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(r.headers.get("cache-control")).toBe("public, max-age=3600");
    const etag = r.headers.get("etag")!;
    expect(etag).toMatch(/^"[\w-]{20,}"$/);
    const body = await r.text();
    expect(body).toContain("/hooks/dni.php?action=");
    expect(body).not.toContain("Leadline number insertion"); // served minified
    const gz = Bun.gzipSync(body).length;
    expect(gz).toBeLessThan(2048);
    for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const again = await fetch(app.base + "/dni.js", { headers: { "if-none-match": inm } });
      expect({ inm, status: again.status }).toEqual({ inm, status: 304 });
      expect(again.headers.get("etag")).toBe(etag);
      expect(await again.text()).toBe("");
    }
    expect((await fetch(app.base + "/dni.js", { headers: { "if-none-match": '"stale"' } })).status).toBe(200);
  });
});

describe("calls.php attribution", () => {
  test("a call to a pool number is attributed to the visitor who held it at the call's time, also after the hold expired", async () => {
    const c = new ManualClock(T0 + 10 * 86_400_000);
    const x = await launch({}, c);
    const t = c.now();
    await dni("lease", { pool: "tiny", visitor: "caller", utm: { source: "google", medium: "cpc", campaign: "fall", term: "roof", content: "a" },
      gclid: "GCL", landing: "https://acme.example/l", referrer: "https://google.com/" }, { base: x.base });
    await dniEngine(x.running.deps).flush();
    c.advance(10 * 60_000); // the hold (ttl 60 s) has long expired when the call is reported
    const key = (await makeKey(db.sql, { scopes: ["calls:write"], org: 1 })).key;
    const r = await call(x.base, "/hooks/calls.php", {
      method: "POST", key, json: { phone: "5125559999", status: "ANSWERED", secs: 30, agent: "agent7", epoch: Math.floor(t / 1000) + 20, to_number: "(737) 555-0101" },
    });
    expect(r.status).toBe(200);
    const [row] = await db.sql`select * from calls where id = ${r.body.call_id}`;
    expect(row).toMatchObject({
      dni_pool: "tiny", dni_visitor: "caller", utm_source: "google", utm_medium: "cpc", utm_campaign: "fall",
      utm_term: "roof", utm_content: "a", gclid: "GCL", landing: "https://acme.example/l",
    });
    expect(row.visit_id).toBeGreaterThan(0);
    // A call outside any hold of the number is left unattributed.
    const late = await call(x.base, "/hooks/calls.php", {
      method: "POST", key, json: { phone: "5125559999", status: "ANSWERED", secs: 5, agent: "agent7", epoch: Math.floor(t / 1000) + 300, to_number: "7375550101" },
    });
    const [lateRow] = await db.sql`select dni_pool, visit_id from calls where id = ${late.body.call_id}`;
    expect(lateRow).toEqual({ dni_pool: null, visit_id: null });
  });
});

describe("a deadlock", () => {
  test("a lease the database keeps ending as a deadlock is 503 unavailable with CORS, not a 500; other visitors are unaffected", async () => {
    await db.sql.unsafe(`
      create function test_deadlock() returns trigger language plpgsql as $$
      begin
        if new.visitor = 'always-deadlocked' then raise exception 'deadlock detected' using errcode = '40P01'; end if;
        return new;
      end $$;
      create trigger test_deadlock before insert on dni_visitors for each row execute function test_deadlock()`);
    try {
      const r = await dni("lease", { pool: "fuzz", visitor: "always-deadlocked" });
      expect({ status: r.status, body: r.body }).toEqual({ status: 503, body: { ok: false, error: "unavailable" } });
      expectCors(r.headers);
      expect((await dni("lease", { pool: "fuzz", visitor: "after-deadlock" })).status).toBe(200);
    } finally {
      await db.sql`drop trigger test_deadlock on dni_visitors`;
    }
  });
});

describe("the database away", () => {
  test("a returning visitor is still answered from memory; what needs the database is 503 with CORS", async () => {
    const x = await launch();
    expect((await dni("lease", { pool: "acme-site", visitor: "outage1" }, { base: x.base })).body.fallback).toBe(false);
    await x.running.deps.sql.end({ timeout: 1 });
    const warm = await dni("heartbeat", { pool: "acme-site", visitor: "outage1" }, { base: x.base });
    expect({ status: warm.status, body: warm.body }).toEqual({ status: 200, body: { ok: true, ttl: 1800 } });
    const cold = await dni("lease", { pool: "acme-site", visitor: "outage2" }, { base: x.base });
    expect({ status: cold.status, body: cold.body }).toEqual({ status: 503, body: { ok: false, error: "unavailable" } });
    expectCors(cold.headers);
  });
});
