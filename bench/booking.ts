// Booking benchmark: slots reads/s for a calendar with a 14-day horizon and 30-minute slots, and
// books/s into distinct slots, beside the bare-handler (a) and one-SELECT (b) baselines of the
// same run (bench/baseline.ts). A throwaway PostgreSQL (bench/pg.ts), the service, the baseline
// server and wrk (bench/booking.lua); a markdown table on stdout.
//
//   node_modules/.bin/bun bench/booking.ts
//
// env: BENCH_DURATION (s, default 6), BENCH_WARMUP (s, default 2), BENCH_CONNECTIONS (default 32),
//      BENCH_THREADS (default 2), BENCH_POOL (pool of both servers; default the service's own,
//      mirrored), BENCH_EXE (the executable; default dist/leadline, else `bun src/main.ts`),
//      BENCH_PROFILE=1 (the service from src/ under bun's profiler; the profile lands in
//      bench/results/, and throughput is then not comparable), BENCH_ONLY=slots|book.
// Target (issue 9): slots reads at least half of baseline b.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { connect, type Sql } from "../src/db/client";
import { migrate } from "../src/db/migrate";
import { freePort, startCluster, type Cluster } from "./pg";

const root = resolve(import.meta.dir, "..");
const BUN = join(root, "node_modules/.bin/bun");
const num = (name: string, dflt: number) => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : dflt;
};
const DURATION = num("BENCH_DURATION", 6);
const WARMUP = num("BENCH_WARMUP", 2);
const CONNS = num("BENCH_CONNECTIONS", 32);
const THREADS = num("BENCH_THREADS", 2);
const POOL = process.env.BENCH_POOL ? num("BENCH_POOL", 8) : Math.max(2, availableParallelism() * 2);
const EXE = process.env.BENCH_EXE ? resolve(process.env.BENCH_EXE) : join(root, "dist/leadline");
// BENCH_PROFILE=1: the service from src/ under `bun --cpu-prof-md`, the profile in bench/results/.
const PROFILE = process.env.BENCH_PROFILE === "1";
const SERVICE = PROFILE
  ? [BUN, "--cpu-prof-md", `--cpu-prof-dir=${join(root, "bench/results")}`, `--cpu-prof-name=booking-${Date.now()}.md`, join(root, "src/main.ts"), "serve"]
  : existsSync(EXE)
    ? [EXE, "serve"]
    : [BUN, join(root, "src/main.ts"), "serve"];
const LEADS = 10_000;
const BOOK_STEP = 300; // the book calendar's 5-minute slots

