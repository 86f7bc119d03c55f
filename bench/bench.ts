// The benchmark driver behind `make bench` (bench/run.sh): a throwaway PostgreSQL, seeded data,
// `dist/leadline serve` and the baseline server (bench/baseline.ts) against it, wrk per scenario,
// and a markdown table on stdout and in bench/results/latest.md. See bench/README.md.
//
// env: BENCH_DURATION (s, default 6), BENCH_WARMUP (s, default 2), BENCH_CONNECTIONS (default 32),
//      BENCH_THREADS (default 2), BENCH_ONLY (comma-separated scenario ids, baselines always run),
//      BENCH_PROFILE=1 (run the service from src/ with `bun --cpu-prof-md`; the profile lands in
//      bench/results/; throughput is then not comparable to the executable's),
//      BENCH_EXE (an executable to test instead of dist/leadline),
//      BENCH_POOL (pool size of both servers; default: the service's own default, mirrored).
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import postgres from "postgres";
import { freePort, startCluster, type Cluster } from "./pg";

const root = resolve(import.meta.dir, "..");
const BUN = join(root, "node_modules/.bin/bun");
// BENCH_EXE: another build of the executable, for A/B comparisons of a change.
const EXE = process.env.BENCH_EXE ? resolve(process.env.BENCH_EXE) : join(root, "dist/leadline");
const WRK_SCRIPT = join(import.meta.dir, "wrk.lua");

const env = (name: string, dflt: number) => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : dflt;
};
const DURATION = env("BENCH_DURATION", 6);
const WARMUP = env("BENCH_WARMUP", 2);
// Scenarios held to a ratio of a baseline alternate with it in this many slices of the run, and
// report the median of the slices' ratios: the machine's speed drifts between scenarios (other
// tenants of a shared host), and a baseline measured a minute earlier does not see that drift.
const ROUNDS = env("BENCH_ROUNDS", 3);
const CONNS = env("BENCH_CONNECTIONS", 32);
const THREADS = env("BENCH_THREADS", 2);
// The baseline's pool mirrors the service's default (src/db/open.ts: max(2, 2 × cores)) unless
// BENCH_POOL is set, which then sizes both (DB_POOL_MAX for the service).
const POOL_OVERRIDE = process.env.BENCH_POOL ? env("BENCH_POOL", 8) : null;
const POOL = POOL_OVERRIDE ?? Math.max(2, availableParallelism() * 2);
const ONLY = process.env.BENCH_ONLY?.split(",").map((s) => s.trim()).filter(Boolean) ?? null;

const LEADS = 10_000;
const CONV_ROWS = 200; // per source: messages, calls, lead_events
const LIMITS = { api_v1: 300, intake: 120, kpi: 600 };
// Enough keys that none reaches its hourly limit in warm-up + run (checked after each scenario),
// few enough that the warm-up uses each once, so the measured window sees the key cache warm.
// BENCH_READ_KEYS sets the count for get lead and CTI lookup: each key's rate counter is a sequence,
// and PostgreSQL's cost per nextval() grows with how many distinct sequences the backends touch.
const READ_KEYS = env("BENCH_READ_KEYS", 3000);
const KEY_COUNTS = { lead: READ_KEYS, cti: READ_KEYS, conv: 300, intake: 2000, kpi: 40 };

// ---------------------------------------------------------------- processes and cleanup

const work = mkdtempSync(join(tmpdir(), "leadline-bench-"));
const children: Subprocess[] = [];
let cluster: Cluster | null = null;
let cleaned = false;

function cleanupSync(): void {
  if (cleaned) return;
  cleaned = true;
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  cluster?.stop();
  rmSync(work, { recursive: true, force: true });
}

async function stopChildren(): Promise<void> {
  for (const c of children) if (c.exitCode === null) c.kill("SIGTERM");
  await Promise.race([Promise.all(children.map((c) => c.exited)), Bun.sleep(5000)]);
}

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    console.error(`bench: ${signal}, cleaning up`);
    cleanupSync();
    process.exit(signal === "SIGINT" ? 130 : 143);
  });
}
process.on("exit", cleanupSync);

const say = (msg: string) => console.error(`bench: ${msg}`);

function tail(path: string, lines = 30): string {
  try {
    return readFileSync(path, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

// ---------------------------------------------------------------- CPU accounting

const TICK_US = 1e6 / (Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100);

/** utime + stime of a process in µs, from /proc (0 when it is gone). */
function cpuOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * TICK_US;
  } catch {
    return 0;
  }
}

/** The postmaster and every process it started (backends, checkpointer, ...), summed. */
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
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === master) total += cpuOf(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return total;
}

/** Busy CPU time of the whole machine in µs (all CPUs), from /proc/stat. */
function machineBusy(): number {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  return (f[0] + f[1] + f[2] + f[5] + f[6] + (f[7] ?? 0)) * TICK_US;
}

