// What every benchmark suite shares (bench/README.md): the options from the environment; a work
// directory and every process a suite starts, removed on exit, failure, SIGINT, SIGTERM and
// SIGHUP; the throwaway PostgreSQL migrated by the executable under test; the service and the
// baseline server (bench/baseline.ts); wrk runs of bench/wrk.lua read back from its `BENCH {json}`
// line, alone, in slices beside a reference, or split over several servers; API keys written
// straight into api_keys; the CPU time per request of the servers, PostgreSQL and the load
// generator (from /proc), pg_stat_statements of each measured window; and the markdown table
// every suite writes to bench/results/<suite>.md and stdout.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import postgres from "postgres";
import { freePort, startCluster, type Cluster } from "./pg";

export type Sql = postgres.Sql;

export const root = resolve(import.meta.dir, "..");
export const BUN = join(root, "node_modules/.bin/bun");
const RESULTS = join(import.meta.dir, "results");
const WRK_SCRIPT = join(import.meta.dir, "wrk.lua");
const DATABASE = "leadline_bench";

// ---------------------------------------------------------------- options

/** A positive number from the environment, else `dflt`. */
export function num(name: string, dflt: number): number {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : dflt;
}

const profile = process.env.BENCH_PROFILE;

/** The options every suite reads; bench/README.md lists them. */
export const options = {
  /** Measured seconds per scenario; a sliced scenario spends them in `rounds` slices. */
  duration: num("BENCH_DURATION", 6),
  warmup: num("BENCH_WARMUP", 2),
  /** Slices of the scenarios measured beside a reference (see Suite.slices). */
  rounds: num("BENCH_ROUNDS", 3),
  conns: num("BENCH_CONNECTIONS", 32),
  threads: num("BENCH_THREADS", 2),
  /** BENCH_POOL sizes both servers' pools; unset, the service keeps its default. */
  poolOverride: process.env.BENCH_POOL ? num("BENCH_POOL", 8) : null,
  /** BENCH_ONLY: scenario ids; a suite naming none of them is skipped. */
  only: process.env.BENCH_ONLY?.split(",").map((s) => s.trim()).filter(Boolean) ?? null,
  /** BENCH_PROFILE: `1` for bench/results/, or a directory. */
  profileDir: profile ? (profile === "1" ? RESULTS : resolve(profile)) : null,
  profileInterval: num("BENCH_PROFILE_INTERVAL", 1000),
};

/** Seconds of one slice. */
export const SLICE = Math.max(1, Math.round(options.duration / options.rounds));

/** The baseline's pool: BENCH_POOL, else the service's default (src/db/open.ts), mirrored. */
export const POOL = options.poolOverride ?? Math.max(2, availableParallelism() * 2);

/**
 * The executable under test: BENCH_EXE (`src` for src/main.ts on bun), else dist/leadline, else
 * src/main.ts on bun.
 */
function executable(): string[] {
  const exe = process.env.BENCH_EXE;
  const fromSource = [BUN, join(root, "src/main.ts")];
  if (exe === "src") return fromSource;
  if (exe) {
    if (!existsSync(resolve(exe))) throw new Error(`BENCH_EXE=${exe} does not exist`);
    return [resolve(exe)];
  }
  const built = join(root, "dist/leadline");
  return existsSync(built) ? [built] : fromSource;
}

// ---------------------------------------------------------------- results

export interface Cpu {
  /** µs of CPU time in the window: the servers under load, PostgreSQL, the load generator (wrk, or this process), the whole machine. */
  app: number;
  pg: number;
  driver: number;
  machine: number;
  /** The window's CPU capacity: its wall time × CPUs, µs. */
  capacity: number;
}

/** Execution of each statement in a window (pg_stat_statements): calls and milliseconds. */
export type Statements = Map<string, { calls: number; ms: number }>;

export interface Result {
  requests: number;
  duration_us: number;
  rps: number;
  /** Latency percentiles; null where the load does not measure them. */
  p50_us: number | null;
  p99_us: number | null;
  status_errors: number;
  socket_errors: number;
  cpu: Cpu;
  db: Statements | null;
}

/** What a load reports of itself; measure() adds the CPU and statements. */
export type Counts = Omit<Result, "cpu" | "db" | "rps"> & { rps?: number; driver_us?: number };

