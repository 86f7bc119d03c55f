// Outbound events benchmark: `node_modules/.bin/bun bench/events.ts`. A throwaway PostgreSQL,
// the service (dist/leadline, or src/main.ts when it is not built, or BENCH_EXE) and a webhook
// receiver in this process on 127.0.0.1. Three measurements, printed as a markdown table:
//
//   A. deliveries/s: a burst of events committed at once, delivered from one instance to one
//      endpoint (the per-endpoint concurrency bound applies; one endpoint is the hard case);
//   B. commit → receipt lag at a steady intake rate (open loop: requests leave on a schedule, not
//      when the previous answer came), p50/p90/p99/max, the lag measured from the moment the
//      intake answer arrived (its transaction had committed) to the delivery's arrival;
//   C. what the outbox row costs intake: closed-loop intake req/s and CPU per intake, in slices
//      alternating between the real intake and a baseline in which a BEFORE INSERT trigger drops
//      the outbox row (the rest of the intake statement unchanged), no endpoints subscribed.
//
// env: EVENTS_BURST (events in A, default 20000), EVENTS_RATE (intakes/s in B, default 500),
//      EVENTS_DURATION (s of B and of C's slices in all, default 10), EVENTS_CONNECTIONS (C's
//      concurrent clients, default 32), BENCH_EXE (an executable instead of dist/leadline).
// The receiver shares this process's CPU with the load generator: on 2 cores the numbers are a
// floor. Targets: A ≥ 1000/s; B p99 < 1 s at 500 intakes/s.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import postgres from "postgres";
import { freePort, startCluster, type Cluster } from "./pg";

const root = resolve(import.meta.dir, "..");
const num = (name: string, dflt: number) => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : dflt;
};
const BURST = num("EVENTS_BURST", 20_000);
const RATE = num("EVENTS_RATE", 500);
const DURATION = num("EVENTS_DURATION", 10);
const CONNS = num("EVENTS_CONNECTIONS", 32);
const built = join(root, "dist/leadline");
const EXE = process.env.BENCH_EXE
  ? [resolve(process.env.BENCH_EXE)]
  : existsSync(built)
    ? [built]
    : [join(root, "node_modules/.bin/bun"), join(root, "src/main.ts")];

const say = (msg: string) => console.error(`bench/events: ${msg}`);
const work = mkdtempSync(join(tmpdir(), "leadline-events-bench-"));
const children: Subprocess[] = [];
let cluster: Cluster | null = null;

function cleanup(): void {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  cluster?.stop();
  rmSync(work, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    cleanup();
    process.exit(130);
  });
}

// ---------------------------------------------------------------- CPU accounting

const TICK_US = 1e6 / (Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100);

function cpuOf(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8");
    const x = f.slice(f.lastIndexOf(")") + 2).split(" ");
    return (Number(x[11]) + Number(x[12])) * TICK_US;
  } catch {
    return 0;
  }
}

/** The postmaster and its children, summed. */
function postgresCpu(dataDir: string): number {
  let master: number;
  try {
    master = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
  } catch {
    return 0;
  }
  let total = cpuOf(master);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const f = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (Number(f.slice(f.lastIndexOf(")") + 2).split(" ")[1]) === master) total += cpuOf(Number(entry));
    } catch {}
  }
  return total;
}

// ---------------------------------------------------------------- receiver

/** Arrival time (performance.now()) by lead id, and by webhook-id for the burst. */
const arrivals = new Map<number, number>();
const ids = new Set<string>();
let received = 0;
let duplicates = 0;

const receiver = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    const at = performance.now();
    const id = req.headers.get("webhook-id") ?? "";
    const body = (await req.json()) as { data?: { lead_id?: number } };
    received++;
    if (ids.has(id)) duplicates++;
    ids.add(id);
    const lead = body.data?.lead_id;
    if (typeof lead === "number" && !arrivals.has(lead)) arrivals.set(lead, at);
    return new Response("ok");
  },
});