async function waitReady(url: string, logPath: string, child: Subprocess): Promise<void> {
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`${url}: process exited ${child.exitCode}\n${tail(logPath)}`);
    try {
      const r = await fetch(url);
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    await Bun.sleep(100);
  }
  throw new Error(`${url} not ready after 30 s\n${tail(logPath)}`);
}

function spawnLogged(name: string, cmd: string[], extraEnv: Record<string, string>): { child: Subprocess; log: string } {
  const log = join(work, `${name}.log`);
  const child = Bun.spawn(cmd, {
    cwd: work,
    env: { ...process.env, ...extraEnv },
    stdin: "ignore",
    stdout: Bun.file(log),
    stderr: Bun.file(log + ".err"),
  });
  children.push(child);
  return { child, log };
}

// ---------------------------------------------------------------- seeding

type Sql = postgres.Sql;

async function seed(sql: Sql): Promise<{ convLead: number; overKeyId: number; overKey: string }> {
  await sql`insert into orgs (id, name, company) values (1, 'Acme', 'Acme Roofing LLC')`;
  await sql`insert into campaigns (id, org_id, name) values ('ACME', 1, 'Acme')`;
  await sql`insert into lists (id, campaign_id, name) values (101, 'ACME', 'Web')`;
  // Leads 1..LEADS with phones 5550000001.. (ids are fresh bigserials, so id i has phone i).
  await sql`
    insert into leads (list_id, phone, first_name, last_name, email, city, state, postal_code)
    select 101, '555' || lpad(i::text, 7, '0'), 'First' || i, 'Last' || i, 'lead' || i || '@example.com',
           'Springfield', 'IL', '62701'
    from generate_series(1, ${LEADS}) as i`;
  const [{ id: convLead }] = await sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, last_name) values (101, '5559990000', 'Conver', 'Sation')
    returning id::int`;
  await sql`
    insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, body, status, created_at)
    select ${convLead}, 1, 'sms', case when i % 2 = 0 then 'out' else 'in' end, 'user', 'agent7',
           'Message body number ' || i || ', a sentence or two of text as an SMS would have.', 'delivered',
           now() - make_interval(mins => i * 3)
    from generate_series(1, ${CONV_ROWS}) as i`;
  await sql`
    insert into calls (lead_id, phone, to_number, status, secs, agent, occurred_at)
    select ${convLead}, '5559990000', '5551112222', 'ANSWERED', 30 + i, 'agent7', now() - make_interval(mins => i * 3 + 1)
    from generate_series(1, ${CONV_ROWS}) as i`;
  await sql`
    insert into lead_events (lead_id, event, label, actor, actor_role, note, created_at)
    select ${convLead}, 'appointment_booked', 'Appointment ' || i, 'agent7', 'agent', 'note ' || i,
           now() - make_interval(mins => i * 3 + 2)
    from generate_series(1, ${CONV_ROWS}) as i`;
  const over = await makeKeys(sql, "overlimit", 1, ["leads:read"]);
  const [{ id: overKeyId }] = await sql<{ id: number }[]>`
    select id::int from api_keys where key_prefix = ${over[0].slice(0, 10)} and name = 'bench-overlimit'`;
  // Only the seeded tables: statistics that call an empty table empty make plans that scan it once it fills.
  await sql`vacuum analyze leads, messages, calls, lead_events`;
  return { convLead, overKeyId, overKey: over[0] };
}

/** Inserts `n` keys of org 1 with `scopes`, writes their plaintexts to a file, returns them. */
async function makeKeys(sql: Sql, name: string, n: number, scopes: string[]): Promise<string[]> {
  const plain = Array.from({ length: n }, () => "lk_" + randomBytes(32).toString("base64url"));
  const hashes = plain.map((k) => createHash("sha256").update(k, "utf8").digest("hex"));
  await sql`
    insert into api_keys (key_hash, key_prefix, name, org_id, scopes)
    select decode(h, 'hex'), p, ${"bench-" + name}, 1, ${scopes}::text[]
    from unnest(${hashes}::text[], ${plain.map((k) => k.slice(0, 10))}::text[]) as u(h, p)`;
  writeFileSync(join(work, `keys-${name}.txt`), plain.join("\n") + "\n");
  return plain;
}

// ---------------------------------------------------------------- wrk

interface WrkResult {
  requests: number;
  duration_us: number;
  p50_us: number;
  p90_us: number;
  p99_us: number;
  max_us: number;
  mean_us: number;
  status_errors: number;
  connect_errors: number;
  read_errors: number;
  write_errors: number;
  timeouts: number;
  rps: number;
  /** CPU µs per request: the server under test, PostgreSQL, wrk. */
  cpu: { app: number; pg: number; wrk: number; total: number };
  /** Share of all CPUs busy during the run, and the part of it not used by app, pg or wrk. */
  busy: number;
  foreign: number;
  /** From pg_stat_statements: statements executed per request, and their execution time. */
  db: DbStats | null;
}

interface DbStats {
  perReq: number;
  execUsPerReq: number;
  /** The statements that took the most execution time. */
  top: { query: string; perReq: number; meanUs: number; share: number }[];
}

interface Probe {
  appPid: number;
  dataDir: string;
  /** Resets pg_stat_statements; null when the extension is not available. */
  dbReset: () => Promise<void>;
  dbRead: (requests: number) => Promise<DbStats | null>;
}

let runDigit = 0;

async function wrk(baseUrl: string, args: Record<string, string | number>, seconds: number, conns: number, probe: Probe, measure = true): Promise<WrkResult> {
  if (measure) await probe.dbReset();
  const app0 = cpuOf(probe.appPid);
  const pg0 = postgresCpu(probe.dataDir);
  const m0 = machineBusy();
  runDigit = (runDigit + 1) % 10;
  const opts = Object.entries({ ...args, run: runDigit }).map(([k, v]) => `${k}=${v}`);
  const cmd = ["wrk", `-t${THREADS}`, `-c${conns}`, `-d${seconds}s`, "--timeout", "5s", "-s", WRK_SCRIPT, baseUrl, "--", ...opts];
  const p = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe" });
  children.push(p);
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  await p.exited;
  children.splice(children.indexOf(p), 1);
  const app1 = cpuOf(probe.appPid);
  const pg1 = postgresCpu(probe.dataDir);
  const m1 = machineBusy();
  const usage = p.resourceUsage();
  const wrkCpu = usage ? Number(usage.cpuTime.user) + Number(usage.cpuTime.system) : 0;
  const line = out.split("\n").find((l) => l.startsWith("BENCH "));
  if (p.exitCode !== 0 || !line) throw new Error(`wrk failed (exit ${p.exitCode}):\n${out}\n${err}`);
  const r = JSON.parse(line.slice(6)) as WrkResult;
  r.rps = r.requests / (r.duration_us / 1e6);
  const per = (us: number) => us / Math.max(1, r.requests);
  r.cpu = { app: per(app1 - app0), pg: per(pg1 - pg0), wrk: per(wrkCpu), total: 0 };
  r.cpu.total = r.cpu.app + r.cpu.pg + r.cpu.wrk;
  // Everything else the machine did meanwhile (kernel softirq, other people's work), as a share
  // of all CPUs: a high value means the row is noisy.
  const wall = r.duration_us * cpus().length;
  r.foreign = Math.max(0, (m1 - m0 - (app1 - app0) - (pg1 - pg0) - wrkCpu) / wall);
  r.busy = (m1 - m0) / wall;
  r.db = measure ? await probe.dbRead(r.requests) : null;
  return r;
}

// ---------------------------------------------------------------- scenarios

interface Row {
  id: string;
  name: string;
  r: WrkResult;
  conns: number;
  baseline?: string;
  ratio?: number;
  target?: string;
  pass?: boolean;
  checks: string[];
  ok: boolean;
}

const rows: Row[] = [];
const problems: string[] = [];

const pct = (x: number) => `${Math.round(x * 100)}%`;
const cpuCell = (r: WrkResult) => [r.cpu.app, r.cpu.pg, r.cpu.wrk].map((v) => v.toFixed(0)).join(" / ");

function fmtMs(us: number): string {
  const ms = us / 1000;
  return ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0);
}

async function expectStatus(url: string, init: RequestInit, status: number, check?: (body: any) => string | null): Promise<string | null> {
  const r = await fetch(url, init);
  const text = await r.text();
  if (r.status !== status) return `sample request: expected ${status}, got ${r.status}: ${text.slice(0, 200)}`;
  if (check) {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return `sample request: body is not JSON: ${text.slice(0, 200)}`;
    }
    return check(body);
  }
  return null;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * Slices of one scenario as one result: counts and CPU summed, latencies the median slice's
 * (percentiles do not add up), database statistics the last slice's (each slice resets them).
 */
function mergeSlices(parts: WrkResult[]): WrkResult {
  const sum = (f: (r: WrkResult) => number) => parts.reduce((a, r) => a + f(r), 0);
  const requests = sum((r) => r.requests);
  const duration = sum((r) => r.duration_us);
  const byRps = [...parts].sort((a, b) => a.rps - b.rps);
  const mid = byRps[Math.floor(byRps.length / 2)];
  const cpu = (k: keyof WrkResult["cpu"]) => sum((r) => r.cpu[k] * r.requests) / Math.max(1, requests);
  return {
    ...mid,
    requests,
    duration_us: duration,
    rps: requests / (duration / 1e6),
    status_errors: sum((r) => r.status_errors),
    connect_errors: sum((r) => r.connect_errors),
    read_errors: sum((r) => r.read_errors),
    write_errors: sum((r) => r.write_errors),
    timeouts: sum((r) => r.timeouts),
    cpu: { app: cpu("app"), pg: cpu("pg"), wrk: cpu("wrk"), total: cpu("total") },
    busy: sum((r) => r.busy * r.duration_us) / duration,
    foreign: sum((r) => r.foreign * r.duration_us) / duration,
    db: parts[parts.length - 1].db,
  };
}

function socketErrors(r: WrkResult): number {
  return r.connect_errors + r.read_errors + r.write_errors + r.timeouts;
}

async function main(): Promise<void> {
  const startedAt = new Date();
  say(`work dir ${work}`);
  cluster = await startCluster();
  say(`PostgreSQL: ${cluster.label}`);
  {
    const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
    await admin`create database leadline_bench`;
    await admin.end({ timeout: 2 });
  }
  const dbUrl = cluster.url.replace(/\/postgres$/, "/leadline_bench");

  // Schema from the executable itself.
  const mig = Bun.spawnSync([EXE, "migrate"], { env: { ...process.env, DATABASE_URL: dbUrl, LOG_LEVEL: "warn" }, stderr: "pipe", stdout: "pipe" });
  if (mig.exitCode !== 0) throw new Error(`dist/leadline migrate failed: ${mig.stdout.toString()}${mig.stderr.toString()}`);

  const sql: Sql = postgres(dbUrl, { max: 2, onnotice: () => {} });
  const t0 = Date.now();
  const { convLead, overKeyId, overKey } = await seed(sql);
  const keys = {
    lead: await makeKeys(sql, "lead", KEY_COUNTS.lead, ["leads:read"]),
    cti: await makeKeys(sql, "cti", KEY_COUNTS.cti, ["cti"]),
    conv: await makeKeys(sql, "conv", KEY_COUNTS.conv, ["conversations:read"]),
    intake: await makeKeys(sql, "intake", KEY_COUNTS.intake, ["leads:write"]),
    kpi: await makeKeys(sql, "kpi", KEY_COUNTS.kpi, ["metrics:write"]),
  };
  await sql`analyze api_keys`;
  say(`seeded ${LEADS + 1} leads, ${3 * CONV_ROWS} conversation rows, ${Object.values(KEY_COUNTS).reduce((a, b) => a + b, 1)} keys in ${Date.now() - t0} ms`);

  const svcPort = await freePort();
  const profile = process.env.BENCH_PROFILE === "1";
  const resultsDir = join(import.meta.dir, "results");
  mkdirSync(resultsDir, { recursive: true });
  const svcCmd = profile
    ? [BUN, "--cpu-prof-md", `--cpu-prof-interval=${process.env.BENCH_PROFILE_INTERVAL ?? 1000}`, `--cpu-prof-dir=${resultsDir}`, `--cpu-prof-name=profile-${Date.now()}.md`, join(root, "src/main.ts"), "serve"]
    : [EXE, "serve"];
  if (profile) say("BENCH_PROFILE=1: the service runs from src/ under the CPU profiler");
  const svc = spawnLogged("leadline", svcCmd, {
    DATABASE_URL: dbUrl,
    PORT: String(svcPort),
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    DATA_DIR: join(work, "data"),
    NPK_IP_SALT: "bench",
    ...(POOL_OVERRIDE ? { DB_POOL_MAX: String(POOL_OVERRIDE) } : {}),
  });
  const basePort = await freePort();
  const base = spawnLogged("baseline", [BUN, join(import.meta.dir, "baseline.ts")], {
    DATABASE_URL: dbUrl,
    PORT: String(basePort),
    HOST: "127.0.0.1",
    POOL_MAX: String(POOL),
  });
  const svcUrl = `http://127.0.0.1:${svcPort}`;
  const baseUrl = `http://127.0.0.1:${basePort}`;
  await waitReady(`${svcUrl}/readyz`, svc.log, svc.child);
  await waitReady(`${baseUrl}/plain`, base.log, base.child);
  say(`leadline on ${svcUrl}, baseline on ${baseUrl}; ${WARMUP}s warm-up + ${DURATION}s per scenario, -t${THREADS} -c${CONNS}`);

  const keyFile = (name: string) => join(work, `keys-${name}.txt`);
  let statements = true;
  try {
    await sql`create extension if not exists pg_stat_statements`;
  } catch (err) {
    statements = false;
    say(`pg_stat_statements unavailable (${err instanceof Error ? err.message : err}); no per-statement numbers`);
  }
  const dbReset = async () => {
    if (statements) await sql`select pg_stat_statements_reset()`;
  };
  const dbRead = async (requests: number): Promise<DbStats | null> => {
    if (!statements) return null;
    const rows = await sql<{ query: string; calls: string; total_ms: number }[]>`
      select s.query, s.calls::text as calls, s.total_exec_time as total_ms
      from pg_stat_statements s join pg_database d on d.oid = s.dbid
      where d.datname = 'leadline_bench' and s.query not ilike '%pg_stat%'
      order by s.total_exec_time desc`;
    const n = Math.max(1, requests);
    const calls = rows.reduce((a, r) => a + Number(r.calls), 0);
    const totalMs = rows.reduce((a, r) => a + r.total_ms, 0);
    return {
      perReq: calls / n,
      execUsPerReq: (totalMs * 1000) / n,
      top: rows.slice(0, 3).map((r) => ({
        query: r.query.replace(/\s+/g, " ").trim(),
        perReq: Number(r.calls) / n,
        meanUs: (r.total_ms * 1000) / Math.max(1, Number(r.calls)),
        share: totalMs > 0 ? r.total_ms / totalMs : 0,
      })),
    };
  };
  const probes: Record<string, Probe> = {
    [svcUrl]: { appPid: svc.child.pid, dataDir: cluster.dataDir, dbReset, dbRead },
    [baseUrl]: { appPid: base.child.pid, dataDir: cluster.dataDir, dbReset, dbRead },
  };
  const results: Record<string, WrkResult> = {};

  interface Scenario {
    id: string;
    name: string;
    url: string;
    args: Record<string, string | number>;
    conns?: number;
    expect2xx: boolean;
    keys?: { n: number; limit: number };
    sample?: () => Promise<string | null>;
    before?: () => Promise<unknown>;
    after?: (r: WrkResult, state: any) => Promise<string[]>;
    baseline?: string;
    target?: (r: WrkResult, ratio: number | undefined) => { text: string; pass: boolean };
  }

  const ratioTarget = (min: number) => (_r: WrkResult, ratio: number | undefined) => ({
    text: `≥ ${Math.round(min * 100)}% of baseline`,
    pass: ratio !== undefined && ratio >= min,
  });
  const H = (key: string) => ({ headers: { "X-Api-Key": key } });
  const leadCount = async () => Number((await sql`select count(*)::int as n from leads`)[0].n);
  const statsRc = async () => {
    // Backends report table stats when idle for a second; wait for that, then read fresh stats.
    await Bun.sleep(1500);
    const [s] = await sql`
      select n_tup_ins::int as ins, n_tup_upd::int as upd, n_tup_hot_upd::int as hot
      from pg_stat_user_tables where relname = 'rate_windows'`;
    // Every hit, accepted or refused, draws one value of the key's sequence.
    const [c] = await sql`select last_value::int as n from ${sql(`rate_seq_${overKeyId}`)}`;
    return { ins: Number(s.ins), upd: Number(s.upd), hot: Number(s.hot), n: Number(c.n) };
  };

  const scenarios: Scenario[] = [
    {
      id: "b",
      name: "baseline (b): bare Elysia + 1 indexed SELECT",
      url: baseUrl,
      args: { mode: "base_lead", leads: LEADS },
      expect2xx: true,
      sample: () => expectStatus(`${baseUrl}/lead?id=7`, {}, 200, (b) => (b?.lead?.lead_id === 7 ? null : `unexpected body ${JSON.stringify(b)}`)),
    },
    {
      id: "2",
      name: "get lead `r=leads/{id}`",
      url: svcUrl,
      args: { mode: "lead", leads: LEADS, keys: keyFile("lead") },
      keys: { n: KEY_COUNTS.lead, limit: LIMITS.api_v1 },
      expect2xx: true,
      sample: () =>
        expectStatus(`${svcUrl}/hooks/api_v1.php?r=leads/7`, H(keys.lead[0]), 200, (b) =>
          b?.lead?.lead_id === 7 && b?.lead?.phone === "5550000007" ? null : `unexpected body ${JSON.stringify(b)}`),
      baseline: "b",
      target: ratioTarget(0.8),
    },
    {
      id: "3",
      name: "CTI lookup `r=cti/lookup&phone=`",
      url: svcUrl,
      args: { mode: "cti", phones: LEADS, keys: keyFile("cti") },
      keys: { n: KEY_COUNTS.cti, limit: LIMITS.api_v1 },
      expect2xx: true,
      sample: () =>
        expectStatus(`${svcUrl}/hooks/api_v1.php?r=cti/lookup&phone=5550000042`, H(keys.cti[0]), 200, (b) =>
          b?.found === true && b?.lead_id === 42 ? null : `unexpected body ${JSON.stringify(b)}`),
      baseline: "b",
      target: ratioTarget(0.8),
    },
    {
      id: "4",
      name: `conversation (${3 * CONV_ROWS} rows behind it)`,
      url: svcUrl,
      args: { mode: "conv", id: convLead, keys: keyFile("conv") },
      keys: { n: KEY_COUNTS.conv, limit: LIMITS.api_v1 },
      expect2xx: true,
      sample: () =>
        expectStatus(`${svcUrl}/hooks/api_v1.php?r=conversations/${convLead}`, H(keys.conv[0]), 200, (b) =>
          b?.ok === true && b?.entries?.length === 200 ? null : `expected 200 entries, got ${b?.entries?.length}`),
      baseline: "b",
    },
    {
      id: "5",
      name: "lead intake `POST lead_intake.php` (new phone each)",
      url: svcUrl,
      args: { mode: "intake", keys: keyFile("intake") },
      keys: { n: KEY_COUNTS.intake, limit: LIMITS.intake },
      expect2xx: true,
      sample: () =>
        expectStatus(
          `${svcUrl}/hooks/lead_intake.php`,
          {
            method: "POST",
            headers: { "X-Api-Key": keys.intake[0], "Content-Type": "application/json" },
            body: JSON.stringify({ phone: "(777) 000-0001", list_id: 101, first_name: "Sample" }),
          },
          200,
          (b) => (b?.ok === true && b?.deduped === false && typeof b?.lead_id === "number" ? null : `unexpected body ${JSON.stringify(b)}`),
        ),
      before: leadCount,
      after: async (r, before: number) => {
        const made = (await leadCount()) - before;
        return made >= r.requests ? [`${made} leads created`] : [`FAIL: only ${made} leads created for ${r.requests} requests`];
      },
      baseline: "b",
    },
    {
      id: "6",
      name: "KPI batch, 500 points (-c4)",
      url: svcUrl,
      conns: 4,
      args: { mode: "kpi", points: 500, keys: keyFile("kpi") },
      keys: { n: KEY_COUNTS.kpi, limit: LIMITS.kpi },
      expect2xx: true,
      sample: async () => {
        const points = Array.from({ length: 500 }, (_, j) => ({ metric_key: `bench_m${j % 10}`, value: j, day: "2026-11-22", dim_key: `sample-${j}` }));
        return expectStatus(
          `${svcUrl}/hooks/kpi_ingest.php`,
          { method: "POST", headers: { "X-Api-Key": keys.kpi[0], "Content-Type": "application/json" }, body: JSON.stringify({ points }) },
          200,
          (b) => (b?.ok === true && b?.upserts === 500 ? null : `unexpected body ${JSON.stringify(b).slice(0, 200)}`),
        );
      },
      before: async () => Number((await sql`select count(*)::int as n from kpi_points`)[0].n),
      after: async (r, before: number) => {
        const n = Number((await sql`select count(*)::int as n from kpi_points`)[0].n) - before;
        return n >= r.requests * 500 ? [`${n} points stored`] : [`FAIL: ${n} points stored for ${r.requests} batches of 500`];
      },
      target: (r) => ({ text: "p50 < 50 ms", pass: r.p50_us < 50_000 }),
    },
    {
      id: "a",
      name: "baseline (a): bare Elysia, small JSON",
      url: baseUrl,
      args: { mode: "plain", leads: LEADS },
      expect2xx: true,
      sample: () => expectStatus(`${baseUrl}/plain`, {}, 200),
    },
    {
      id: "7",
      name: "over-limit key `r=leads/{id}` (all 429)",
      url: svcUrl,
      args: { mode: "overlimit", id: 7, keys: join(work, "keys-overlimit.txt") },
      expect2xx: false,
      sample: async () => {
        await sql`select setval(format('rate_seq_%s', ${overKeyId}::bigint)::regclass, 100000)`;
        await sql`
          insert into rate_windows (key_id, hour, base)
          values (${overKeyId}, floor(extract(epoch from now()) / 3600)::bigint, 0)
          on conflict (key_id, hour) do update set base = 0`;
        return expectStatus(`${svcUrl}/hooks/api_v1.php?r=leads/7`, H(overKey), 429, (b) =>
          b?.error === "rate_limited" ? null : `unexpected body ${JSON.stringify(b)}`);
      },
      before: statsRc,
      after: async (r, before: Awaited<ReturnType<typeof statsRc>>) => {
        const after = await statsRc();
        const upd = after.upd - before.upd;
        const counted = after.n - before.n;
        const out = [`${upd + after.ins - before.ins} rate_windows writes for ${r.requests} requests`];
        // Every rejected hit is still counted, in batches; wrk does not count requests cut off at its end.
        // Each wrk run (one per slice) may leave up to its connections' requests unanswered and uncounted.
        if (counted < r.requests || counted > r.requests + 2 * CONNS * ROUNDS) out.push(`FAIL: counter grew by ${counted}, expected ≈ ${r.requests}`);
        else out.push(`counter grew by ${counted}`);
        if (upd > Math.max(100, r.requests / 100)) out.push(`FAIL: rate_windows written per request (${upd} for ${r.requests} requests)`);
        return out;
      },
      baseline: "a",
      target: ratioTarget(0.6),
    },
  ];

  /**
   * The scenario measured in ROUNDS slices, each right after a slice of its baseline of the same
   * length: the slices' ratios, and the scenario's slices merged into one result.
   */
  async function pairedRounds(s: Scenario, conns: number): Promise<{ r: WrkResult; ratios: number[] }> {
    const b = scenarios.find((x) => x.id === s.baseline)!;
    const seconds = Math.max(1, Math.round(DURATION / ROUNDS));
    const parts: WrkResult[] = [];
    const ratios: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const base = await wrk(b.url, b.args, seconds, conns, probes[b.url], false);
      const part = await wrk(s.url, s.args, seconds, conns, probes[s.url]);
      if (socketErrors(base) || base.status_errors) throw new Error(`baseline slice failed: ${base.status_errors} non-2xx, ${socketErrors(base)} socket errors`);
      ratios.push(part.rps / base.rps);
      parts.push(part);
    }
    return { r: mergeSlices(parts), ratios };
  }

  const keyUse: Record<string, number> = {};
  const poolSeen = { svc: 0, base: 0 };
  for (const s of scenarios) {
    if (ONLY && !ONLY.includes(s.id) && !["a", "b"].includes(s.id)) continue;
    const conns = s.conns ?? CONNS;
    const checks: string[] = [];
    let ok = true;
    const sampleErr = s.sample ? await s.sample() : null;
    if (sampleErr) {
      ok = false;
      checks.push(`FAIL: ${sampleErr}`);
    }
    say(`${s.id}: ${s.name}: warm-up`);
    const warm = await wrk(s.url, s.args, WARMUP, conns, probes[s.url], false);
    const state = s.before ? await s.before() : undefined;
    say(`${s.id}: measuring`);
    const paired = s.baseline !== undefined && s.target !== undefined && results[s.baseline] !== undefined;
    const slices = paired ? await pairedRounds(s, conns) : null;
    const r = slices ? slices.r : await wrk(s.url, s.args, DURATION, conns, probes[s.url]);
    if (slices) checks.push(`ratio per slice ${slices.ratios.map(pct).join(" / ")}`);
    results[s.id] = r;
    const [pc] = await sql`
      select count(*) filter (where application_name = 'leadline-serve')::int as svc,
             count(*) filter (where application_name = 'leadline-bench-baseline')::int as base
      from pg_stat_activity`;
    poolSeen.svc = Math.max(poolSeen.svc, Number(pc.svc));
    poolSeen.base = Math.max(poolSeen.base, Number(pc.base));
    if (s.after) {
      for (const c of await s.after(r, state)) {
        checks.push(c);
        if (c.startsWith("FAIL")) ok = false;
      }
    }
    const sock = socketErrors(r) + socketErrors(warm);
    if (sock) {
      ok = false;
      checks.push(`FAIL: ${sock} socket errors/timeouts`);
    }
    if (s.expect2xx) {
      if (r.status_errors || warm.status_errors) {
        ok = false;
        checks.push(`FAIL: ${r.status_errors} non-2xx of ${r.requests} (+${warm.status_errors} in warm-up)`);
      } else checks.push(`all ${r.requests} 2xx`);
    } else if (r.status_errors !== r.requests || warm.status_errors !== warm.requests) {
      ok = false;
      checks.push(`FAIL: only ${r.status_errors} of ${r.requests} were non-2xx`);
    } else checks.push(`all ${r.requests} non-2xx (sample: 429 rate_limited)`);
    if (s.keys) {
      const perKey = Math.ceil((warm.requests + r.requests + 1) / s.keys.n) + 1;
      keyUse[s.id] = perKey;
      if (perKey > s.keys.limit) {
        ok = false;
        checks.push(`FAIL: ~${perKey} requests per key exceeds the hourly limit ${s.keys.limit}: add keys`);
      } else checks.push(`${s.keys.n} keys, ≤ ~${perKey}/${s.keys.limit} per key`);
      if (warm.requests < s.keys.n) checks.push(`note: the warm-up used only ${warm.requests} of ${s.keys.n} keys (cold key cache)`);
    }
    const row: Row = { id: s.id, name: s.name, r, conns, checks, ok };
    if (s.baseline && results[s.baseline]) {
      row.baseline = s.baseline;
      row.ratio = slices ? median(slices.ratios) : r.rps / results[s.baseline].rps;
    }
    if (s.target) {
      const t = s.target(r, row.ratio);
      row.target = t.text;
      row.pass = t.pass;
    }
    if (!ok) problems.push(`${s.id} ${s.name}: ${checks.filter((c) => c.startsWith("FAIL")).join("; ")}`);
    rows.push(row);
    say(`${s.id}: ${r.rps.toFixed(0)} req/s, p50 ${fmtMs(r.p50_us)} ms, p99 ${fmtMs(r.p99_us)} ms${row.ratio ? `, ${(row.ratio * 100).toFixed(0)}% of (${row.baseline})` : ""}${ok ? "" : " — CHECK FAILED"}`);
  }

  // Anything the service logged at warn or above during the run is worth seeing.
  const svcLog = tail(svc.log, 2000).trim();
  const svcErr = tail(svc.log + ".err", 50).trim();

  await sql.end({ timeout: 2 });
  await stopChildren();

  const rev = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { cwd: root, stdout: "pipe", stderr: "ignore" }).stdout.toString().trim();
  const dirty = Bun.spawnSync(["git", "status", "--porcelain", "--", "src", "sql"], { cwd: root, stdout: "pipe", stderr: "ignore" }).stdout.toString().trim();
  const lines: string[] = [];
  lines.push(`# Leadline benchmark, ${startedAt.toISOString()}`);
  lines.push("");
  lines.push(
    `${cpus().length} CPUs (${cpus()[0]?.model ?? "?"}), shared by wrk, the servers and PostgreSQL; commit ${rev || "?"}${dirty ? " + uncommitted changes in src/sql" : ""}; ` +
      `${cluster.label.split(",")[0]}; wrk -t${THREADS} -c${CONNS} (KPI -c4) -d${DURATION}s after ${WARMUP}s warm-up. ` +
      `database connections seen: service ${poolSeen.svc}, baseline ${poolSeen.base} (pool max ${POOL_OVERRIDE ?? `${POOL} for the baseline, the service's default for it`}). ` +
      `Ratios are against baselines measured in this run.`,
  );
  lines.push("");
  lines.push("| # | Scenario | req/s | p50 ms | p99 ms | vs baseline | target | result | CPU µs/req app / pg / wrk | DB stmts/req (exec µs/req) | CPU busy (other) | checks |");
  lines.push("|---|---|---:|---:|---:|---:|---|---|---:|---:|---:|---|");
  for (const row of rows) {
    const ratio = row.ratio !== undefined ? `${(row.ratio * 100).toFixed(0)}% of (${row.baseline})` : "—";
    const result = !row.ok ? "**INVALID**" : row.pass === undefined ? "—" : row.pass ? "pass" : "**MISS**";
    lines.push(
      `| ${row.id} | ${row.name} | ${row.r.rps.toFixed(0)} | ${fmtMs(row.r.p50_us)} | ${fmtMs(row.r.p99_us)} | ${ratio} | ${row.target ?? "—"} | ${result} | ${cpuCell(row.r)} | ${row.r.db ? `${row.r.db.perReq.toFixed(2)} (${row.r.db.execUsPerReq.toFixed(0)})` : "—"} | ${pct(row.r.busy)} (${pct(row.r.foreign)}) | ${row.checks.join("; ")} |`,
    );
  }
  lines.push("");
  lines.push("Database statements with the most execution time (pg_stat_statements, measured window):");
  lines.push("");
  lines.push("| # | per req | mean µs | share | statement |");
  lines.push("|---|---:|---:|---:|---|");
  for (const row of rows) {
    for (const t of row.r.db?.top ?? []) {
      const q = t.query.length > 110 ? t.query.slice(0, 107) + "..." : t.query;
      lines.push(`| ${row.id} | ${t.perReq.toFixed(2)} | ${t.meanUs.toFixed(0)} | ${pct(t.share)} | \`${q.replaceAll("|", "\\|").replaceAll("`", "'")}\` |`);
    }
  }
  if (svcLog || svcErr) {
    lines.push("");
    lines.push("Service log (warn and above):");
    lines.push("");
    lines.push("```");
    lines.push(...(svcLog + "\n" + svcErr).trim().split("\n").slice(-20));
    lines.push("```");
  }
  const md = lines.join("\n") + "\n";
  process.stdout.write("\n" + md);
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  writeFileSync(join(import.meta.dir, "results", "latest.md"), md);
  say(`written to bench/results/latest.md`);
  if (problems.length) {
    say(`invalid scenarios (their numbers measure errors, not work):\n  ${problems.join("\n  ")}`);
    process.exitCode = 1;
  }
}

try {
  await main();
} catch (err) {
  console.error("bench:", err instanceof Error ? err.message : err);
  process.exitCode = 1;
} finally {
  cleanupSync();
}
process.exit(process.exitCode ?? 0);