/** Consecutive slices of one load as one result: sums, and the latencies of the median slice (percentiles do not add up). */
export function mergeSlices(parts: Result[]): Result {
  const sum = (f: (r: Result) => number) => parts.reduce((a, r) => a + f(r), 0);
  const requests = sum((r) => r.requests);
  const duration = sum((r) => r.duration_us);
  const mid = [...parts].sort((a, b) => a.rps - b.rps)[Math.floor(parts.length / 2)];
  let db: Statements | null = new Map();
  for (const p of parts) {
    if (!p.db || !db) {
      db = null;
      continue;
    }
    for (const [q, v] of p.db) {
      const seen = db.get(q) ?? { calls: 0, ms: 0 };
      db.set(q, { calls: seen.calls + v.calls, ms: seen.ms + v.ms });
    }
  }
  const cpu = (k: keyof Cpu) => sum((r) => r.cpu[k]);
  return {
    requests,
    duration_us: duration,
    rps: requests / (duration / 1e6),
    p50_us: mid.p50_us,
    p99_us: mid.p99_us,
    status_errors: sum((r) => r.status_errors),
    socket_errors: sum((r) => r.socket_errors),
    cpu: { app: cpu("app"), pg: cpu("pg"), driver: cpu("driver"), machine: cpu("machine"), capacity: cpu("capacity") },
    db,
  };
}

/** Loads run at once (one per server) as one: counts and rates summed, the worse latencies. */
function mergeConcurrent(parts: Counts[]): Counts {
  const sum = (f: (r: Counts) => number) => parts.reduce((a, r) => a + f(r), 0);
  const worst = (f: (r: Counts) => number | null) => Math.max(...parts.map((r) => f(r) ?? 0));
  return {
    requests: sum((r) => r.requests),
    duration_us: Math.max(...parts.map((r) => r.duration_us)),
    rps: sum((r) => r.rps ?? r.requests / (r.duration_us / 1e6)),
    p50_us: worst((r) => r.p50_us),
    p99_us: worst((r) => r.p99_us),
    status_errors: sum((r) => r.status_errors),
    socket_errors: sum((r) => r.socket_errors),
    driver_us: sum((r) => r.driver_us ?? 0),
  };
}

// ---------------------------------------------------------------- CPU accounting

const TICK_US = 1e6 / (Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100);
const CORES = cpus().length;

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