// ---------------------------------------------------------------- helpers

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const ms = (x: number) => (x < 10 ? x.toFixed(1) : x.toFixed(0));

async function until(pred: () => boolean, limitMs: number): Promise<boolean> {
  const end = performance.now() + limitMs;
  while (!pred()) {
    if (performance.now() > end) return false;
    await Bun.sleep(5);
  }
  return true;
}

async function makeKeys(sql: postgres.Sql, n: number): Promise<string[]> {
  const plain = Array.from({ length: n }, () => "lk_" + randomBytes(32).toString("base64url"));
  const hashes = plain.map((k) => createHash("sha256").update(k, "utf8").digest("hex"));
  await sql`
    insert into api_keys (key_hash, key_prefix, name, org_id, scopes)
    select decode(h, 'hex'), p, 'bench-events', 1, '{leads:write}'::text[]
    from unnest(${hashes}::text[], ${plain.map((k) => k.slice(0, 10))}::text[]) as u(h, p)`;
  return plain;
}

let phoneSeq = 2_000_000_000;
let keyTurn = 0;
let keys: string[] = [];
/** Intake allows 120 an hour per key: requests go round-robin over many. */
function intake(base: string): Promise<{ status: number; lead_id: number | null }> {
  const key = keys[keyTurn++ % keys.length];
  return fetch(`${base}/hooks/lead_intake.php`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify({ phone: String(phoneSeq++), list_id: 101, first_name: "Bench", source: "bench" }),
  }).then(async (r) => ({ status: r.status, lead_id: ((await r.json()) as { lead_id?: number }).lead_id ?? null }));
}

// ---------------------------------------------------------------- main

