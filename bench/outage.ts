// The outage scenario (bench/README.md, operations.md §7): PostgreSQL stopped hard under load and
// started again, once with the service on it directly and once through PgBouncer (transaction
// pooling; its server gone, the pooler still answering). A closed-loop load from this process
// (OUTAGE_CONNECTIONS loops, each sending its next request when the last was answered: get lead and
// intake of a new phone in turn) records every request's start, latency and status. Figures:
//
//   - latency of the requests started after the first second of the outage, until the restart
//     (p50, p95, p99, max): the breaker's "503 at once" (src/db/breaker.ts);
//   - the first second's, for the record (what the pool held when the breaker opened);
//   - recovery: from the moment PostgreSQL accepts connections again (pg_ctl start returned) to the
//     first 200, and to the last answer other than 200;
//   - every intake answered 200 is a row afterwards (nothing acknowledged lost).
//
// BENCH_EXE_BEFORE (an executable, e.g. a build of an earlier commit; BENCH_EXE_BEFORE_LABEL names
// it in the table) runs every episode on it too, in the same run, for a before/after comparison. Writes bench/results/outage.md and the
// outage section of bench/RESULTS.md.
//
//   node_modules/.bin/bun bench/outage.ts          (or BENCH_SUITES=outage bash bench/run.sh)
//
// Options: OUTAGE_CONNECTIONS (16), OUTAGE_SECONDS (6: from the stop to the restart),
// BENCH_ONLY (direct, pooled).
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { fmtMs, num, POOL, type Server, Suite } from "./lib";
import { startPgbouncer } from "./pgbouncer";
import { writeSection } from "./results-file";

const suite = new Suite("outage", "A database outage under load", ["direct", "pooled"]);
const CONNS = num("OUTAGE_CONNECTIONS", 16);
const OUTAGE_S = num("OUTAGE_SECONDS", 6);
const WARM_S = 3;
const AFTER_S = 6;
const LEADS = 1000;
const BEFORE = process.env.BENCH_EXE_BEFORE ? resolve(process.env.BENCH_EXE_BEFORE) : null;

interface Sample {
  at: number;
  ms: number;
  status: number;
}

interface Episode {
  service: string;
  path: "direct" | "pooled";
  /** Requests started after the first second of the outage, until the restart. */
  late: { n: number; unavailable: number; other: number; p50: number; p95: number; p99: number; max: number };
  /** Requests started in the outage's first second. */
  first: { n: number; p95: number; max: number };
  /** ms from PostgreSQL accepting connections again to the first 200 (its answer) and to the last answer other than 200. */
  firstServedMs: number;
  lastFailedMs: number;
  acknowledged: number;
  lost: number;
  statuses: Record<string, number>;
}

const sortedMs = (xs: Sample[]) => xs.map((s) => s.ms).sort((a, b) => a - b);
const q = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? NaN;