const work = mkdtempSync(join(tmpdir(), "leadline-bench-booking-"));
const children: Subprocess[] = [];
let cluster: Cluster | null = null;
let cleaned = false;
function cleanup() {
  if (cleaned) return;
  cleaned = true;
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  cluster?.stop();
  rmSync(work, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const s of ["SIGINT", "SIGTERM"] as const) process.on(s, () => (cleanup(), process.exit(130)));
const say = (m: string) => console.error(`bench/booking: ${m}`);

async function seed(sql: Sql, now: number): Promise<{ bookBase: number }> {
  await sql`insert into orgs (id, name) values (1, 'Acme')`;
  await sql`insert into campaigns (id, org_id, name) values ('ACME', 1, 'Acme')`;
  await sql`insert into lists (id, campaign_id, name) values (101, 'ACME', 'Web')`;
  await sql`insert into leads (list_id, phone, first_name) select 101, '555' || lpad(g::text, 7, '0'), 'Lead ' || g from generate_series(1, ${LEADS}) g`;
  const days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
  const office = Object.fromEntries(days.map((d) => [d, [["09:00", "17:00"]]]));
  const allDay = Object.fromEntries(days.map((d) => [d, [["00:00", "24:00"]]]));
  await sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours) values
    (1, 1, 'Estimates', 'America/Chicago', 30, 1, 0, 14, ${sql.json(office)}),
    (2, 1, 'Bench books', 'UTC', 5, 1, 0, 366, ${sql.json(allDay)})`;
  await sql`insert into calendar_links (slug, calendar_id) values ('bench-slots', 1), ('bench-book', 2)`;
  // A third of the slots read are taken: the read counts real seats.
  const res = await fetch(`${serviceUrl}/book/api.php?action=slots&s=bench-slots`).then((r) => r.json() as Promise<{ slots: { epoch: number }[] }>);
  const taken = res.slots.filter((_, i) => i % 3 === 0).map((s) => s.epoch);
  await sql`insert into appointments (calendar_id, link_slug, slot_epoch, name, phone, token_selector, token_hash)
            select 1, 'bench-slots', e, 'Seeded', '5550000001', decode(md5(e::text), 'hex'), decode(md5(e::text), 'hex')
            from unnest(${taken}::int8[]) e`;
  say(`seeded ${LEADS} leads, ${res.slots.length} open slots (${taken.length} of them then taken)`);
  // Books start an hour from now on the 5-minute grid of the all-day UTC calendar.
  return { bookBase: Math.ceil((now + 3600_000) / 1000 / BOOK_STEP) * BOOK_STEP };
}

interface WrkResult {
  requests: number;
  duration_us: number;
  p50_us: number;
  p99_us: number;
  status_errors: number;
  socket_errors: number;
  rps: number;
}

async function wrk(url: string, args: Record<string, string | number>, seconds: number): Promise<WrkResult> {
  const opts = Object.entries({ ...args, threads: THREADS }).map(([k, v]) => `${k}=${v}`);
  const p = Bun.spawn(["wrk", `-t${THREADS}`, `-c${CONNS}`, `-d${seconds}s`, "--timeout", "5s", "-s", join(import.meta.dir, "booking.lua"), url, "--", ...opts], { stdout: "pipe", stderr: "pipe" });
  children.push(p);
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  await p.exited;
  const line = out.split("\n").find((l) => l.startsWith("BENCH "));
  if (p.exitCode !== 0 || !line) throw new Error(`wrk failed (exit ${p.exitCode}):\n${out}\n${err}`);
  const r = JSON.parse(line.slice(6)) as WrkResult;
  r.rps = r.requests / (r.duration_us / 1e6);
  return r;
}

async function waitReady(url: string, child: Subprocess) {
  for (const until = Date.now() + 30_000; Date.now() < until; await Bun.sleep(100)) {
    if (child.exitCode !== null) throw new Error(`${url}: exited ${child.exitCode}`);
    if (await fetch(url).then((r) => r.ok, () => false)) return;
  }
  throw new Error(`${url} not ready after 30 s`);
}

let serviceUrl = "";

async function main() {
  say(`PostgreSQL, ${SERVICE[0] === BUN ? "the service from src/ (no dist/leadline)" : SERVICE[0]}, ${DURATION} s per scenario`);
  cluster = await startCluster();
  const dbUrl = cluster.url;
  const sql = connect(dbUrl, { max: 2, statementTimeoutMs: 0, applicationName: "leadline-bench-seed" });
  await migrate(sql);
  const [svcPort, basePort] = [await freePort(), await freePort()];
  serviceUrl = `http://127.0.0.1:${svcPort}`;
  const baseUrl = `http://127.0.0.1:${basePort}`;
  const common = { ...process.env, DATABASE_URL: dbUrl, HOST: "127.0.0.1", LOG_LEVEL: "warn" };
  const svc = Bun.spawn(SERVICE, { cwd: work, env: { ...common, PORT: String(svcPort), DB_POOL_MAX: String(POOL) }, stdout: "ignore", stderr: "inherit" });
  const base = Bun.spawn([BUN, join(import.meta.dir, "baseline.ts")], { cwd: work, env: { ...common, PORT: String(basePort), POOL_MAX: String(POOL) }, stdout: "ignore", stderr: "inherit" });
  children.push(svc, base);
  await Promise.all([waitReady(`${serviceUrl}/healthz`, svc), waitReady(`${baseUrl}/plain`, base)]);
  const { bookBase } = await seed(sql, Date.now());

  const rows: { name: string; r: WrkResult; vs?: string; check: string }[] = [];
  const run = async (name: string, url: string, args: Record<string, string | number>, warmArgs = args) => {
    await wrk(url, warmArgs, WARMUP);
    const r = await wrk(url, args, DURATION);
    return r;
  };
  const a = await run("baseline a", baseUrl, { mode: "plain" });
  rows.push({ name: "(a) bare handler, small JSON", r: a, check: a.status_errors ? `${a.status_errors} non-2xx` : "2xx only" });
  const b = await run("baseline b", baseUrl, { mode: "base_lead", leads: LEADS });
  rows.push({ name: "(b) one indexed SELECT", r: b, check: b.status_errors ? `${b.status_errors} non-2xx` : "2xx only" });
  const only = process.env.BENCH_ONLY ?? "";
  const s = only === "book" ? null : await run("slots", serviceUrl, { mode: "slots", slug: "bench-slots" });
  const sample = await fetch(`${serviceUrl}/book/api.php?action=slots&s=bench-slots`).then((r) => r.json() as Promise<{ slots: unknown[] }>);
  if (s) rows.push({ name: `slots read (14 days, 30-min slots: ${sample.slots.length} open)`, r: s, vs: `${Math.round((s.rps / b.rps) * 100)}% of b (target ≥ 50%)`, check: s.status_errors ? `${s.status_errors} non-2xx` : "2xx only" });
  // Warm-up and measurement book disjoint ranges of slots.
  const measuredFrom = bookBase + 50_000 * BOOK_STEP;
  // The book calendar's candidates (a year of 5-minute slots) are computed on its first request.
  await fetch(`${serviceUrl}/book/api.php?action=book`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ slug: "bench-book", epoch: bookBase - BOOK_STEP, name: "Warm", phone: "5550000000" }),
  });
  const k = only === "slots" ? null : await run("book", serviceUrl, { mode: "book", slug: "bench-book", base: bookBase, step: BOOK_STEP, run: 50_000 }, { mode: "book", slug: "bench-book", base: bookBase, step: BOOK_STEP, run: 0 });
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from appointments where calendar_id = 2 and slot_epoch >= ${measuredFrom}`;
  if (k) rows.push({ name: "book into distinct slots", r: k, vs: `${Math.round((k.rps / b.rps) * 100)}% of b`, check: `${n} of ${k.requests} booked${k.status_errors ? `, ${k.status_errors} non-2xx` : ""}` });

  await sql.end({ timeout: 2 });
  const ms = (us: number) => (us / 1000).toFixed(2);
  const lines = [
    `| scenario | req/s | vs baseline | p50 ms | p99 ms | checks |`,
    `|---|---:|---|---:|---:|---|`,
    ...rows.map((x) => `| ${x.name} | ${Math.round(x.r.rps)} | ${x.vs ?? ""} | ${ms(x.r.p50_us)} | ${ms(x.r.p99_us)} | ${x.check}${x.r.socket_errors ? `, ${x.r.socket_errors} socket errors` : ""} |`),
    "",
    `wrk -t${THREADS} -c${CONNS}, ${WARMUP} s warm-up + ${DURATION} s per row; pool ${POOL}; ${availableParallelism()} CPUs shared by wrk, both servers and PostgreSQL.`,
  ];
  console.log(lines.join("\n"));
}

main()
  .then(async () => {
    for (const c of children) if (c.exitCode === null) c.kill("SIGTERM");
    await Promise.race([Promise.all(children.map((c) => c.exited)), Bun.sleep(5000)]);
    cleanup();
    process.exit(0);
  })
  .catch((err) => {
    console.error(err);
    cleanup();
    process.exit(1);
  });