async function main() {
  cluster = await startCluster();
  const url = cluster.url;
  const sql = postgres(url, { max: 4, onnotice: () => {} });
  const env = { ...process.env, DATABASE_URL: url, LOG_LEVEL: "warn", WEBHOOK_ALLOW_PRIVATE: "true", HOST: "127.0.0.1" };
  const migrate = Bun.spawnSync([...EXE, "migrate"], { env, cwd: work });
  if (migrate.exitCode !== 0) throw new Error(`migrate failed: ${migrate.stderr.toString()}`);
  await sql`insert into orgs (id, name, company) values (1, 'Acme', 'Acme Roofing LLC')`;
  await sql`insert into campaigns (id, org_id, name) values ('ACME', 1, 'Acme')`;
  await sql`insert into lists (id, campaign_id, name) values (101, 'ACME', 'Web')`;
  const secret = "whsec_" + randomBytes(24).toString("base64");
  await sql`insert into webhooks (id, org_id, url, secret, events)
            values (1, null, ${`http://127.0.0.1:${receiver.port}/hook`}, ${secret}, '{*}')`;
  const intakes = Math.ceil(RATE * DURATION * 1.2 + 4000 * DURATION);
  keys = await makeKeys(sql, Math.ceil(intakes / 100));
  // Only the seeded tables: statistics that call an empty table empty make plans that scan it once it fills.
  await sql`vacuum analyze api_keys`;

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const app = Bun.spawn([...EXE, "serve"], { env: { ...env, PORT: String(port) }, cwd: work, stdout: "ignore", stderr: "inherit" });
  children.push(app);
  if (!(await waitHealthy(base))) throw new Error("serve did not start");
  say(`service up (${EXE.join(" ")}), receiver on ${receiver.port}`);

  // A. deliveries/s from a burst committed at once.
  const stats = await statements(sql);
  await stats.reset();
  const cpu0 = { app: cpuOf(app.pid), pg: postgresCpu(cluster.dataDir) };
  received = 0;
  ids.clear();
  await sql`
    insert into outbox_events (org_id, type, payload)
    select 1, 'lead.created', jsonb_build_object('type', 'lead.created', 'timestamp', now(),
      'data', jsonb_build_object('lead_id', -g, 'list_id', 101, 'campaign', 'ACME', 'org_id', 1,
                                 'phone', (5550000000 + g)::text, 'source', 'bench', 'created_at', now()))
    from generate_series(1, ${BURST}) g`;
  const t0 = performance.now();
  let first = 0;
  await until(() => {
    if (received > 0 && first === 0) first = performance.now();
    return received >= BURST;
  }, 600_000);
  const tA = performance.now() - t0;
  const cpuA = { app: (cpuOf(app.pid) - cpu0.app) / BURST, pg: (postgresCpu(cluster.dataDir) - cpu0.pg) / BURST };
  const rateA = BURST / (tA / 1000);
  say(`A: ${BURST} deliveries in ${ms(tA)} ms = ${rateA.toFixed(0)}/s`);
  const topA = await stats.top(BURST);

  // B. lag at a steady intake rate, open loop.
  const commits = new Map<number, number>();
  const latencies: number[] = [];
  let errors = 0;
  const pending: Promise<void>[] = [];
  const tick = 10;
  const perTick = RATE / (1000 / tick);
  let owed = 0;
  const startB = performance.now();
  for (let n = 0; performance.now() - startB < DURATION * 1000; n++) {
    owed += perTick;
    for (; owed >= 1; owed--) {
      const sent = performance.now();
      pending.push(
        intake(base).then(
          (r) => {
            const at = performance.now();
            latencies.push(at - sent);
            if (r.status === 200 && r.lead_id !== null) commits.set(r.lead_id, at);
            else errors++;
          },
          () => void errors++,
        ),
      );
    }
    const next = startB + (n + 1) * tick;
    await Bun.sleep(Math.max(0, next - performance.now()));
  }
  await Promise.all(pending);
  const achieved = commits.size / ((performance.now() - startB) / 1000);
  await until(() => [...commits.keys()].every((id) => arrivals.has(id)), 30_000);
  const lags = [...commits].map(([id, at]) => (arrivals.get(id) ?? NaN) - at).filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  const missing = commits.size - lags.length;
  latencies.sort((a, b) => a - b);
  say(`B: ${commits.size} intakes, lag p50 ${ms(quantile(lags, 0.5))} p99 ${ms(quantile(lags, 0.99))} ms`);

  // C. the outbox row's cost to intake: alternate slices with and without it, no endpoint subscribed.
  await sql`update webhooks set active = false`;
  await sql`create function bench_drop_outbox() returns trigger language plpgsql as $$ begin return null; end $$`;
  const slices = 4;
  const sliceS = Math.max(1, DURATION / (slices * 2));
  const acc = { with: { n: 0, s: 0, app: 0, pg: 0 }, without: { n: 0, s: 0, app: 0, pg: 0 } };
  for (let i = 0; i < slices; i++) {
    for (const mode of ["without", "with"] as const) {
      if (mode === "without") await sql`create trigger bench_drop_outbox before insert on outbox_events for each row execute function bench_drop_outbox()`;
      const a0 = cpuOf(app.pid);
      const p0 = postgresCpu(cluster.dataDir);
      const s0 = performance.now();
      let n = 0;
      await Promise.all(
        Array.from({ length: CONNS }, async () => {
          while (performance.now() - s0 < sliceS * 1000) if ((await intake(base)).status === 200) n++;
        }),
      );
      const m = acc[mode];
      m.n += n;
      m.s += (performance.now() - s0) / 1000;
      m.app += cpuOf(app.pid) - a0;
      m.pg += postgresCpu(cluster.dataDir) - p0;
      if (mode === "without") await sql`drop trigger bench_drop_outbox on outbox_events`;
    }
  }
  const rps = (m: typeof acc.with) => m.n / m.s;
  const [outboxRows] = await sql`select count(*)::int as n from outbox_events where dispatched_at is null`;

  app.kill("SIGTERM");
  await app.exited;
  await sql.end();

  const cores = cpus().length;
  const lines = [
    `## Outbound events (${new Date().toISOString().slice(0, 16)}Z, ${cores} cores, ${EXE.length > 1 ? "src/main.ts" : EXE[0]})`,
    "",
    "| measurement | result | target | notes |",
    "|---|---|---|---|",
    `| A. deliveries/s, one instance → one local endpoint | ${rateA.toFixed(0)}/s | ≥ 1000/s | ${BURST} events committed at once; first arrival after ${ms(first - t0)} ms; CPU µs/delivery app ${cpuA.app.toFixed(0)}, pg ${cpuA.pg.toFixed(0)}; ${duplicates} duplicate ids |`,
    `| B. lag commit → receipt at ${RATE} intakes/s | p50 ${ms(quantile(lags, 0.5))} ms, p90 ${ms(quantile(lags, 0.9))} ms, p99 ${ms(quantile(lags, 0.99))} ms, max ${ms(lags.at(-1) ?? NaN)} ms | p99 < 1000 ms | ${commits.size} intakes at ${achieved.toFixed(0)}/s over ${DURATION} s, ${errors} errors, ${missing} never arrived; intake latency p50 ${ms(quantile(latencies, 0.5))} ms, p99 ${ms(quantile(latencies, 0.99))} ms |`,
    `| C. intake req/s with the outbox row | ${rps(acc.with).toFixed(0)}/s (${((rps(acc.with) / rps(acc.without)) * 100).toFixed(0)}% of baseline) | — | baseline without it (trigger drops the row): ${rps(acc.without).toFixed(0)}/s; CPU µs/intake app ${(acc.with.app / acc.with.n).toFixed(0)} vs ${(acc.without.app / acc.without.n).toFixed(0)}, pg ${(acc.with.pg / acc.with.n).toFixed(0)} vs ${(acc.without.pg / acc.without.n).toFixed(0)}; ${slices} slice pairs of ${sliceS} s, ${CONNS} clients; ${outboxRows.n} events left undispatched at the end |`,
  ];
  if (topA.length) {
    lines.push("", "Statements of A per delivery (pg_stat_statements): calls, mean µs, share of execution time", "");
    for (const t of topA) lines.push(`- ${t.perReq.toFixed(2)} × ${t.meanUs.toFixed(0)} µs (${(t.share * 100).toFixed(0)}%): \`${t.query}\``);
  }
  console.log(lines.join("\n"));
}

