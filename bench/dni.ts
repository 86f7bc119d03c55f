// Number insertion under load (issue 8): `node_modules/.bin/bun bench/dni.ts` after `make build`.
// A throwaway PostgreSQL, a pool of BENCH_NUMBERS numbers, one or two `dist/leadline serve`
// instances, and a bare-handler baseline, driven by wrk. Prints a markdown table (requests/s,
// p50/p99, the ratio to the baseline measured in the same run, the targets).
//
//   base        the bare-handler baseline: an Elysia POST handler that parses the JSON body and
//               answers a lease-shaped JSON object with the CORS header
//   warm lease  returning visitors (BENCH_VISITORS of them, leased beforehand) leasing again:
//               answered from the instance's LRU, renewals written behind
//   warm beat   the same visitors' heartbeats
//   new lease   a visitor never seen before on every request: allocation under the pool's
//               advisory lock, on one instance, then on two (two wrk, half the connections each)
// Every request comes from one of BENCH_ADDRESSES X-Forwarded-For addresses at random
// (TRUST_PROXY=loopback trusts it from wrk on 127.0.0.1): the per-address limit is counted as in
// production, and at these volumes never reached.
// Warm scenarios alternate with the baseline in BENCH_ROUNDS slices and report the median ratio:
// a shared machine's speed drifts, and a baseline measured a minute earlier does not see that.
//
// env: BENCH_DURATION (s per scenario, default 6), BENCH_WARMUP (s, default 2),
//      BENCH_CONNECTIONS (default 32), BENCH_THREADS (default 2), BENCH_ROUNDS (default 3),
//      BENCH_VISITORS (default 20000), BENCH_NUMBERS (default 200000),
//      BENCH_ADDRESSES (client addresses drawn from at random, default 65536),
//      BENCH_EXE (an executable to test instead of dist/leadline; BENCH_EXE=src runs src/main.ts),
//      BENCH_PROFILE=DIR (the first instance runs from src/ under Bun's CPU profiler, which writes a
//      markdown profile into DIR at the end; its throughput is then not comparable).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import postgres from "postgres";
import { freePort, startCluster, type Cluster } from "./pg";

const root = resolve(import.meta.dir, "..");
const BUN = join(root, "node_modules/.bin/bun");
const EXE = process.env.BENCH_EXE === "src" ? [BUN, join(root, "src/main.ts")] : [resolve(process.env.BENCH_EXE ?? join(root, "dist/leadline"))];
const env = (name: string, dflt: number) => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : dflt;
};
const DURATION = env("BENCH_DURATION", 6);
const WARMUP = env("BENCH_WARMUP", 2);
const CONNS = env("BENCH_CONNECTIONS", 32);
const THREADS = env("BENCH_THREADS", 2);
const ROUNDS = env("BENCH_ROUNDS", 3);
const VISITORS = env("BENCH_VISITORS", 20_000);
const NUMBERS = env("BENCH_NUMBERS", 200_000);
const ADDRESSES = env("BENCH_ADDRESSES", 65_536);
const POOL = "bench";
const PROFILE = process.env.BENCH_PROFILE ? resolve(process.env.BENCH_PROFILE) : null;

const work = mkdtempSync(join(tmpdir(), "leadline-bench-dni-"));
const children: Subprocess[] = [];
let cluster: Cluster | null = null;
const say = (msg: string) => console.error(`bench/dni: ${msg}`);