/** Resident memory of a process in KiB (VmRSS of /proc/<pid>/status; 0 when it is gone). */
export function rssOf(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : 0;
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

function selfCpu(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

// ---------------------------------------------------------------- formatting

export const pct = (x: number) => `${Math.round(x * 100)}%`;
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export function fmtMs(us: number): string {
  const ms = us / 1000;
  return ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0);
}

function tail(path: string, lines: number): string {
  try {
    return readFileSync(path, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

/** The checks of a load's answers: no socket errors, and every answer 2xx (or, `refused`, none). */
export function answerChecks(r: Result, warm?: Result, expect: "2xx" | "refused" = "2xx"): string[] {
  const out: string[] = [];
  const sock = r.socket_errors + (warm?.socket_errors ?? 0);
  if (sock) out.push(`FAIL: ${sock} socket errors/timeouts`);
  const warmErrors = warm?.status_errors ?? 0;
  if (expect === "2xx") {
    if (r.status_errors || warmErrors) out.push(`FAIL: ${r.status_errors} non-2xx of ${r.requests}${warm ? ` (+${warmErrors} in warm-up)` : ""}`);
    else out.push(`all ${r.requests} 2xx`);
  } else if (r.status_errors !== r.requests || (warm && warmErrors !== warm.requests)) {
    out.push(`FAIL: only ${r.status_errors} of ${r.requests} were non-2xx`);
  } else out.push(`all ${r.requests} non-2xx`);
  return out;
}

/** One request expected to answer `status`, its JSON body checked by `check`; an error message or null. */
/**
 * The console family's answers so far by the instance's own duration histogram (/metrics,
 * loopback): how many took at most each of `bounds` (seconds, written as the histogram writes its
 * `le`: "0.05"), and all of them. Benches take two readings and compare.
 */
export async function consoleServerTimes<B extends string>(url: string, bounds: readonly B[]): Promise<{ within: Record<B, number>; all: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const within = Object.fromEntries(bounds.map((b) => [b, 0])) as Record<B, number>;
  let all = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith("leadline_http_request_duration_seconds_bucket{") || !line.includes('"console"')) continue;
    const n = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (line.includes('le="+Inf"')) all += n;
    for (const b of bounds) if (line.includes(`le="${b}"`)) within[b] += n;
  }
  return { within, all };
}

export async function expectStatus(url: string, init: RequestInit, status: number, check?: (body: any) => string | null): Promise<string | null> {
  const r = await fetch(url, init);
  const text = await r.text();
  if (r.status !== status) return `sample request: expected ${status}, got ${r.status}: ${text.slice(0, 200)}`;
  if (!check) return null;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return `sample request: body is not JSON: ${text.slice(0, 200)}`;
  }
  return check(body);
}

// ---------------------------------------------------------------- the suite

export interface Server {
  name: string;
  url: string;
  child: Subprocess;
  log: string;
}

export interface Load {
  /** The server to load; with several, one wrk each at once, the connections split evenly. */
  to: Server | Server[];
  /** key=value arguments of bench/wrk.lua (mode, keys, ...). */
  args: Record<string, string | number>;
  /** wrk's -c; default BENCH_CONNECTIONS. */
  conns?: number;
  /** wrk's per-request timeout, s (default 5). */
  timeout?: number;
  /** With several servers: the arguments of the i-th server's wrk instead of `args` (e.g. another pool each). */
  argsFor?: (i: number) => Record<string, string | number>;
}

export interface Row {
  /** What BENCH_ONLY names it by, and the table's first column. */
  id: string;
  name: string;
  r: Result;
  /** The ratio to a reference measured in the same run, and the reference's id. */
  vs?: { ratio: number; of: string };
  target?: { text: string; pass: boolean };
  /** Findings; one starting with FAIL makes the row (and the run) invalid. */
  checks: string[];
  /** Statements the second table lists for this row (default 3). */
  top?: number;
}

/** bench/results/<suite>.json: what bench/report.ts reads. */
export interface SuiteJson {
  suite: string;
  title: string;
  started: string;
  service: string;
  context: string;
  rows: {
    id: string;
    name: string;
    requests: number;
    duration_us: number;
    rps: number;
    p50_us: number | null;
    p99_us: number | null;
    vs: { ratio: number; of: string } | null;
    target: { text: string; pass: boolean } | null;
    valid: boolean;
    checks: string[];
    /** CPU µs per request: the servers, all of PostgreSQL, the load generator. */
    app_us: number;
    pg_us: number;
    driver_us: number;
    /** Share of all CPUs busy in the window, and the part of it not the servers', PostgreSQL's or the load generator's. */
    busy: number;
    other: number;
    /** pg_stat_statements per request: statements and execution µs (null without it). */
    db_calls: number | null;
    db_exec_us: number | null;
    statements: { query: string; calls: number; ms: number }[];
  }[];
  notes: string[];
  extra: Record<string, unknown>;
}

const valid = (row: Row) => !row.checks.some((c) => c.startsWith("FAIL"));

/** A benchmark suite's run: its work directory, the processes it starts and the table it writes. */
export class Suite {
  readonly work: string;
  readonly exe: string[];
  cluster: Cluster | null = null;
  sql: Sql | null = null;
  readonly rows: Row[] = [];
  /** Lines printed under the table. */
  readonly notes: string[] = [];
  /** Suite-specific figures for bench/report.ts, written with the rows to bench/results/<suite>.json. */
  readonly extra: Record<string, unknown> = {};
  private readonly children: Subprocess[] = [];
  private readonly services: Server[] = [];
  private statements = false;
  private wrkRuns = 0;
  private cleaned = false;
  private startedAt = new Date();

  /** `ids`: the scenario ids BENCH_ONLY can name in this suite. */
  constructor(
    readonly name: string,
    readonly title: string,
    private readonly ids: string[],
  ) {
    this.work = mkdtempSync(join(tmpdir(), `leadline-bench-${name}-`));
    this.exe = executable();
    process.on("exit", () => this.cleanup());
    for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143], ["SIGHUP", 129]] as const) {
      process.on(signal, () => {
        this.say(`${signal}, cleaning up`);
        this.cleanup();
        process.exit(code);
      });
    }
  }

  say(msg: string): void {
    console.error(`bench/${this.name}: ${msg}`);
  }

  /** Whether BENCH_ONLY lets scenario `id` run. */
  wanted(id: string): boolean {
    return !options.only || options.only.includes(id);
  }

  /**
   * Runs the suite's body, writes its table (the body returns the context line's suite-specific
   * part), stops and removes everything, and exits: 1 when the run failed or a row is invalid.
   */
  async run(body: () => Promise<string>): Promise<never> {
    try {
      if (!this.ids.some((id) => this.wanted(id))) {
        this.say(`BENCH_ONLY names none of ${this.ids.join(", ")}: skipped`);
      } else {
        this.startedAt = new Date();
        const context = await body();
        const logs = this.serviceLogs();
        await this.stop();
        this.write(context, logs);
      }
    } catch (err) {
      this.say(err instanceof Error ? (err.stack ?? err.message) : String(err));
      process.exitCode = 1;
    } finally {
      this.cleanup();
    }
    process.exit(process.exitCode ?? 0);
  }

  // -------------------------------------------------------------- processes

  /** Starts a process with its output in the work directory (`<name>.log`, `<name>.log.err`). */
  spawn(name: string, cmd: string[], env: Record<string, string>): Server & { pid: number } {
    const log = join(this.work, `${name}.log`);
    const child = Bun.spawn(cmd, {
      cwd: this.work,
      env: { ...process.env, ...env },
      stdin: "ignore",
      stdout: Bun.file(log),
      stderr: Bun.file(log + ".err"),
    });
    this.children.push(child);
    return { name, url: "", child, log, pid: child.pid };
  }

  private async waitReady(server: Server, path: string): Promise<void> {
    const url = server.url + path;
    const until = Date.now() + 30_000;
    while (Date.now() < until) {
      if (server.child.exitCode !== null) {
        throw new Error(`${server.name} exited ${server.child.exitCode}\n${tail(server.log, 30)}\n${tail(server.log + ".err", 30)}`);
      }
      if (await fetch(url).then((r) => r.ok, () => false)) return;
      await Bun.sleep(100);
    }
    throw new Error(`${url} not ready after 30 s\n${tail(server.log + ".err", 30)}`);
  }

  /**
   * A throwaway PostgreSQL (bench/pg.ts) with database leadline_bench migrated by the executable
   * under test, a client of `max` connections for the suite, and pg_stat_statements when the
   * cluster has it.
   */
  async database(max = 2): Promise<Sql> {
    this.cluster = await startCluster();
    this.say(`PostgreSQL: ${this.cluster.label}`);
    const admin = postgres(this.cluster.url, { max: 1, onnotice: () => {} });
    await admin`create database ${admin(DATABASE)}`;
    await admin.end({ timeout: 2 });
    const url = this.databaseUrl();
    const mig = Bun.spawnSync([...this.exe, "migrate"], { cwd: this.work, env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: "warn" }, stdout: "pipe", stderr: "pipe" });
    if (mig.exitCode !== 0) throw new Error(`${this.exe.join(" ")} migrate failed: ${mig.stdout.toString()}${mig.stderr.toString()}`);
    this.sql = postgres(url, { max, onnotice: () => {} });
    try {
      await this.sql`create extension if not exists pg_stat_statements`;
      this.statements = true;
    } catch (err) {
      this.say(`pg_stat_statements unavailable (${err instanceof Error ? err.message : err}); no per-statement numbers`);
    }
    return this.sql;
  }

  databaseUrl(): string {
    if (!this.cluster) throw new Error("database() first");
    return this.cluster.url.replace(/\/postgres$/, `/${DATABASE}`);
  }

  /**
   * An instance of the service (`serve` of the executable under test) on a free port; resolves
   * once /readyz answers. With BENCH_PROFILE the suite's first instance runs from src/ under
   * bun's CPU profiler, which writes a markdown profile when the instance stops. `exe`: another
   * executable than the one under test (bench/outage.ts's before/after).
   */
  async service(env: Record<string, string> = {}, exe: string[] = this.exe): Promise<Server> {
    const n = this.services.length + 1;
    const name = n === 1 ? "leadline" : `leadline-${n}`;
    const dir = options.profileDir;
    const cmd =
      dir && n === 1
        ? [BUN, "--cpu-prof-md", `--cpu-prof-interval=${options.profileInterval}`, `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${this.name}-${Date.now()}.md`, join(root, "src/main.ts"), "serve"]
        : [...exe, "serve"];
    if (dir && n === 1) {
      mkdirSync(dir, { recursive: true });
      this.say(`BENCH_PROFILE: the service runs from src/ under the CPU profiler; the profile goes to ${dir}`);
    }
    const port = await freePort();
    const server = this.spawn(name, cmd, {
      DATABASE_URL: this.databaseUrl(),
      HOST: "127.0.0.1",
      PORT: String(port),
      LOG_LEVEL: "warn",
      DATA_DIR: join(this.work, "data"),
      NPK_IP_SALT: "bench",
      ...(options.poolOverride ? { DB_POOL_MAX: String(options.poolOverride) } : {}),
      ...env,
    });
    server.url = `http://127.0.0.1:${port}`;
    this.services.push(server);
    await this.waitReady(server, "/readyz");
    return server;
  }

  /** bench/baseline.ts on its own port, its pool as large as the service's; resolves once it answers. */
  async baseline(): Promise<Server> {
    const port = await freePort();
    const server = this.spawn("baseline", [BUN, join(import.meta.dir, "baseline.ts")], {
      DATABASE_URL: this.databaseUrl(),
      HOST: "127.0.0.1",
      PORT: String(port),
      POOL_MAX: String(POOL),
    });
    server.url = `http://127.0.0.1:${port}`;
    await this.waitReady(server, "/plain");
    return server;
  }

  /**
   * Inserts `n` keys of org 1 with `scopes` straight into api_keys (hashed as the service hashes
   * them), named `bench-<name>`; their plaintexts also go to a file, for wrk.
   */
  async keys(name: string, n: number, scopes: string[]): Promise<{ keys: string[]; file: string }> {
    const sql = this.sql!;
    const keys = Array.from({ length: n }, () => "lk_" + randomBytes(32).toString("base64url"));
    const hashes = keys.map((k) => createHash("sha256").update(k, "utf8").digest("hex"));
    await sql`
      insert into api_keys (key_hash, key_prefix, name, org_id, scopes)
      select decode(h, 'hex'), p, ${"bench-" + name}, 1, ${scopes}::text[]
      from unnest(${hashes}::text[], ${keys.map((k) => k.slice(0, 10))}::text[]) as u(h, p)`;
    const file = join(this.work, `keys-${name}.txt`);
    writeFileSync(file, keys.join("\n") + "\n");
    return { keys, file };
  }

  /** Org 1 (Acme), campaign ACME and its list 101: the account every suite's data belongs to. */
  async seedAccount(): Promise<void> {
    const sql = this.sql!;
    await sql`insert into orgs (id, name, company) values (1, 'Acme', 'Acme Roofing LLC')`;
    await sql`insert into campaigns (id, org_id, name) values ('ACME', 1, 'Acme')`;
    await sql`insert into lists (id, campaign_id, name) values (101, 'ACME', 'Web')`;
  }

  // -------------------------------------------------------------- measuring

  /**
   * Runs `load` and measures its window: CPU time of `servers`, of PostgreSQL, of the machine and
   * of the load generator (what the load reports as `driver_us`, else this process), and, with
   * `db`, the statements executed (pg_stat_statements is reset first).
   */
  async measure(servers: Server[], db: boolean, load: () => Promise<Counts>): Promise<Result> {
    if (db && this.statements) await this.sql!`select pg_stat_statements_reset()`;
    const appCpu = () => servers.reduce((a, s) => a + cpuOf(s.child.pid), 0);
    const dataDir = this.cluster!.dataDir;
    const [app0, pg0, m0, self0, t0] = [appCpu(), postgresCpu(dataDir), machineBusy(), selfCpu(), performance.now()];
    // The window is the whole call (wrk's own start and stop included), as the CPU counters see it.
    const c = await load();
    const [app1, pg1, m1, self1, t1] = [appCpu(), postgresCpu(dataDir), machineBusy(), selfCpu(), performance.now()];
    return {
      requests: c.requests,
      duration_us: c.duration_us,
      rps: c.rps ?? c.requests / (c.duration_us / 1e6),
      p50_us: c.p50_us,
      p99_us: c.p99_us,
      status_errors: c.status_errors,
      socket_errors: c.socket_errors,
      cpu: {
        app: app1 - app0,
        pg: pg1 - pg0,
        driver: c.driver_us ?? self1 - self0,
        machine: m1 - m0,
        capacity: (t1 - t0) * 1000 * CORES,
      },
      db: db ? await this.readStatements() : null,
    };
  }

  private async readStatements(): Promise<Statements | null> {
    if (!this.statements) return null;
    const rows = await this.sql!<{ query: string; calls: number; ms: number }[]>`
      select s.query, s.calls::float8 as calls, s.total_exec_time as ms
      from pg_stat_statements s join pg_database d on d.oid = s.dbid
      where d.datname = ${DATABASE} and s.query not ilike '%pg_stat%'`;
    const out: Statements = new Map();
    for (const r of rows) {
      const q = r.query.replace(/\s+/g, " ").trim();
      const seen = out.get(q) ?? { calls: 0, ms: 0 };
      out.set(q, { calls: seen.calls + r.calls, ms: seen.ms + r.ms });
    }
    return out;
  }

  /** One wrk process; its CPU time is the load generator's. */
  private async wrkProcess(url: string, args: Load["args"], seconds: number, conns: number, timeout: number): Promise<Counts> {
    this.wrkRuns++;
    const threads = Math.min(options.threads, conns);
    const opts = Object.entries({ ...args, run: this.wrkRuns, threads }).map(([k, v]) => `${k}=${v}`);
    const cmd = ["wrk", `-t${threads}`, `-c${conns}`, `-d${seconds}s`, "--timeout", `${timeout}s`, "-s", WRK_SCRIPT, url, "--", ...opts];
    const p = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe" });
    this.children.push(p);
    const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
    await p.exited;
    this.children.splice(this.children.indexOf(p), 1);
    const line = out.split("\n").find((l) => l.startsWith("BENCH "));
    if (p.exitCode !== 0 || !line) throw new Error(`wrk failed (exit ${p.exitCode}):\n${out}\n${err}`);
    const w = JSON.parse(line.slice(6));
    const usage = p.resourceUsage();
    return {
      requests: w.requests,
      duration_us: w.duration_us,
      p50_us: w.p50_us,
      p99_us: w.p99_us,
      status_errors: w.status_errors,
      socket_errors: w.connect_errors + w.read_errors + w.write_errors + w.timeouts,
      driver_us: usage ? Number(usage.cpuTime.user) + Number(usage.cpuTime.system) : 0,
    };
  }

  /** `load` for `seconds`, measured; `db` false skips pg_stat_statements (warm-ups, references). */
  async wrk(load: Load, seconds: number, db = true): Promise<Result> {
    const servers = [load.to].flat();
    const conns = load.conns ?? options.conns;
    const each = servers.length > 1 ? Math.max(1, Math.floor(conns / servers.length)) : conns;
    return this.measure(servers, db, async () =>
      mergeConcurrent(await Promise.all(servers.map((s, i) => this.wrkProcess(s.url, load.argsFor?.(i) ?? load.args, seconds, each, load.timeout ?? 5)))),
    );
  }

  /**
   * The loads `xs` measured in `rounds` slices, each round a slice of the reference `ref` and then
   * one of each x: the machine's speed drifts from minute to minute (other work on a shared
   * host), and a reference measured a minute earlier does not see that drift. Returns the merged
   * slices, and each x's ratio to its round's reference.
   */
  async slices(ref: Load, xs: Load[], seconds = SLICE, rounds = options.rounds): Promise<{ ref: Result; xs: { r: Result; ratios: number[] }[] }> {
    const refs: Result[] = [];
    const parts: Result[][] = xs.map(() => []);
    for (let i = 0; i < rounds; i++) {
      refs.push(await this.wrk(ref, seconds));
      for (const [j, x] of xs.entries()) parts[j].push(await this.wrk(x, seconds));
    }
    return {
      ref: mergeSlices(refs),
      xs: parts.map((ps) => ({ r: mergeSlices(ps), ratios: ps.map((p, i) => p.rps / refs[i].rps) })),
    };
  }

  // -------------------------------------------------------------- the table

  /** A row of the table; logged as it comes. */
  add(row: Row): void {
    this.rows.push(row);
    const r = row.r;
    const lat = r.p50_us === null ? "" : `, p50 ${fmtMs(r.p50_us)} ms, p99 ${fmtMs(r.p99_us ?? 0)} ms`;
    this.say(`${row.id}: ${r.rps.toFixed(0)}/s${lat}${row.vs ? `, ${pct(row.vs.ratio)} of (${row.vs.of})` : ""}${valid(row) ? "" : " — CHECK FAILED"}`);
  }

  private serviceLogs(): string[] {
    const out: string[] = [];
    for (const s of this.services) {
      const text = (tail(s.log, 2000).trim() + "\n" + tail(s.log + ".err", 50).trim()).trim();
      if (text) out.push(`${s.name}:`, ...text.split("\n").slice(-20));
    }
    return out;
  }

  private write(context: string, logs: string[]): void {
    const rev = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { cwd: root, stdout: "pipe", stderr: "ignore" }).stdout.toString().trim();
    const dirty = Bun.spawnSync(["git", "status", "--porcelain", "--", "src", "sql"], { cwd: root, stdout: "pipe", stderr: "ignore" }).stdout.toString().trim();
    const service = options.profileDir ? "src/main.ts under the CPU profiler" : this.exe.length > 1 ? "src/main.ts on bun" : this.exe[0].replace(root + "/", "");
    const lines = [
      `## ${this.title} (${this.name}), ${this.startedAt.toISOString()}`,
      "",
      `${CORES} CPUs (${cpus()[0]?.model ?? "?"}), shared by the load generator, the servers and PostgreSQL; commit ${rev || "?"}` +
        `${dirty ? " + uncommitted changes in src/sql" : ""}; ${this.cluster?.label.replace(/, throwaway cluster.*$/, ")") ?? "no PostgreSQL"}; service ${service}. ${context}`,
    ];
    // A suite without loads (startup) has only its notes.
    if (this.rows.length)
      lines.push(
        "",
        "| # | Scenario | req/s | p50 ms | p99 ms | vs baseline | target | result | CPU µs/req app / pg / wrk | DB stmts/req (exec µs/req) | CPU busy (other) | checks |",
        "|---|---|---:|---:|---:|---:|---|---|---:|---:|---:|---|",
      );
    for (const row of this.rows) {
      const r = row.r;
      const per = (us: number) => (us / Math.max(1, r.requests)).toFixed(0);
      const calls = r.db ? [...r.db.values()].reduce((a, v) => a + v.calls, 0) : 0;
      const ms = r.db ? [...r.db.values()].reduce((a, v) => a + v.ms, 0) : 0;
      const other = Math.max(0, r.cpu.machine - r.cpu.app - r.cpu.pg - r.cpu.driver);
      const result = !valid(row) ? "**INVALID**" : !row.target ? "—" : row.target.pass ? "pass" : "**MISS**";
      lines.push(
        `| ${row.id} | ${row.name} | ${r.rps.toFixed(0)} | ${r.p50_us === null ? "—" : fmtMs(r.p50_us)} | ${r.p99_us === null ? "—" : fmtMs(r.p99_us)} | ` +
          `${row.vs ? `${pct(row.vs.ratio)} of (${row.vs.of})` : "—"} | ${row.target?.text ?? "—"} | ${result} | ` +
          `${per(r.cpu.app)} / ${per(r.cpu.pg)} / ${per(r.cpu.driver)} | ` +
          `${r.db ? `${(calls / Math.max(1, r.requests)).toFixed(2)} (${per(ms * 1000)})` : "—"} | ` +
          `${pct(r.cpu.machine / r.cpu.capacity)} (${pct(other / r.cpu.capacity)}) | ${row.checks.join("; ")} |`,
      );
    }
    if (this.notes.length) lines.push("", ...this.notes);
    if (this.rows.some((row) => row.r.db?.size)) {
      lines.push("", "Database statements with the most execution time (pg_stat_statements, measured window):", "");
      lines.push("| # | per req | mean µs | share | statement |", "|---|---:|---:|---:|---|");
      for (const row of this.rows) {
        if (!row.r.db) continue;
        const all = [...row.r.db.entries()].sort((a, b) => b[1].ms - a[1].ms);
        const total = all.reduce((a, [, v]) => a + v.ms, 0);
        for (const [query, v] of all.slice(0, row.top ?? 3)) {
          const q = query.length > 110 ? query.slice(0, 107) + "..." : query;
          lines.push(
            `| ${row.id} | ${(v.calls / Math.max(1, row.r.requests)).toFixed(2)} | ${((v.ms * 1000) / Math.max(1, v.calls)).toFixed(0)} | ` +
              `${pct(total > 0 ? v.ms / total : 0)} | \`${q.replaceAll("|", "\\|").replaceAll("`", "'")}\` |`,
          );
        }
      }
    }
    if (logs.length) lines.push("", "Service log (warn and above):", "", "```", ...logs, "```");
    const md = lines.join("\n") + "\n";
    process.stdout.write("\n" + md);
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(join(RESULTS, `${this.name}.md`), md);
    writeFileSync(join(RESULTS, `${this.name}.json`), JSON.stringify(this.json(context), null, 1));
    this.say(`written to bench/results/${this.name}.md`);
    const invalid = this.rows.filter((row) => !valid(row));
    if (invalid.length) {
      this.say(`invalid scenarios (their numbers measure errors, not work):\n  ${invalid.map((row) => `${row.id} ${row.name}: ${row.checks.filter((c) => c.startsWith("FAIL")).join("; ")}`).join("\n  ")}`);
      process.exitCode = 1;
    }
  }

  /** The rows as numbers, for bench/report.ts (bench/RESULTS.md): per request CPU and statements. */
  private json(context: string): SuiteJson {
    return {
      suite: this.name,
      title: this.title,
      started: this.startedAt.toISOString(),
      service: this.exe.length > 1 ? "src/main.ts on bun" : this.exe[0].replace(root + "/", ""),
      context,
      rows: this.rows.map((row) => {
        const r = row.r;
        const n = Math.max(1, r.requests);
        const stmts = r.db ? [...r.db.entries()].sort((a, b) => b[1].ms - a[1].ms) : [];
        return {
          id: row.id,
          name: row.name,
          requests: r.requests,
          duration_us: r.duration_us,
          rps: r.rps,
          p50_us: r.p50_us,
          p99_us: r.p99_us,
          vs: row.vs ?? null,
          target: row.target ?? null,
          valid: valid(row),
          checks: row.checks,
          app_us: r.cpu.app / n,
          pg_us: r.cpu.pg / n,
          driver_us: r.cpu.driver / n,
          busy: r.cpu.machine / Math.max(1, r.cpu.capacity),
          other: Math.max(0, r.cpu.machine - r.cpu.app - r.cpu.pg - r.cpu.driver) / Math.max(1, r.cpu.capacity),
          db_calls: r.db ? stmts.reduce((a, [, v]) => a + v.calls, 0) / n : null,
          db_exec_us: r.db ? (stmts.reduce((a, [, v]) => a + v.ms, 0) * 1000) / n : null,
          statements: stmts.slice(0, 25).map(([query, v]) => ({ query: query.slice(0, 400), calls: v.calls, ms: v.ms })),
        };
      }),
      notes: this.notes,
      extra: this.extra,
    };
  }

  /** Ends the suite's client, then SIGTERM to what still runs (services drain, the profiler writes). */
  private async stop(): Promise<void> {
    await this.sql?.end({ timeout: 2 });
    for (const c of this.children) if (c.exitCode === null) c.kill("SIGTERM");
    await Promise.race([Promise.all(this.children.map((c) => c.exited)), Bun.sleep(10_000)]);
  }

  private cleanup(): void {
    if (this.cleaned) return;
    this.cleaned = true;
    for (const c of this.children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    this.cluster?.stop();
    rmSync(this.work, { recursive: true, force: true });
  }
}
