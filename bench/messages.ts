// Messaging throughput beside its baselines, in one run (issue 7):
//   b       baseline: bare Elysia + one indexed SELECT (bench/baseline.ts)
//   intake  lead intake, new phone each (one transaction): the bar notes must reach
//   notes   POST r=messages channel note, new operation_id each: the full send path, one statement
//   replays POST r=messages with one operation_id already used: the idempotent replay, one statement
//   sms     POST r=messages channel sms, new operation_id each, against a fake Twilio on 127.0.0.1
// Targets on the 2-core machine: notes ≥ intake; replays ≥ 50% of b. Each scenario runs in slices
// alternating with its reference (intake for notes, b for the others): the median slice ratio counts.
//
//   node_modules/.bin/bun bench/messages.ts        (wrk must be installed; see bench/run.sh)
//
// env: BENCH_DURATION (s per slice, default 2), BENCH_ROUNDS (slices, default 3), BENCH_WARMUP (s, default 2),
//      BENCH_CONNECTIONS (default 32),
//      BENCH_THREADS (default 2), BENCH_EXE (default dist/leadline when built, else `bun src/main.ts`),
//      BENCH_ONLY (e.g. `notes,replays`: those scenarios, each with its reference).
// Starts a throwaway PostgreSQL (bench/pg.ts), the service, the baseline and the fake Twilio; removes
// them on exit. Prints a markdown table on stdout.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import postgres from "postgres";
import { startFakeTwilio, type FakeTwilio } from "../test/harness/fake-twilio";
import { freePort, startCluster, type Cluster } from "./pg";

const root = resolve(import.meta.dir, "..");
const BUN = join(root, "node_modules/.bin/bun");
const EXE = process.env.BENCH_EXE ? resolve(process.env.BENCH_EXE) : existsSync(join(root, "dist/leadline")) ? join(root, "dist/leadline") : null;
const SERVICE = EXE ? [EXE] : [BUN, join(root, "src/main.ts")];

const num = (name: string, dflt: number) => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : dflt;
};
const DURATION = num("BENCH_DURATION", 2);
const ROUNDS = num("BENCH_ROUNDS", 3);
const WARMUP = num("BENCH_WARMUP", 2);
const CONNS = num("BENCH_CONNECTIONS", 32);
const THREADS = num("BENCH_THREADS", 2);
const POOL = Math.max(2, availableParallelism() * 2);
const ONLY = process.env.BENCH_ONLY?.split(",").map((x) => x.trim()).filter(Boolean) ?? null;
const LEADS = 1000;
const HISTORY = 20_000;
// Keys per scenario: none may reach its hourly limit (api_v1 300, intake 120) in warm-up + run.
const KEYS = { note: 1000, replay: 1000, sms: 300, intake: 2000 };

const work = mkdtempSync(join(tmpdir(), "leadline-bench-msg-"));
const children: Subprocess[] = [];
let cluster: Cluster | null = null;
let twilio: FakeTwilio | null = null;
let cleaned = false;