function cleanup(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  cluster?.stop();
  rmSync(work, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => process.exit(130));

// ---------------------------------------------------------------- the baseline and wrk's script

const BASELINE = `
import { Elysia } from "elysia";
const headers = { "content-type": "application/json; charset=utf-8", "access-control-allow-origin": "*" };
new Elysia()
  .post("/hooks/dni.php", async ({ request }) => {
    const body = JSON.parse(await request.text());
    return new Response(JSON.stringify({ ok: true, number: "5125550101", formatted: "(512) 555-0101", ttl: 1800,
      fallback: false, placeholder: "5125550199", placeholder_formatted: "(512) 555-0199", v: body.visitor ? 1 : 0 }), { headers });
  }, { parse: "none" })
  .get("/readyz", () => ({ ok: true }))
  .listen({ port: Number(process.env.PORT), hostname: "127.0.0.1" });
`;

const LUA = `
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
end
local mode, visitors, addresses, pool, run
local seq = 0
function init(args)
  local opt = {}
  for _, a in ipairs(args) do
    local k, v = a:match("^([%w_]+)=(.*)$")
    if k then opt[k] = v end
  end
  mode = opt.mode
  visitors = tonumber(opt.visitors or "1")
  addresses = tonumber(opt.addresses or "65536")
  pool = opt.pool
  run = opt.run or "0"
  math.randomseed(tid * 7919 + os.time())
end
function request()
  local a = math.random(0, addresses - 1)
  local ip = string.format("10.%d.%d.%d", math.floor(a / 65536) % 256, math.floor(a / 256) % 256, a % 256)
  local headers = { ["Content-Type"] = "text/plain;charset=UTF-8", ["X-Forwarded-For"] = ip, ["User-Agent"] = "wrk" }
  local action, body
  if mode == "lease" then
    action = "lease"
    body = string.format('{"pool":"%s","visitor":"w%d","landing":"https://acme.example/"}', pool, math.random(1, visitors))
  elseif mode == "beat" then
    action = "heartbeat"
    body = string.format('{"pool":"%s","visitor":"w%d"}', pool, math.random(1, visitors))
  elseif mode == "new" then
    seq = seq + 1
    action = "lease"
    body = string.format('{"pool":"%s","visitor":"n%s_%d_%d","utm":{"source":"bench"},"landing":"https://acme.example/"}', pool, run, tid, seq)
  else
    error("unknown mode " .. tostring(mode))
  end
  return wrk.format("POST", "/hooks/dni.php?action=" .. action, headers, body)
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCH {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"status_errors":%d,"socket_errors":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), e.status,
    e.connect + e.read + e.write + e.timeout))
end
`;

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

/** The server processes by URL, for CPU per request. */
const pids = new Map<string, number>();

interface Result {
  /** CPU µs per request of the server answering (both servers' for a pair). */
  cpu_us: number;
  requests: number;
  duration_us: number;
  p50_us: number;
  p99_us: number;
  status_errors: number;
  socket_errors: number;
  rps: number;
}

let runDigit = 0;

async function wrk(url: string, args: Record<string, string | number>, seconds: number, conns = CONNS): Promise<Result> {
  runDigit++;
  const cpu0 = cpuOf(pids.get(url) ?? 0);
  const opts = Object.entries({ ...args, run: runDigit }).map(([k, v]) => `${k}=${v}`);
  const threads = Math.min(THREADS, conns);
  const p = Bun.spawn(["wrk", `-t${threads}`, `-c${conns}`, `-d${seconds}s`, "--timeout", "5s", "-s", join(work, "dni.lua"), url, "--", ...opts], {
    stdout: "pipe",
    stderr: "pipe",
  });
  children.push(p);
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  await p.exited;
  const line = out.split("\n").find((l) => l.startsWith("BENCH "));
  if (p.exitCode !== 0 || !line) throw new Error(`wrk failed (exit ${p.exitCode}):\n${out}\n${err}`);
  const r = JSON.parse(line.slice(6)) as Result;
  r.rps = r.requests / (r.duration_us / 1e6);
  r.cpu_us = (cpuOf(pids.get(url) ?? 0) - cpu0) / Math.max(1, r.requests);
  return r;
}

/** Two wrk at once, one per instance, as one result (latencies: the worse instance's). */
async function wrkPair(urls: [string, string], args: Record<string, string | number>, seconds: number): Promise<Result> {
  const half = Math.max(1, Math.floor(CONNS / 2));
  const [a, b] = await Promise.all(urls.map((u) => wrk(u, args, seconds, half)));
  return {
    cpu_us: (a.cpu_us * a.requests + b.cpu_us * b.requests) / Math.max(1, a.requests + b.requests),
    requests: a.requests + b.requests,
    duration_us: Math.max(a.duration_us, b.duration_us),
    p50_us: Math.max(a.p50_us, b.p50_us),
    p99_us: Math.max(a.p99_us, b.p99_us),
    status_errors: a.status_errors + b.status_errors,
    socket_errors: a.socket_errors + b.socket_errors,
    rps: a.rps + b.rps,
  };
}

// ---------------------------------------------------------------- processes

function spawn(name: string, cmd: string[], extraEnv: Record<string, string>): Subprocess {
  const child = Bun.spawn(cmd, {
    cwd: root,
    env: { ...process.env, ...extraEnv },
    stdin: "ignore",
    stdout: Bun.file(join(work, `${name}.log`)),
    stderr: Bun.file(join(work, `${name}.err`)),
  });
  children.push(child);
  return child;
}

async function waitReady(url: string, child: Subprocess, name: string): Promise<void> {
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`${name} exited ${child.exitCode}: see ${work}/${name}.err`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await Bun.sleep(100);
  }
  throw new Error(`${name} not ready after 30 s`);
}