/** pg_stat_statements when the cluster loaded it: reset, and the statements by execution time. */
async function statements(sql: postgres.Sql) {
  const ok = await sql`create extension if not exists pg_stat_statements`.then(
    () => true,
    () => false,
  );
  return {
    reset: async () => {
      if (ok) await sql`select pg_stat_statements_reset()`;
    },
    top: async (per: number) => {
      if (!ok) return [];
      const rows = await sql<{ query: string; calls: number; total: number }[]>`
        select query, calls::float8 as calls, total_exec_time::float8 as total from pg_stat_statements
        where query not like '%pg_stat_statements%' order by total_exec_time desc limit 8`;
      const all = rows.reduce((a, r) => a + r.total, 0);
      return rows.map((r) => ({
        query: r.query.replace(/\s+/g, " ").slice(0, 110),
        perReq: r.calls / per,
        meanUs: (r.total / r.calls) * 1000,
        share: r.total / all,
      }));
    },
  };
}

async function waitHealthy(base: string): Promise<boolean> {
  const end = performance.now() + 30_000;
  while (performance.now() < end) {
    try {
      if ((await fetch(`${base}/readyz`)).status === 200) return true;
    } catch {}
    await Bun.sleep(100);
  }
  return false;
}

main()
  .then(() => {
    receiver.stop(true);
    process.exit(0);
  })
  .catch((err) => {
    console.error(err);
    process.exit(1);
  });
