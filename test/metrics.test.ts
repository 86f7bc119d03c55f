// GET /metrics and the access log through HTTP on the real service: who may scrape (a loopback
// peer, or METRICS_TOKEN from anywhere; a non-loopback peer is the machine's own non-loopback
// address, which the server sees as the TCP peer), the names, counters that move with requests
// (route families, a rate-limited refusal, an SMS sent to the fake Twilio, a webhook delivery, DNI
// leases and a fallback), gauges read from the database, no label carrying an id, key or address;
// and the access log's lines, captured from stdout, carrying none of them either.
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "../src/db/client";
import { declaredPaths, declaredRoutes } from "../src/app/app";
import { countRequest, familyIndex, FAMILIES } from "../src/metrics/counters";
import { familyOf } from "../src/metrics/family";
import type { PeerSource } from "../src/http/client";
import { mayScrape, scrape } from "../src/metrics/route";
import { ownHost } from "../src/http/host";
import { systemClock } from "../src/clock";
import { DEADLINE_MS } from "../src/db/deadline";
import { call, startApp, type TestApp } from "./harness/app";
import { testDatabase, type TestDatabase } from "./harness/db";
import { poolNumbers, provisionPools } from "./harness/dni";
import { makeKey, seedWorld } from "./harness/factory";
import { startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";
import { measured, waitBound } from "./harness/timing";
import { WebhookReceiver } from "./harness/webhook-receiver";

const SALT = "metrics-test-salt";
const TOKEN = "metrics-token-0123456789abcdef";
const SECRET_MARKER = "BODY-MARKER-7f3a9c";
const BOOKING_TOKEN = "bktok-5d1e8b2c9a";

let db: TestDatabase;
let app: TestApp;
let twilio: FakeTwilio;
let rx: WebhookReceiver;

// Everything written to stdout while this file runs (the access log among it).
const captured: string[] = [];
const realWrite = process.stdout.write.bind(process.stdout);

beforeAll(async () => {
  process.stdout.write = ((chunk: string | Uint8Array) => (captured.push(String(chunk)), true)) as typeof process.stdout.write;
  db = await testDatabase();
  await seedWorld(db.sql);
  await provisionPools(db.sql, [{ key: "acme-site", numbers: poolNumbers(1), fallback: "5125550100" }]);
  twilio = await startFakeTwilio();
  rx = await WebhookReceiver.start();
  await db.sql`
    update orgs set timezone = 'America/New_York', consent = 'implied', quiet_start = null, quiet_end = null,
      sms = ${db.sql.json({ base_url: twilio.url, account_sid: "ACacme", auth_token: "acme-token", from: "5125550100" })}
    where id = 1`;
  await db.sql`
    insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost)
    values (1, 'active', 'active', 10, 0.01, 0.001)`;
  await db.sql`insert into webhooks (id, org_id, url, secret, events) values (1, 1, ${rx.url("/m")}, ${"whsec_" + Buffer.from("metrics test key").toString("base64")}, ${["*"]})`;
  app = await startApp(db.url, {
    NPK_IP_SALT: SALT,
    METRICS_TOKEN: TOKEN,
    WEBHOOK_ALLOW_PRIVATE: "true",
    LOG_LEVEL: "info",
    // Every address of the machine, so that a request to its non-loopback address comes from a non-loopback peer.
    HOST: "0.0.0.0",
  });
});
afterAll(async () => {
  await app?.stop();
  process.stdout.write = realWrite as typeof process.stdout.write;
  await twilio?.stop();
  await rx?.stop();
  await db?.drop();
});

const get = (path: string, init: RequestInit = {}, base = app.base) => fetch(base + path, init);
const metrics = async (init: RequestInit = {}) => (await get("/metrics", init)).text();

/** Sum of the samples of `name` whose labels include `labels`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const s of parse(text)) {
    if (s.name !== name) continue;
    if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  }
  return sum;
}

function parse(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  const out = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

async function until(check: () => Promise<boolean>, ms = 10_000, what = "condition") {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    if (await check()) return;
    await Bun.sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

const NAMES = [
  "leadline_http_requests_total",
  "leadline_http_request_duration_seconds",
  "leadline_rate_limited_total",
  "leadline_message_sends_total",
  "leadline_webhook_deliveries_total",
  "leadline_dni_fallbacks_total",
  "leadline_database_up",
  "leadline_jobs_queued",
  "leadline_jobs_oldest_age_seconds",
  "leadline_webhook_endpoints",
  "leadline_dni_numbers_held",
  "leadline_dni_numbers_free",
  "leadline_db_pool_max",
  "leadline_db_pool_in_use",
  "leadline_db_pool_waiting",
  "leadline_process_resident_memory_bytes",
  "leadline_process_heap_used_bytes",
  "leadline_process_heap_total_bytes",
  "leadline_event_loop_lag_seconds",
];

describe("who may scrape", () => {
  test("a loopback peer: 200 in the Prometheus text format, every metric named with HELP and TYPE", async () => {
    const r = await get("/metrics");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")!.startsWith("text/plain; version=0.0.4")).toBe(true);
    const text = await r.text();
    for (const name of NAMES) {
      expect(text).toContain(`# HELP ${name} `);
      expect(text).toMatch(new RegExp(`# TYPE ${name} (counter|gauge|histogram)\n`));
    }
    expect(sample(text, "leadline_database_up")).toBe(1);
    expect(sample(text, "leadline_process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(sample(text, "leadline_db_pool_max")).toBe(4);
  });

  test("a bearer token is judged alone: wrong or malformed → 404 not_found even from loopback; right → 200", async () => {
    for (const auth of [`Bearer ${TOKEN}x`, "Bearer wrong-token-wrong-token", `Basic ${TOKEN}`, "Bearer"]) {
      const r = await get("/metrics", { headers: { authorization: auth } });
      expect(r.status).toBe(404);
      expect(await r.json()).toEqual({ ok: false, error: "not_found" });
    }
    expect((await get("/metrics", { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
  });

  test("a loopback peer that forwards a client (a proxy on this host, such as nginx) is refused without the token", async () => {
    const forwarded: Record<string, string>[] = [{ "x-forwarded-for": "127.0.0.1" }, { "x-real-ip": "127.0.0.1" }, { forwarded: "for=127.0.0.1" }];
    for (const headers of forwarded) {
      const r = await get("/metrics", { headers });
      expect(r.status).toBe(404);
      expect(await r.json()).toEqual({ ok: false, error: "not_found" });
      expect((await get("/metrics", { headers: { ...headers, authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    }
  });

  // The peer's address is what decides; a test sends traffic only to loopback, so a peer elsewhere
  // is given to the decision directly, as Bun would report it.
  test("a non-loopback peer: refused without the token (forwarded loopback or not), allowed with it", () => {
    const from = (address: string): PeerSource => ({ requestIP: () => ({ address }) });
    const hostOk = ownHost("https://leads.example");
    const request = (headers: Record<string, string>) => new Request("http://leads.example/metrics", { headers: { host: "leads.example", ...headers } });
    for (const address of ["203.0.113.7", "2001:db8::7", "::ffff:203.0.113.7"]) {
      for (const headers of [{}, { "x-forwarded-for": "127.0.0.1" }, { "x-real-ip": "127.0.0.1" }] as Record<string, string>[]) {
        expect(mayScrape(request(headers), from(address), TOKEN, hostOk)).toBe(false);
      }
      expect(mayScrape(request({ authorization: `Bearer ${TOKEN}` }), from(address), TOKEN, hostOk)).toBe(true);
      expect(mayScrape(request({ authorization: "Bearer wrong-token-of-some-length" }), from(address), TOKEN, hostOk)).toBe(false);
    }
    for (const address of ["127.0.0.1", "::1", "::ffff:127.0.0.1"]) expect(mayScrape(request({}), from(address), TOKEN, hostOk)).toBe(true);
  });

  // DNS rebinding: a page on a domain re-pointed at 127.0.0.1 reaches /metrics from a loopback
  // peer, but its requests carry its own name as Host.
  test("a loopback peer whose Host is another name is refused (404); BASE_URL's name and loopback addresses are served; a token whatever the Host", async () => {
    const port = new URL(app.base).port;
    for (const host of ["evil.example", `evil.example:${port}`, `localhost.evil.example:${port}`, "127.0.0.1.evil.example", "evil.example@127.0.0.1", "", "exa mple"]) {
      const r = await get("/metrics", { headers: { host } });
      expect([host, r.status]).toEqual([host, 404]);
      expect(await r.json()).toEqual({ ok: false, error: "not_found" });
    }
    // This app's BASE_URL is the default, http://localhost:0: its name with any port.
    for (const host of [`localhost:${port}`, "LOCALHOST", `127.0.0.1:${port}`, `[::1]:${port}`, "127.0.0.2"]) {
      expect([host, (await get("/metrics", { headers: { host } })).status]).toEqual([host, 200]);
    }
    expect((await get("/metrics", { headers: { host: "evil.example", authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
  });

  test("without METRICS_TOKEN any bearer token is refused; a loopback peer without one is served", async () => {
    const other = await startApp(db.url, { NPK_IP_SALT: SALT, LOG_LEVEL: "error" });
    try {
      expect((await get("/metrics", { headers: { authorization: `Bearer ${TOKEN}` } }, other.base)).status).toBe(404);
      expect((await get("/metrics", {}, other.base)).status).toBe(200);
    } finally {
      await other.stop();
    }
  });
});

describe("route families", () => {
  test("every declared route and path has a family of its own (`unknown` is for requests no route answers)", () => {
    const deps = app.running.deps;
    const paths = new Set([...declaredRoutes(deps).map((r) => r.path), ...declaredPaths(deps).map((p) => p.path)]);
    for (const path of paths) expect({ path, family: familyOf(path) }).not.toEqual({ path, family: "unknown" });
    expect(familyOf("/book/api.php")).toBe("booking");
    expect(familyOf("/book/{slug}")).toBe("booking_page");
    expect(familyOf("/hooks/lead_intake.php")).toBe("intake");
  });
});

describe("counters move", () => {
  test("requests by family, method and status class; the histogram counts them too; unknown routes as `unknown`", async () => {
    const before = await metrics();
    const { key } = await makeKey(db.sql, { scopes: ["leads:read"], org: 1 });
    expect((await call(app.base, "/hooks/api_v1.php?r=leads/999999", { key })).status).toBe(404);
    expect((await call(app.base, "/healthz")).status).toBe(200);
    expect((await call(app.base, "/healthz")).status).toBe(200);
    expect((await call(app.base, "/no/such/route/12345")).status).toBe(404);
    expect((await call(app.base, "/hooks/dni.php?action=lease", { method: "PUT" })).status).toBeGreaterThanOrEqual(400);
    const after = await metrics();
    const delta = (name: string, labels: Record<string, string>) => sample(after, name, labels) - sample(before, name, labels);
    expect(delta("leadline_http_requests_total", { family: "api_v1", method: "GET", status: "4xx" })).toBe(1);
    expect(delta("leadline_http_requests_total", { family: "health", method: "GET", status: "2xx" })).toBe(2);
    expect(delta("leadline_http_requests_total", { family: "unknown", method: "GET", status: "4xx" })).toBe(1);
    expect(delta("leadline_http_requests_total", { family: "dni", method: "other" })).toBe(1);
    expect(delta("leadline_http_request_duration_seconds_count", { family: "health", method: "GET", status: "2xx" })).toBe(2);
    expect(delta("leadline_http_request_duration_seconds_bucket", { family: "health", method: "GET", status: "2xx", le: "+Inf" })).toBe(2);
    expect(delta("leadline_http_request_duration_seconds_sum", { family: "health", method: "GET", status: "2xx" })).toBeGreaterThan(0);
    // The scrape itself is counted, as the metrics family.
    expect(delta("leadline_http_requests_total", { family: "metrics", method: "GET", status: "2xx" })).toBeGreaterThanOrEqual(1);
  });

  test("the duration histogram's bounds, 0.2 s among them: 200 ms is within it, 200.5 ms is not", async () => {
    const series = { family: "demo", method: "OPTIONS", status: "2xx" };
    // Durations given to the counter directly (this process serves the app): no request is timed.
    const before = await metrics();
    countRequest(familyIndex("demo"), "OPTIONS", 204, 200);
    countRequest(familyIndex("demo"), "OPTIONS", 204, 200.5);
    const after = await metrics();
    const bounds = parse(after)
      .filter((s) => s.name === "leadline_http_request_duration_seconds_bucket" && Object.entries(series).every(([k, v]) => s.labels[k] === v))
      .map((s) => s.labels.le);
    expect(bounds).toEqual(["0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.2", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"]);
    const delta = (le: string) =>
      sample(after, "leadline_http_request_duration_seconds_bucket", { ...series, le }) - sample(before, "leadline_http_request_duration_seconds_bucket", { ...series, le });
    expect([delta("0.1"), delta("0.2"), delta("0.25"), delta("+Inf")]).toEqual([0, 1, 2, 2]);
  });

  test("a key over its limit: the refusal counted by family", async () => {
    const { id, key } = await makeKey(db.sql, { scopes: ["leads:read"], org: 1 });
    // 299 hits already counted this hour (as test/rate-limit.test.ts does).
    await db.sql`select setval(format('rate_seq_%s', ${id}::bigint)::regclass, 1299)`;
    await db.sql`insert into rate_windows (key_id, hour, base) values (${id}, floor(extract(epoch from now()) / 3600)::bigint, 1000)`;
    const before = await metrics();
    expect((await call(app.base, "/hooks/api_v1.php?r=leads/1", { key })).status).toBe(404);
    expect((await call(app.base, "/hooks/api_v1.php?r=leads/1", { key })).status).toBe(429);
    const after = await metrics();
    expect(sample(after, "leadline_rate_limited_total", { family: "api_v1" }) - sample(before, "leadline_rate_limited_total", { family: "api_v1" })).toBe(1);
    expect(sample(after, "leadline_http_requests_total", { family: "api_v1", status: "4xx" }) - sample(before, "leadline_http_requests_total", { family: "api_v1", status: "4xx" })).toBe(2);
  });

  test("an SMS sent to the fake Twilio: message sends by channel and outcome", async () => {
    const { key } = await makeKey(db.sql, { scopes: ["messages:write"], org: 1 });
    const [lead] = await db.sql<{ id: number }[]>`insert into leads (list_id, phone, first_name, state) values (101, '5126610001', 'Dana', 'TX') returning id`;
    const before = await metrics();
    const r = await call(app.base, "/hooks/api_v1.php?r=messages", { method: "POST", key, json: { lead_id: lead!.id, channel: "sms", body: "Hi", operation_id: "m-1" } });
    expect(r.status).toBe(200);
    expect(r.body.ok).toBe(true);
    const after = await metrics();
    const d = (labels: Record<string, string>) => sample(after, "leadline_message_sends_total", labels) - sample(before, "leadline_message_sends_total", labels);
    expect(d({ channel: "sms", outcome: "sent" })).toBe(1);
    expect(d({ channel: "sms", outcome: "failed" })).toBe(0);
  });

  test("a webhook delivery: deliveries by outcome, endpoints by state", async () => {
    const before = await metrics();
    const { key } = await makeKey(db.sql, { scopes: ["leads:write"], org: 1 });
    expect((await call(app.base, "/hooks/lead_intake.php", { method: "POST", key, json: { phone: "5126620002", list_id: 101 } })).status).toBe(200);
    await rx.waitFor(1);
    let after = "";
    await until(async () => {
      after = await metrics();
      return sample(after, "leadline_webhook_deliveries_total", { outcome: "delivered" }) > sample(before, "leadline_webhook_deliveries_total", { outcome: "delivered" });
    }, 10_000, "the delivery to be counted");
    expect(sample(after, "leadline_webhook_deliveries_total", { outcome: "delivered" }) - sample(before, "leadline_webhook_deliveries_total", { outcome: "delivered" })).toBeGreaterThanOrEqual(1);
    expect(sample(after, "leadline_webhook_endpoints", { state: "active" })).toBe(1);
    await db.sql`update webhooks set disabled_at = now(), disabled_reason = 'test' where id = 1`;
    const disabled = await metrics();
    expect(sample(disabled, "leadline_webhook_endpoints", { state: "disabled" })).toBe(1);
    expect(sample(disabled, "leadline_webhook_endpoints", { state: "active" })).toBe(0);
  });

  test("DNI: a lease holds the pool's one number (held 1, free 0); the next visitor gets the fallback, counted per pool", async () => {
    const lease = (visitor: string) =>
      call(app.base, "/hooks/dni.php?action=lease", { method: "POST", json: { pool: "acme-site", visitor } });
    const before = await metrics();
    expect(sample(before, "leadline_dni_numbers_held", { pool: "acme-site" })).toBe(0);
    expect(sample(before, "leadline_dni_numbers_free", { pool: "acme-site" })).toBe(1);
    const first = await lease("visitor-one-abc");
    expect(first.status).toBe(200);
    expect(first.body.number).toBe(poolNumbers(1)[0]);
    const mid = await metrics();
    expect(sample(mid, "leadline_dni_numbers_held", { pool: "acme-site" })).toBe(1);
    expect(sample(mid, "leadline_dni_numbers_free", { pool: "acme-site" })).toBe(0);
    const second = await lease("visitor-two-def");
    expect(second.status).toBe(200);
    expect(second.body.number).toBe("5125550100");
    const after = await metrics();
    expect(sample(after, "leadline_dni_fallbacks_total", { pool: "acme-site" }) - sample(before, "leadline_dni_fallbacks_total", { pool: "acme-site" })).toBe(1);
    expect(sample(after, "leadline_http_requests_total", { family: "dni", method: "POST", status: "2xx" }) - sample(before, "leadline_http_requests_total", { family: "dni", method: "POST", status: "2xx" })).toBe(2);
  });

  test("job queue depth and oldest age by kind", async () => {
    await db.sql`insert into jobs (kind, run_at, created_at) values ('metrics.test', now() + interval '1 hour', now() - interval '90 seconds')`;
    try {
      const text = await metrics();
      expect(sample(text, "leadline_jobs_queued", { kind: "metrics.test" })).toBe(1);
      expect(sample(text, "leadline_jobs_oldest_age_seconds", { kind: "metrics.test" })).toBeGreaterThanOrEqual(89);
    } finally {
      await db.sql`delete from jobs where kind = 'metrics.test'`;
    }
  });

  test("no label value carries an id, key, visitor, token or address; label names come from a closed set", async () => {
    const { key } = await makeKey(db.sql, { scopes: ["leads:read"], org: 1 });
    await call(app.base, "/hooks/api_v1.php?r=leads/424242", { key });
    await call(app.base, `/book/acme-site?r=${BOOKING_TOKEN}`);
    const samples = parse(await metrics());
    const allowed = new Set(["family", "method", "status", "le", "kind", "state", "pool", "channel", "outcome"]);
    for (const s of samples) {
      for (const [name, value] of Object.entries(s.labels)) {
        expect(allowed.has(name)).toBe(true);
        for (const bad of [key, "424242", BOOKING_TOKEN, "127.0.0.1", "visitor-one", "leads/", "/"]) expect(value.includes(bad)).toBe(false);
        if (name === "family") expect((FAMILIES as readonly string[]).includes(value)).toBe(true);
      }
    }
  });
});

describe("the database pool", () => {
  test("connections in use while queries run, queries waiting when every connection is taken", async () => {
    const sql = connect(db.url, { max: 1, statementTimeoutMs: 5000 });
    try {
      // A transaction holds its connection; the next query waits for it (a plain query could be pipelined).
      const running = sql.begin((tx) => tx`select pg_sleep(0.3)`);
      await Bun.sleep(50);
      const queued = sql`select 1`.execute();
      await Bun.sleep(100);
      const text = await scrape(sql, systemClock);
      expect(sample(text, "leadline_db_pool_max")).toBe(1);
      expect(sample(text, "leadline_db_pool_in_use")).toBe(1);
      expect(sample(text, "leadline_db_pool_waiting")).toBe(1);
      await Promise.all([running, queued]);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});

describe("a database outage", () => {
  test("the scrape still answers: process metrics and leadline_database_up 0, within its deadline", async () => {
    // Nothing listens on port 1: every query fails at once, as during an outage.
    const dead = connect("postgres://nobody@127.0.0.1:1/none", { max: 1, statementTimeoutMs: 1000 });
    try {
      const { value: text, ms, late } = await measured(() => scrape(dead, systemClock));
      expect(ms).toBeLessThan(waitBound(DEADLINE_MS, late));
      expect(sample(text, "leadline_database_up")).toBe(0);
      expect(sample(text, "leadline_process_resident_memory_bytes")).toBeGreaterThan(0);
      expect(text).toContain("# TYPE leadline_http_requests_total counter");
      expect(text).not.toContain("leadline_jobs_queued");
    } finally {
      await dead.end({ timeout: 1 });
    }
  });
});

describe("the access log", () => {
  const lines = () =>
    captured
      .join("")
      .split("\n")
      .filter((l) => l.includes('"family"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  test("one JSON line per request: time, family, method, status, duration_ms and the hashed client, nothing else", async () => {
    const { key } = await makeKey(db.sql, { scopes: ["leads:write", "leads:read"], org: 1 });
    // The earlier tests' last batch is written first (every 50 ms).
    await Bun.sleep(150);
    const n = lines().length;
    await call(app.base, "/hooks/lead_intake.php", { method: "POST", key, json: { phone: "5126630003", list_id: 101, first_name: SECRET_MARKER } });
    await call(app.base, `/hooks/api_v1.php?r=leads/1&api_key=${key}`);
    await call(app.base, "/hooks/api_v1.php?r=leads/1", { headers: { authorization: `Bearer ${key}`, "x-api-key": key } });
    await call(app.base, `/book/acme-site?r=${BOOKING_TOKEN}`);
    await call(app.base, "/healthz", { headers: { "x-forwarded-for": "198.51.100.77" } });
    await until(async () => lines().length >= n + 5, 2000, "the access log's batch");
    const mine = lines().slice(n);
    const hash = (address: string) => createHmac("sha256", SALT).update(address).digest("hex");
    for (const l of mine) {
      expect(Object.keys(l).sort()).toEqual(["client", "duration_ms", "family", "method", "status", "time"]);
      expect(new Date(l.time as string).toISOString()).toBe(l.time as string);
      expect(typeof l.duration_ms).toBe("number");
      expect(l.client).toMatch(/^[0-9a-f]{64}$/);
    }
    expect(mine.find((l) => l.family === "intake")).toMatchObject({ method: "POST", status: 200, client: hash("127.0.0.1") });
    expect(mine.filter((l) => l.family === "api_v1").length).toBe(2);
    expect(mine.find((l) => l.family === "booking_page")).toBeDefined();
    // TRUST_PROXY (loopback by default) applies: the forwarded client is the one hashed.
    expect(mine.find((l) => l.family === "health")).toMatchObject({ status: 200, client: hash("198.51.100.77") });
    const all = captured.join("");
    for (const secret of [key, BOOKING_TOKEN, SECRET_MARKER, "198.51.100.77", '"127.0.0.1"', "leads/1"]) expect(all.includes(secret)).toBe(false);
  });

  test("ACCESS_LOG=false, or LOG_LEVEL warn: no lines", async () => {
    const envs: Record<string, string>[] = [{ ACCESS_LOG: "false", LOG_LEVEL: "info" }, { LOG_LEVEL: "warn" }];
    for (const env of envs) {
      const other = await startApp(db.url, { NPK_IP_SALT: SALT, ...env });
      try {
        const n = lines().length;
        for (let i = 0; i < 3; i++) expect((await call(other.base, "/healthz")).status).toBe(200);
        await Bun.sleep(150);
        expect(lines().length).toBe(n);
      } finally {
        await other.stop();
      }
    }
  });

  test("ACCESS_LOG other than true or false is refused at start, naming the setting", async () => {
    await expect(startApp(db.url, { ACCESS_LOG: "yes" })).rejects.toThrow(/ACCESS_LOG/);
    await expect(startApp(db.url, { METRICS_TOKEN: "short" })).rejects.toThrow(/METRICS_TOKEN/);
  });
});