await suite.run(async () => {
  if (BEFORE && !existsSync(BEFORE)) throw new Error(`BENCH_EXE_BEFORE=${BEFORE} does not exist`);
  const sql = await suite.database();
  await suite.seedAccount();
  await sql`
    insert into leads (list_id, phone, first_name, last_name)
    select 101, '555' || lpad(i::text, 7, '0'), 'First' || i, 'Last' || i from generate_series(1, ${LEADS}) as i`;
  // Intake's hourly threshold per key is 120: enough keys that no run reaches it.
  const { keys } = await suite.keys("outage", 4000, ["leads:read", "leads:write"]);
  const cluster = suite.cluster!;
  const directUrl = suite.databaseUrl();
  // PgBouncer tries its server again server_login_retry after a failed login (15 s by default): an
  // operator who wants the service back within a second or two of the database sets it lower.
  const bouncer = await startPgbouncer(directUrl, "leadline_bench", POOL, ["server_login_retry = 1", "server_connect_timeout = 2"]);
  suite.say(`${bouncer.version} on ${bouncer.url}`);

  const services: { name: string; exe: string | null }[] = [{ name: BEFORE ? "this commit" : "the service", exe: null }];
  if (BEFORE) services.unshift({ name: process.env.BENCH_EXE_BEFORE_LABEL ?? "before (BENCH_EXE_BEFORE)", exe: BEFORE });
  const episodes: Episode[] = [];
  let keyN = 0;
  let phone = 0;

  // Every instance started first (each migrates nothing new and goes idle); one at a time is under
  // load, the others only see the outages.
  const runs: { path: "direct" | "pooled"; service: string; server: Server }[] = [];
  for (const path of ["direct", "pooled"] as const) {
    if (!suite.wanted(path)) continue;
    for (const svc of services) {
      const env: Record<string, string> = path === "pooled" ? { DATABASE_URL: bouncer.url, DATABASE_DIRECT_URL: directUrl } : {};
      runs.push({ path, service: svc.name, server: svc.exe ? await suite.service(env, [svc.exe]) : await suite.service(env) });
    }
  }
  for (const r of runs) episodes.push(await episode(r.server, r.service, r.path));

  async function episode(server: Server, service: string, path: "direct" | "pooled"): Promise<Episode> {
    const samples: Sample[] = [];
    const acknowledged: number[] = [];
    let stop = false;
    const loop = async (i: number) => {
      for (let n = i; !stop; n++) {
        const intake = n % 2 === 1;
        const key = keys[keyN++ % keys.length]!;
        const init: RequestInit = intake
          ? {
              method: "POST",
              headers: { "x-api-key": key, "content-type": "application/json" },
              body: JSON.stringify({ phone: `5126${String(phone++).padStart(6, "0")}`, list_id: 101 }),
            }
          : { headers: { "x-api-key": key } };
        const url = intake ? `${server.url}/hooks/lead_intake.php` : `${server.url}/hooks/api_v1.php?r=leads/${1 + (n % LEADS)}`;
        const at = performance.now();
        let status = 0;
        try {
          const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
          status = res.status;
          const body = (await res.json().catch(() => null)) as { lead_id?: number } | null;
          if (intake && status === 200 && typeof body?.lead_id === "number") acknowledged.push(body.lead_id);
        } catch {
          status = 0;
        }
        samples.push({ at, ms: performance.now() - at, status });
      }
    };
    const loops = Array.from({ length: CONNS }, (_, i) => loop(i));
    await Bun.sleep(WARM_S * 1000);
    suite.say(`${path}, ${service}: stopping PostgreSQL`);
    const down = performance.now();
    await cluster.halt();
    await Bun.sleep(Math.max(0, down + OUTAGE_S * 1000 - performance.now()));
    const restart = performance.now();
    await cluster.resume();
    const up = performance.now();
    suite.say(`${path}, ${service}: PostgreSQL accepts connections again (${Math.round(up - restart)} ms to start)`);
    await Bun.sleep(AFTER_S * 1000);
    stop = true;
    await Promise.all(loops);

    const late = samples.filter((s) => s.at >= down + 1000 && s.at < restart);
    const first = samples.filter((s) => s.at >= down && s.at < down + 1000);
    const lateMs = sortedMs(late);
    const firstMs = sortedMs(first);
    const after = samples.filter((s) => s.at >= up);
    const served = after.filter((s) => s.status === 200).map((s) => s.at + s.ms - up);
    const failed = after.filter((s) => s.status !== 200).map((s) => s.at + s.ms - up);
    const statuses: Record<string, number> = {};
    for (const s of samples) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
    const [kept] = await sql<{ n: number }[]>`select count(*)::int as n from leads where id = any(${acknowledged}::bigint[])`;
    const e: Episode = {
      service,
      path,
      late: {
        n: late.length,
        unavailable: late.filter((s) => s.status === 503).length,
        other: late.filter((s) => s.status !== 503).length,
        p50: q(lateMs, 0.5),
        p95: q(lateMs, 0.95),
        p99: q(lateMs, 0.99),
        max: lateMs.at(-1) ?? NaN,
      },
      first: { n: first.length, p95: q(firstMs, 0.95), max: firstMs.at(-1) ?? NaN },
      firstServedMs: served.length ? Math.min(...served) : NaN,
      lastFailedMs: failed.length ? Math.max(...failed) : 0,
      acknowledged: acknowledged.length,
      lost: acknowledged.length - kept!.n,
      statuses,
    };
    suite.say(`${path}, ${service}: ${JSON.stringify(e)}`);
    return e;
  }

  bouncer.stop();
  const f = (x: number) => (Number.isNaN(x) ? "—" : fmtMs(x * 1000));
  const table = [
    "| path | service | requests after the first second | 503 | other | p50 ms | p95 ms | p99 ms | max ms | first second: requests, p95 / max ms | first 200 after the restart, ms | last non-200 after the restart, ms | intakes acknowledged / lost |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|",
    ...episodes.map(
      (e) =>
        `| ${e.path === "direct" ? "direct" : "through PgBouncer"} | ${e.service} | ${e.late.n} | ${e.late.unavailable} | ${e.late.other} | ${f(e.late.p50)} | ` +
        `**${f(e.late.p95)}** | ${f(e.late.p99)} | ${f(e.late.max)} | ${e.first.n}, ${f(e.first.p95)} / ${f(e.first.max)} | ${f(e.firstServedMs)} | ${e.lastFailedMs > 0 ? f(e.lastFailedMs) : "none"} | ${e.acknowledged} / ${e.lost} |`,
    ),
  ];
  const context =
    `${CONNS} closed-loop clients in this process (get lead and intake of a new phone in turn), ${WARM_S} s of load, then PostgreSQL stopped ` +
    `(\`pg_ctl stop -m immediate\`) for ${OUTAGE_S} s and started again, ${AFTER_S} s more. Through PgBouncer: ${bouncer.version}, transaction pooling, ` +
    `server_login_retry = 1, the service's pools on the pooler and its LISTEN on PostgreSQL (DATABASE_DIRECT_URL). The restart's clock starts ` +
    `when \`pg_ctl start -w\` returns (PostgreSQL accepts connections).`;
  suite.notes.push(...table);
  suite.extra.episodes = episodes;
  const rev = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { stdout: "pipe", stderr: "ignore" }).stdout.toString().trim();
  writeSection(
    "outage",
    [
      "## A database outage under load",
      "",
      `Written by \`bench/outage.ts\` (bench/README.md), ${new Date().toISOString()}, commit ${rev || "?"}: ${context} ` +
        `The machine's ${navigator.hardwareConcurrency} CPUs were shared with other work during the run: latencies are a ceiling.`,
      "",
      ...table,
    ].join("\n"),
  );
  return context;
});