const services: Subprocess[] = [];

async function startService(name: string, dbUrl: string, profile = false): Promise<string> {
  const port = await freePort();
  const cmd = profile ? [BUN, "--cpu-prof-md", `--cpu-prof-dir=${PROFILE}`, join(root, "src/main.ts"), "serve"] : [...EXE, "serve"];
  const child = spawn(name, cmd, {
    DATABASE_URL: dbUrl, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn", NPK_IP_SALT: "bench",
    TRUST_PROXY: "loopback", DATA_DIR: join(work, "data"),
  });
  services.push(child);
  const url = `http://127.0.0.1:${port}`;
  pids.set(url, child.pid);
  await waitReady(`${url}/readyz`, child, name);
  return url;
}

/** Leases every warm visitor once through `url`, 64 at a time. */
async function leaseVisitors(url: string): Promise<void> {
  let next = 1;
  let fallbacks = 0;
  const worker = async () => {
    while (next <= VISITORS) {
      const i = next++;
      const r = await fetch(`${url}/hooks/dni.php?action=lease`, {
        method: "POST",
        headers: { "x-forwarded-for": `10.200.${i >> 8 & 255}.${i & 255}` },
        body: JSON.stringify({ pool: POOL, visitor: `w${i}` }),
      });
      const body = (await r.json()) as { fallback?: boolean };
      if (body.fallback !== false) fallbacks++;
    }
  };
  await Promise.all(Array.from({ length: 64 }, worker));
  if (fallbacks) throw new Error(`${fallbacks} warm visitors got no number: raise BENCH_NUMBERS`);
}

// ---------------------------------------------------------------- the run