function cleanup(): void {
  if (cleaned) return;
  cleaned = true;
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  cluster?.stop();
  rmSync(work, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const s of ["SIGINT", "SIGTERM"] as const) process.on(s, () => (cleanup(), process.exit(130)));
const say = (m: string) => console.error(`bench/messages: ${m}`);

// One wrk script for every scenario, so each pays wrk the same per-request Lua cost.
const LUA = String.raw`
local counter = 0
function setup(thread) counter = counter + 1; thread:set("tid", counter) end
local mode, keys, nkeys, leads, run, rlead
local i, seq = 0, 0
function init(args)
  local o = {}
  for _, a in ipairs(args) do local k, v = a:match("^([%w_]+)=(.*)$"); if k then o[k] = v end end
  mode, leads, run, rlead = o.mode, tonumber(o.leads or "1"), o.run or "0", o.rlead or "1"
  keys = {}
  if o.keys then for line in io.lines(o.keys) do if #line > 0 then keys[#keys + 1] = line end end end
  nkeys = #keys
  if nkeys == 0 then keys[1] = "none"; nkeys = 1 end
  i = math.floor((tid - 1) * nkeys / 2)
  math.randomseed(tid * 7919 + os.time())
end
local function key() i = i + 1; return keys[i % nkeys + 1] end
local function api(body)
  return wrk.format("POST", "/hooks/api_v1.php?r=messages", { ["X-Api-Key"] = key(), ["Content-Type"] = "application/json" }, body)
end
function request()
  seq = seq + 1
  if mode == "base_lead" then
    return wrk.format("GET", "/lead?id=" .. math.random(1, leads))
  elseif mode == "intake" then
    local phone = string.format("7%s%d%07d", run, tid % 10, seq)
    return wrk.format("POST", "/hooks/lead_intake.php", { ["X-Api-Key"] = key(), ["Content-Type"] = "application/json" },
      string.format('{"phone":"%s","list_id":101,"first_name":"Bench %d"}', phone, seq))
  elseif mode == "notes" then
    return api(string.format('{"lead_id":%d,"channel":"note","body":"Called, left a voicemail.","operation_id":"n%st%d-%d"}',
      math.random(1, leads), run, tid, seq))
  elseif mode == "replays" then
    return api(string.format('{"lead_id":%s,"channel":"note","body":"replayed","operation_id":"bench-replay"}', rlead))
  elseif mode == "sms" then
    return api(string.format('{"lead_id":%d,"channel":"sms","body":"Hi {first_name}, thanks!","operation_id":"s%st%d-%d"}',
      math.random(1, leads), run, tid, seq))
  end
  error("unknown mode " .. tostring(mode))
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCH {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"status_errors":%d,"socket_errors":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), e.status, e.connect + e.read + e.write + e.timeout))
end
`;

interface Wrk {
  requests: number;
  duration_us: number;
  p50_us: number;
  p99_us: number;
  status_errors: number;
  socket_errors: number;
  rps: number;
}

let runDigit = 0;
async function wrk(url: string, args: Record<string, string | number>, seconds: number): Promise<Wrk> {
  runDigit = (runDigit + 1) % 10;
  const opts = Object.entries({ ...args, run: runDigit }).map(([k, v]) => `${k}=${v}`);
  const p = Bun.spawn(["wrk", `-t${THREADS}`, `-c${CONNS}`, `-d${seconds}s`, "--timeout", "15s", "-s", join(work, "messages.lua"), url, "--", ...opts], {
    stdout: "pipe",
    stderr: "pipe",
  });
  children.push(p);
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  await p.exited;
  const line = out.split("\n").find((l) => l.startsWith("BENCH "));
  if (p.exitCode !== 0 || !line) throw new Error(`wrk failed (exit ${p.exitCode}):\n${out}\n${err}`);
  const r = JSON.parse(line.slice(6)) as Wrk;
  r.rps = r.requests / (r.duration_us / 1e6);
  return r;
}

async function makeKeys(sql: postgres.Sql, name: string, n: number, scopes: string[]): Promise<string> {
  const plain = Array.from({ length: n }, () => "lk_" + randomBytes(32).toString("base64url"));
  await sql`
    insert into api_keys (key_hash, key_prefix, name, org_id, scopes)
    select decode(h, 'hex'), p, ${"bench-" + name}, 1, ${scopes}::text[]
    from unnest(${plain.map((k) => createHash("sha256").update(k).digest("hex"))}::text[], ${plain.map((k) => k.slice(0, 10))}::text[]) as u(h, p)`;
  const file = join(work, `keys-${name}.txt`);
  writeFileSync(file, plain.join("\n") + "\n");
  return file;
}

async function waitReady(url: string, child: Subprocess): Promise<void> {
  const end = Date.now() + 30_000;
  while (Date.now() < end) {
    if (child.exitCode !== null) throw new Error(`${url}: process exited ${child.exitCode}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {}
    await Bun.sleep(100);
  }
  throw new Error(`${url} not ready after 30 s`);
}

function spawn(cmd: string[], env: Record<string, string>): Subprocess {
  const child = Bun.spawn(cmd, { cwd: work, env: { ...process.env, ...env }, stdin: "ignore", stdout: "ignore", stderr: "inherit" });
  children.push(child);
  return child;
}

async function main(): Promise<void> {
  cluster = await startCluster();
  say(`PostgreSQL: ${cluster.label}; service: ${SERVICE.join(" ")}`);
  const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
  await admin`create database leadline_bench`;
  await admin.end({ timeout: 2 });
  const dbUrl = cluster.url.replace(/\/postgres$/, "/leadline_bench");
  const mig = Bun.spawnSync([...SERVICE, "migrate"], { env: { ...process.env, DATABASE_URL: dbUrl, LOG_LEVEL: "warn" }, stdout: "pipe", stderr: "pipe" });
  if (mig.exitCode !== 0) throw new Error(`migrate failed: ${mig.stdout}${mig.stderr}`);

  twilio = await startFakeTwilio();
  const sql = postgres(dbUrl, { max: 2, onnotice: () => {} });
  await sql`insert into orgs (id, name, company, sms) values (1, 'Acme', 'Acme Roofing LLC',
    ${sql.json({ base_url: twilio.url, account_sid: "ACbench", auth_token: "bench", from: "5125550100" })})`;
  await sql`insert into org_billing (org_id, status, subscription, credits, sms_cost) values (1, 'active', 'active', 1000000000, 0.0001)`;
  await sql`insert into campaigns (id, org_id, name) values ('ACME', 1, 'Acme')`;
  await sql`insert into lists (id, campaign_id, name) values (101, 'ACME', 'Web')`;
  await sql`
    insert into leads (list_id, phone, first_name, last_name, state)
    select 101, '555' || lpad(i::text, 7, '0'), 'First' || i, 'Last' || i, 'TX' from generate_series(1, ${LEADS}) i`;
  // A history of messages, as an installation in use has: statements are planned once per
  // connection (plan_cache_mode=force_generic_plan), and a plan made on an empty table scans it.
  await sql`
    insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, body, status, operation_id, op_scope, request_hash, result)
    select (i % ${LEADS}) + 1, 1, 'note', 'out', 'api_key', '1', 'history ' || i, 'stored', 'hist-' || i, 1, 'h',
           '{"ok":true,"message_id":' || i || '}'
    from generate_series(1, ${HISTORY}) i`;
  const keys = {
    note: await makeKeys(sql, "note", KEYS.note, ["messages:write"]),
    replay: await makeKeys(sql, "replay", KEYS.replay, ["messages:write"]),
    sms: await makeKeys(sql, "sms", KEYS.sms, ["messages:write"]),
    intake: await makeKeys(sql, "intake", KEYS.intake, ["leads:write"]),
  };
  // Only the seeded tables: statistics that call an empty table empty make plans that scan it once it fills.
  await sql`vacuum analyze leads, messages, lead_channels, api_keys`;

  const svcPort = await freePort();
  const svc = spawn([...SERVICE, "serve"], { DATABASE_URL: dbUrl, PORT: String(svcPort), HOST: "127.0.0.1", LOG_LEVEL: "warn", NPK_IP_SALT: "bench" });
  const basePort = await freePort();
  const base = spawn([BUN, join(import.meta.dir, "baseline.ts")], { DATABASE_URL: dbUrl, PORT: String(basePort), HOST: "127.0.0.1", POOL_MAX: String(POOL) });
  const svcUrl = `http://127.0.0.1:${svcPort}`;
  const baseUrl = `http://127.0.0.1:${basePort}`;
  await waitReady(`${svcUrl}/readyz`, svc);
  await waitReady(`${baseUrl}/plain`, base);
  writeFileSync(join(work, "messages.lua"), LUA);

  // The replayed operation: recorded once before the run.
  const first = await fetch(`${svcUrl}/hooks/api_v1.php?r=messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": (await Bun.file(keys.replay).text()).split("\n")[0] },
    body: JSON.stringify({ lead_id: 1, channel: "note", body: "replayed", operation_id: "bench-replay" }),
  });
  const firstText = await first.text();
  if (first.status !== 200) throw new Error(`replay seed failed: ${first.status} ${firstText}`);

  /** Rows are counted once requests still in flight when wrk stopped have finished. */
  const settle = () => Bun.sleep(1000);
  const count = async (q: postgres.PendingQuery<postgres.Row[]>) => Number((await q)[0].n);
  const wanted = (id: string) => !ONLY || ONLY.includes(id);
  say(`${WARMUP}s warm-up, then ${ROUNDS} slices of ${DURATION}s alternating with the reference, -t${THREADS} -c${CONNS}`);

  // The machine's speed drifts (other work on a shared host): each scenario is measured in slices
  // alternating with its reference, and its ratio is the median of the slices' ratios.
  interface Paired {
    x: Wrk;
    ref: Wrk;
    ratios: number[];
  }
  const merge = (parts: Wrk[]): Wrk => {
    const requests = parts.reduce((a, r) => a + r.requests, 0);
    const duration = parts.reduce((a, r) => a + r.duration_us, 0);
    const mid = [...parts].sort((a, b) => a.rps - b.rps)[Math.floor(parts.length / 2)];
    return {
      ...mid,
      requests,
      duration_us: duration,
      rps: requests / (duration / 1e6),
      status_errors: parts.reduce((a, r) => a + r.status_errors, 0),
      socket_errors: parts.reduce((a, r) => a + r.socket_errors, 0),
    };
  };
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  // Per-statement database time of a scenario's slices (pg_stat_statements, when installed).
  let statements = true;
  try {
    await sql`create extension if not exists pg_stat_statements`;
  } catch {
    statements = false;
  }
  const stats = new Map<string, { calls: number; ms: number }>();
  const statsReset = async () => {
    if (statements) await sql`select pg_stat_statements_reset()`;
  };
  const statsAdd = async () => {
    if (!statements) return;
    const rows = await sql<{ query: string; calls: number; ms: number }[]>`
      select s.query, s.calls::float8 as calls, s.total_exec_time as ms
      from pg_stat_statements s join pg_database d on d.oid = s.dbid
      where d.datname = 'leadline_bench' and s.query not ilike '%pg_stat%'`;
    for (const r of rows) {
      const q = r.query.replace(/\s+/g, " ").trim();
      const seen = stats.get(q) ?? { calls: 0, ms: 0 };
      stats.set(q, { calls: seen.calls + r.calls, ms: seen.ms + r.ms });
    }
  };
  const statsLine = (requests: number): string => {
    if (!statements) return "";
    const all = [...stats.entries()];
    const calls = all.reduce((a, [, v]) => a + v.calls, 0);
    const ms = all.reduce((a, [, v]) => a + v.ms, 0);
    const top = all.sort((a, b) => b[1].ms - a[1].ms).slice(0, 3);
    stats.clear();
    return (
      `; db ${(calls / Math.max(1, requests)).toFixed(2)} stmts/req, ${((ms * 1000) / Math.max(1, requests)).toFixed(0)} µs/req` +
      top.map(([q, v]) => `<br>${((v.ms * 1000) / Math.max(1, v.calls)).toFixed(0)} µs × ${(v.calls / Math.max(1, requests)).toFixed(2)}/req: \`${q.slice(0, 90)}…\``).join("")
    );
  };
  async function paired(url: string, args: Record<string, string | number>, refUrl: string, refArgs: Record<string, string | number>): Promise<Paired> {
    await wrk(refUrl, refArgs, WARMUP);
    await wrk(url, args, WARMUP);
    const xs: Wrk[] = [];
    const refs: Wrk[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      refs.push(await wrk(refUrl, refArgs, DURATION));
      await statsReset();
      xs.push(await wrk(url, args, DURATION));
      await statsAdd();
    }
    return { x: merge(xs), ref: merge(refs), ratios: xs.map((x, i) => x.rps / refs[i].rps) };
  }
  const B = { mode: "base_lead", leads: LEADS };
  const clean = (r: Wrk) => r.status_errors === 0 && r.socket_errors === 0;
  const ms = (us: number) => (us / 1000).toFixed(us < 10_000 ? 2 : 1);
  const rows: string[] = [];
  const row = (name: string, r: Wrk, vs: string, target: string, checks: string) =>
    rows.push(`| ${name} | ${Math.round(r.rps)} | ${vs} | ${target} | ${ms(r.p50_us)} | ${ms(r.p99_us)} | ${checks} |`);
  const slices = (ratios: number[]) => ratios.map(pct).join(", ");

  if (wanted("notes")) {
    const leads0 = await count(sql`select count(*)::int as n from leads`);
    const notes0 = await count(sql`select count(*)::int as n from messages where channel = 'note'`);
    const p = await paired(svcUrl, { mode: "notes", leads: LEADS, keys: keys.note }, svcUrl, { mode: "intake", keys: keys.intake });
    await settle();
    const intakeRows = (await count(sql`select count(*)::int as n from leads`)) - leads0;
    const noteRows = (await count(sql`select count(*)::int as n from messages where channel = 'note'`)) - notes0;
    const r = median(p.ratios);
    row("lead intake, new phone each (reference)", p.ref, "-", "-", `${intakeRows} leads written (warm-up included)${clean(p.ref) ? "" : "; ERRORS"}`);
    row(
      "notes, new operation_id each (full path)",
      p.x,
      `${pct(r)} of intake (slices ${slices(p.ratios)})`,
      `≥ 100% of intake: ${r >= 1 ? "pass" : "**MISS**"}`,
      `${noteRows} notes written (warm-up included)${noteRows >= p.x.requests ? "" : " (FEWER THAN REQUESTS)"}${clean(p.x) ? "" : "; ERRORS"}${statsLine(p.x.requests)}`,
    );
  }
  if (wanted("replays")) {
    const p = await paired(svcUrl, { mode: "replays", rlead: 1, keys: keys.replay }, baseUrl, B);
    const replayRows = await count(sql`select count(*)::int as n from messages where operation_id = 'bench-replay'`);
    const sample = await fetch(`${svcUrl}/hooks/api_v1.php?r=messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": (await Bun.file(keys.replay).text()).split("\n")[1] },
      body: JSON.stringify({ lead_id: 1, channel: "note", body: "replayed", operation_id: "bench-replay" }),
    });
    const sampleText = await sample.text();
    const r = median(p.ratios);
    row("b: baseline, bare Elysia + 1 SELECT (beside replays)", p.ref, "-", "-", clean(p.ref) ? "" : "ERRORS");
    row(
      "idempotent replays, one operation_id",
      p.x,
      `${pct(r)} of b (slices ${slices(p.ratios)})`,
      `≥ 50% of b: ${r >= 0.5 ? "pass" : "**MISS**"}`,
      `${replayRows} row${replayRows === 1 ? "" : "S"}; ${sampleText === firstText ? "replay byte-identical" : "REPLAY DIFFERS"}${clean(p.x) ? "" : "; ERRORS"}${statsLine(p.x.requests)}`,
    );
  }
  if (wanted("sms")) {
    twilio.reset();
    const p = await paired(svcUrl, { mode: "sms", leads: LEADS, keys: keys.sms }, baseUrl, B);
    await settle();
    const smsSent = await count(sql`select count(*)::int as n from messages where channel = 'sms' and status = 'sent'`);
    const smsCalls = twilio.requests.length;
    row("b: baseline, bare Elysia + 1 SELECT (beside SMS)", p.ref, "-", "-", clean(p.ref) ? "" : "ERRORS");
    row(
      "SMS sends against the fake Twilio",
      p.x,
      `${pct(median(p.ratios))} of b (slices ${slices(p.ratios)})`,
      "-",
      `${smsCalls} provider calls, ${smsSent} sent (warm-up included)${smsCalls === smsSent ? "" : " (MISMATCH)"}${clean(p.x) ? "" : "; ERRORS"}${statsLine(p.x.requests)}`,
    );
  }

  console.log(`\n### Messaging (${new Date().toISOString()}, ${ROUNDS} × ${DURATION} s slices, -c${CONNS}, ${SERVICE[0].endsWith("leadline") ? "dist/leadline" : "src via bun"})\n`);
  console.log("| scenario | req/s | vs reference (median of slices) | target | p50 ms | p99 ms | checks |");
  console.log("|---|---:|---|---|---:|---:|---|");
  for (const r of rows) console.log(r);
  await sql.end({ timeout: 2 });
  for (const c of children) if (c.exitCode === null) c.kill("SIGTERM");
  await twilio.stop();
}

const pct = (x: number) => `${Math.round(x * 100)}%`;

try {
  await main();
  cleanup();
  process.exit(0);
} catch (err) {
  console.error("bench/messages:", err instanceof Error ? err.message : err);
  cleanup();
  process.exit(1);
}
