// Messaging throughput beside its baselines, in one run (issue 7):
//   b       baseline: bare Elysia + one indexed SELECT (bench/baseline.ts), measured before and after
//   intake  lead intake, new phone each (one transaction): the bar notes must reach
//   notes   POST r=messages channel note, new operation_id each: the full send path, one statement
//   replays POST r=messages with one operation_id already used: the idempotent replay, one statement
//   sms     POST r=messages channel sms, new operation_id each, against a fake Twilio on 127.0.0.1
// Targets on the 2-core machine: notes ≥ intake; replays ≥ 50% of b.
//
//   node_modules/.bin/bun bench/messages.ts        (wrk must be installed; see bench/run.sh)
//
// env: BENCH_DURATION (s, default 6), BENCH_WARMUP (s, default 2), BENCH_CONNECTIONS (default 32),
//      BENCH_THREADS (default 2), BENCH_EXE (default dist/leadline when built, else `bun src/main.ts`),
//      BENCH_ONLY (e.g. `notes,replays`: those scenarios, the baseline always; intake comes with notes).
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
const DURATION = num("BENCH_DURATION", 6);
const WARMUP = num("BENCH_WARMUP", 2);
const CONNS = num("BENCH_CONNECTIONS", 32);
const THREADS = num("BENCH_THREADS", 2);
const POOL = Math.max(2, availableParallelism() * 2);
const ONLY = process.env.BENCH_ONLY?.split(",").map((x) => x.trim()).filter(Boolean) ?? null;
const LEADS = 1000;
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
  const keys = {
    note: await makeKeys(sql, "note", KEYS.note, ["messages:write"]),
    replay: await makeKeys(sql, "replay", KEYS.replay, ["messages:write"]),
    sms: await makeKeys(sql, "sms", KEYS.sms, ["messages:write"]),
    intake: await makeKeys(sql, "intake", KEYS.intake, ["leads:write"]),
  };
  await sql`vacuum analyze`;

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

  const SKIPPED: Wrk = { requests: 0, duration_us: 1, p50_us: 0, p99_us: 0, status_errors: 0, socket_errors: 0, rps: 0 };
  const measure = async (url: string, args: Record<string, string | number>) => {
    const scenario = String(args.mode);
    const wanted = scenario === "base_lead" || !ONLY || ONLY.includes(scenario) || (scenario === "intake" && ONLY.includes("notes"));
    if (!wanted) return SKIPPED;
    await wrk(url, args, WARMUP);
    return wrk(url, args, DURATION);
  };
  /** Rows are counted once requests still in flight when wrk stopped have finished. */
  const settle = () => Bun.sleep(1000);
  const count = async (q: postgres.PendingQuery<postgres.Row[]>) => Number((await q)[0].n);
  say(`${WARMUP}s warm-up + ${DURATION}s per scenario, -t${THREADS} -c${CONNS}`);

  const b1 = await measure(baseUrl, { mode: "base_lead", leads: LEADS });
  const leads0 = await count(sql`select count(*)::int as n from leads`);
  const intake = await measure(svcUrl, { mode: "intake", keys: keys.intake });
  await settle();
  const intakeRows = (await count(sql`select count(*)::int as n from leads`)) - leads0;
  const notes0 = await count(sql`select count(*)::int as n from messages where channel = 'note'`);
  const notes = await measure(svcUrl, { mode: "notes", leads: LEADS, keys: keys.note });
  await settle();
  const noteRows = (await count(sql`select count(*)::int as n from messages where channel = 'note'`)) - notes0;
  const replays = await measure(svcUrl, { mode: "replays", rlead: 1, keys: keys.replay });
  const replayRows = await count(sql`select count(*)::int as n from messages where operation_id = 'bench-replay'`);
  const sample = await fetch(`${svcUrl}/hooks/api_v1.php?r=messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": (await Bun.file(keys.replay).text()).split("\n")[1] },
    body: JSON.stringify({ lead_id: 1, channel: "note", body: "replayed", operation_id: "bench-replay" }),
  });
  const sampleText = await sample.text();
  twilio.reset();
  const sms = await measure(svcUrl, { mode: "sms", leads: LEADS, keys: keys.sms });
  await settle();
  const smsSent = await count(sql`select count(*)::int as n from messages where channel = 'sms' and status = 'sent'`);
  const smsCalls = twilio.requests.length;
  const b2 = await measure(baseUrl, { mode: "base_lead", leads: LEADS });
  const b = (b1.rps + b2.rps) / 2;

  const clean = (r: Wrk) => r.status_errors === 0 && r.socket_errors === 0;
  const rows: [string, Wrk, string, string, string][] = [
    ["b: baseline, bare Elysia + 1 SELECT (before / after)", { ...b1, rps: b }, "-", "-", `${Math.round(b1.rps)} / ${Math.round(b2.rps)} req/s`],
    ["lead intake, new phone each", intake, `${pct(intake.rps / b)} of b`, "-", `${intakeRows} leads written (warm-up included)${clean(intake) ? "" : "; ERRORS"}`],
    [
      "notes, new operation_id each (full path)",
      notes,
      `${pct(notes.rps / intake.rps)} of intake`,
      `≥ 100% of intake: ${notes.rps >= intake.rps ? "pass" : "**MISS**"}`,
      `${noteRows} notes written (warm-up included)${noteRows >= notes.requests ? "" : " (FEWER THAN REQUESTS)"}${clean(notes) ? "" : "; ERRORS"}`,
    ],
    [
      "idempotent replays, one operation_id",
      replays,
      `${pct(replays.rps / b)} of b`,
      `≥ 50% of b: ${replays.rps >= 0.5 * b ? "pass" : "**MISS**"}`,
      `${replayRows} row${replayRows === 1 ? "" : "S"}; ${sampleText === firstText ? "replay byte-identical" : "REPLAY DIFFERS"}${clean(replays) ? "" : "; ERRORS"}`,
    ],
    [
      "SMS sends against the fake Twilio",
      sms,
      `${pct(sms.rps / b)} of b`,
      "-",
      `${smsCalls} provider calls, ${smsSent} sent${smsCalls === smsSent ? "" : " (MISMATCH)"}${clean(sms) ? "" : "; ERRORS"}`,
    ],
  ];
  const ms = (us: number) => (us / 1000).toFixed(us < 10_000 ? 2 : 1);
  console.log(`\n### Messaging (${new Date().toISOString()}, ${WARMUP}+${DURATION} s per scenario, -c${CONNS}, ${SERVICE[0].endsWith("leadline") ? "dist/leadline" : "src via bun"})\n`);
  console.log("| scenario | req/s | vs baseline | target | p50 ms | p99 ms | checks |");
  console.log("|---|---:|---:|---|---:|---:|---|");
  for (const [name, r, vs, target, checks] of rows) {
    console.log(`| ${name} | ${Math.round(r.rps)} | ${vs} | ${target} | ${ms(r.p50_us)} | ${ms(r.p99_us)} | ${checks} |`);
  }
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