const ms = (us: number) => (us / 1000).toFixed(us < 10_000 ? 2 : 1);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  if (!existsSync(EXE[EXE.length - 1])) throw new Error(`${EXE.join(" ")} is missing: run make build (or set BENCH_EXE)`);
  writeFileSync(join(work, "dni.lua"), LUA);
  cluster = await startCluster();
  say(`PostgreSQL: ${cluster.label}`);
  const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
  await admin`create database leadline_bench`;
  await admin.end({ timeout: 2 });
  const dbUrl = cluster.url.replace(/\/postgres$/, "/leadline_bench");
  const mig = Bun.spawnSync([...EXE, "migrate"], { cwd: root, env: { ...process.env, DATABASE_URL: dbUrl, LOG_LEVEL: "warn" } });
  if (mig.exitCode !== 0) throw new Error(`migrate failed: ${mig.stderr.toString()}`);

  const sql = postgres(dbUrl, { max: 2, onnotice: () => {} });
  await sql`insert into orgs (id, name) values (1, 'Acme')`;
  await sql`insert into dni_pools (key, org_id, name, fallback, placeholder, ttl_seconds)
            values (${POOL}, 1, 'bench', '5125550100', '5125550199', 1800)`;
  await sql`insert into dni_numbers (pool_key, number)
            select ${POOL}, '2' || lpad(i::text, 9, '0') from generate_series(1, ${NUMBERS}) as i`;
  await sql`vacuum analyze`;
  say(`pool ${POOL}: ${NUMBERS} numbers`);

  const basePort = await freePort();
  const base = spawn("baseline", [BUN, "-e", BASELINE], { PORT: String(basePort) });
  const baseUrl = `http://127.0.0.1:${basePort}`;
  pids.set(baseUrl, base.pid);
  await waitReady(`${baseUrl}/readyz`, base, "baseline");
  const one = await startService("leadline-1", dbUrl, PROFILE !== null);
  const two = await startService("leadline-2", dbUrl);
  say(`baseline ${baseUrl}, instances ${one} and ${two}; ${WARMUP}s warm-up + ${DURATION}s per scenario, -t${THREADS} -c${CONNS}`);

  const t0 = Date.now();
  await leaseVisitors(one);
  say(`${VISITORS} warm visitors leased in ${Date.now() - t0} ms`);

  // Warm scenarios in slices alternating with the baseline.
  const slice = Math.max(1, Math.round(DURATION / ROUNDS));
  await wrk(baseUrl, { mode: "lease", pool: POOL, visitors: VISITORS, addresses: ADDRESSES }, WARMUP);
  await wrk(one, { mode: "lease", pool: POOL, visitors: VISITORS, addresses: ADDRESSES }, WARMUP);
  const parts: Record<string, Result[]> = { base: [], lease: [], beat: [] };
  const ratios: Record<string, number[]> = { lease: [], beat: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const b = await wrk(baseUrl, { mode: "lease", pool: POOL, visitors: VISITORS, addresses: ADDRESSES }, slice);
    parts.base.push(b);
    for (const mode of ["lease", "beat"] as const) {
      const x = await wrk(one, { mode, pool: POOL, visitors: VISITORS, addresses: ADDRESSES }, slice);
      parts[mode].push(x);
      ratios[mode].push(x.rps / b.rps);
    }
  }
  const merged = (rs: Result[]): Result => {
    const requests = rs.reduce((a, r) => a + r.requests, 0);
    const duration = rs.reduce((a, r) => a + r.duration_us, 0);
    const mid = [...rs].sort((a, b) => a.rps - b.rps)[Math.floor(rs.length / 2)];
    const cpu_us = rs.reduce((a, r) => a + r.cpu_us * r.requests, 0) / Math.max(1, requests);
    return { ...mid, cpu_us, requests, duration_us: duration, rps: requests / (duration / 1e6),
      status_errors: rs.reduce((a, r) => a + r.status_errors, 0), socket_errors: rs.reduce((a, r) => a + r.socket_errors, 0) };
  };

  // New visitors: one instance, then two.
  const holdsBefore = Number((await sql`select count(*)::int as n from dni_hold_history`)[0].n);
  await wrk(one, { mode: "new", pool: POOL, addresses: ADDRESSES }, WARMUP);
  const newOne = await wrk(one, { mode: "new", pool: POOL, addresses: ADDRESSES }, DURATION);
  await wrkPair([one, two], { mode: "new", pool: POOL, addresses: ADDRESSES }, WARMUP);
  const newTwo = await wrkPair([one, two], { mode: "new", pool: POOL, addresses: ADDRESSES }, DURATION);
  const holdsAfter = Number((await sql`select count(*)::int as n from dni_hold_history`)[0].n);
  const [{ overlaps }] = await sql`
    select count(*)::int as overlaps from dni_hold_spans a join dni_hold_spans b
      on a.number = b.number and a.id < b.id and a.started_at < b.ends_at and b.started_at < a.ends_at`;
  await sql.end({ timeout: 2 });
  // A clean stop (SIGTERM): the services drain, and the profiler writes its file.
  for (const s of services) s.kill("SIGTERM");
  await Promise.race([Promise.all(services.map((s) => s.exited)), Bun.sleep(10_000)]);
  if (PROFILE) say(`CPU profile of the first instance in ${PROFILE}`);

  const row = (name: string, r: Result, ratio: string, target: string) =>
    `| ${name} | ${Math.round(r.rps).toLocaleString("en-US")} | ${ms(r.p50_us)} | ${ms(r.p99_us)} | ${ratio} | ${target} | ${Math.round(r.cpu_us)} | ${r.status_errors + r.socket_errors} |`;
  const pct = (x: number) => `${Math.round(x * 100)}%`;
  const lease = median(ratios.lease);
  const beat = median(ratios.beat);
  const lines = [
    `DNI benchmark, ${new Date().toISOString()}: -t${THREADS} -c${CONNS}, ${ROUNDS} slices of ${slice}s (warm) / ${DURATION}s (new), ${VISITORS} warm visitors, pool of ${NUMBERS}`,
    "",
    "| scenario | req/s | p50 ms | p99 ms | vs baseline | target | server CPU µs/req | errors |",
    "|---|---:|---:|---:|---:|---|---:|---:|",
    row("baseline: bare Elysia POST handler", merged(parts.base), "100%", "", ),
    row("warm lease (returning visitor)", merged(parts.lease), pct(lease), `≥ 60% ${lease >= 0.6 ? "✓" : "✗"}`),
    row("warm heartbeat", merged(parts.beat), pct(beat), `≥ 60% ${beat >= 0.6 ? "✓" : "✗"}`),
    row("new-visitor lease, 1 instance", newOne, "", `≥ 2,000/s, p99 < 50 ms ${newOne.rps >= 2000 && newOne.p99_us < 50_000 ? "✓" : "✗"}`),
    row("new-visitor lease, 2 instances", newTwo, "", `more than 1 instance ${newTwo.rps > newOne.rps ? "✓" : "✗"}`),
    "",
    `new-visitor holds written: ${holdsAfter - holdsBefore}; numbers held by two visitors at once: ${overlaps}`,
  ];
  console.log(lines.join("\n"));
}

try {
  await main();
} catch (err) {
  say(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
} finally {
  cleanup();
}
