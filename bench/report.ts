// The report (`make bench` runs it last): bench/RESULTS.md's `bench` section, from the suites'
// bench/results/<suite>.json of the same run: the machine; every measured operation's requests/s
// and p50/p99 at fixed concurrency as ratios to the bare-handler (a) and one-SELECT (b)
// baselines; new-visitor DNI leases on 1, 2 and 3 instances (and 2 on a pool each) with the pool
// lock; webhook delivery throughput and lag; the executable's size, cold start and idle RSS;
// direct and through PgBouncer; the capacity model. The soak section (bench/soak.ts) is kept.
//
//   node_modules/.bin/bun bench/report.ts      (after the suites; `make bench` does both)
import { existsSync, readFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import type { SuiteJson } from "./lib";
import { writeSection } from "./results-file";
import { systemBinDir } from "../test/harness/cluster";

type Row = SuiteJson["rows"][number];
const RESULTS = join(import.meta.dir, "results");

function load(name: string): SuiteJson | null {
  const file = join(RESULTS, `${name}.json`);
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as SuiteJson) : null;
}

const suites = Object.fromEntries(["core", "messages", "booking", "events", "dni", "startup", "pooled", "console", "conversions"].map((n) => [n, load(n)])) as Record<string, SuiteJson | null>;
const row = (suite: string, id: string): Row | undefined => suites[suite]?.rows.find((r) => r.id === id);
const out: string[] = [];
const say = (...lines: string[]) => out.push(...lines);

const f0 = (x: number) => x.toFixed(0);
const ms = (us: number | null) => (us === null ? "—" : us / 1000 < 10 ? (us / 1000).toFixed(2) : (us / 1000).toFixed(1));
const pct = (x: number | null | undefined) => (x === null || x === undefined || !Number.isFinite(x) ? "—" : `${Math.round(x * 100)}%`);
const sh = (cmd: string[]) => {
  try {
    return Bun.spawnSync(cmd, { stdout: "pipe", stderr: "ignore" }).stdout.toString().trim();
  } catch {
    return "";
  }
};

// ---------------------------------------------------------------- the machine

const cpuModel = /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1]?.trim() ?? cpus()[0]?.model ?? "?";
const bin = systemBinDir();
const pgVersion = bin ? sh([join(bin, "postgres"), "--version"]) : "?";
const os = /PRETTY_NAME="([^"]*)"/.exec(existsSync("/etc/os-release") ? readFileSync("/etc/os-release", "utf8") : "")?.[1] ?? "?";
const rev = sh(["git", "rev-parse", "--short", "HEAD"]);
const dirty = sh(["git", "status", "--porcelain", "--", "src", "sql"]);
const ran = Object.values(suites).filter(Boolean).map((s) => s!.started).sort();
const others = Object.values(suites).flatMap((s) => s?.rows.map((r) => r.other ?? 0) ?? []).sort((a, b) => a - b);
const otherMedian = others.length ? others[Math.floor(others.length / 2)] : null;

say(
  "## Benchmark",
  "",
  `\`make bench\`, ${ran[0]?.slice(0, 16) ?? "?"}Z, commit ${rev || "?"}${dirty ? " + uncommitted changes in src/sql" : ""}; service ${suites.core?.service ?? "dist/leadline"}; ` +
    "every figure below comes from this one run (bench/results/*.md has each suite's full table, its checks and its most expensive statements).",
  "",
  "**Machine**: " +
    `${cpuModel}, ${cpus().length} CPUs, ${(totalmem() / 2 ** 30).toFixed(1)} GiB memory, Linux ${sh(["uname", "-r"])} (${os}); ${pgVersion}; Bun ${Bun.version}; ` +
    `${sh(["sh", "-c", "wrk -v 2>&1 | head -1"]).split(" [")[0] || "wrk"}. The load generator, the service instances and PostgreSQL share these CPUs: ` +
    "absolute figures are this machine's, ratios to the baselines of the same run travel better, and the capacity model below is what to scale from." +
    (otherMedian !== null
      ? ` During the measured windows, a median ${pct(otherMedian)} of all CPU time went to processes outside the benchmark (other work on a shared host): ` +
        "the more, the noisier the figures (each suite's table gives the share per row)."
      : ""),
  "",
);

// ---------------------------------------------------------------- operations

/** The bare-handler (a) and one-SELECT (b) baselines a suite's rows are compared to: its own, else the core suite's. */
function baselines(suite: string): { a: Row | undefined; b: Row | undefined; own: boolean } {
  const own = { a: row(suite, "a"), b: row(suite, "b") };
  if (suite === "dni") return { a: row("dni", "base"), b: row("core", "b"), own: false };
  if (own.a && own.b) return { ...own, own: true };
  return { a: row("core", "a"), b: row("core", "b"), own: false };
}

/** A row's ratio to baseline `which`: the sliced median when it was sliced beside it, else req/s over req/s. */
function ratioTo(suite: string, r: Row, which: "a" | "b"): number | null {
  const base = baselines(suite)[which];
  if (r.vs && (r.vs.of === which || r.vs.of.startsWith(`${which}/`) || (which === "a" && suite === "dni" && r.vs.of === "base"))) return r.vs.ratio;
  return base ? r.rps / base.rps : null;
}

const OPS: { suite: string; id: string; name: string }[] = [
  { suite: "core", id: "2", name: "get lead `GET api_v1.php?r=leads/{id}`" },
  { suite: "core", id: "3", name: "CTI lookup `GET api_v1.php?r=cti/lookup`" },
  { suite: "core", id: "8", name: "CTI dial `POST api_v1.php?r=cti/dial`" },
  { suite: "core", id: "4", name: "conversation (600 rows) `GET api_v1.php?r=conversations/{id}`" },
  { suite: "core", id: "5", name: "lead intake `POST lead_intake.php`" },
  { suite: "core", id: "6", name: "KPI batch of 500 points `POST kpi_ingest.php` (-c4)" },
  { suite: "core", id: "7", name: "over-limit key (429 from memory)" },
  { suite: "messages", id: "notes", name: "note `POST api_v1.php?r=messages`" },
  { suite: "messages", id: "replays", name: "idempotent replay of a send" },
  { suite: "messages", id: "sms", name: "SMS send (fake Twilio)" },
  { suite: "booking", id: "slots", name: "booking slots `GET book/api.php?action=slots` (compressed)" },
  { suite: "booking", id: "slots_plain", name: "booking slots, uncompressed" },
  { suite: "booking", id: "book", name: "booking `POST book/api.php?action=book`" },
  { suite: "dni", id: "lease", name: "DNI lease, returning visitor" },
  { suite: "dni", id: "beat", name: "DNI heartbeat" },
  { suite: "dni", id: "event", name: "DNI browser event (pageview)" },
  { suite: "dni", id: "new", name: "DNI lease, new visitor" },
  { suite: "console", id: "s", name: "console: lead search by a formatted phone, 1M leads (-c16)" },
  { suite: "console", id: "t", name: "console: lead search by name, 1M leads (-c16)" },
  { suite: "console", id: "p", name: "console: lead page, 600-entry timeline (-c16)" },
];

say(
  "### Every measured operation",
  "",
  `wrk -c${/-c(\d+)/.exec(suites.core?.context ?? "")?.[1] ?? "32"} (fixed concurrency; the KPI batch -c4), on one instance of the executable and a real PostgreSQL. ` +
    "(a): bare Elysia handler answering a small JSON (for DNI: a bare POST handler parsing the body); (b): bare Elysia handler + one indexed SELECT through postgres.js. " +
    "Ratios are requests/s over the baseline's, measured in the same run (the median of alternating slices where the suite slices; a suite without its own baselines is compared to the core suite's).",
  "",
  "| operation | req/s | p50 ms | p99 ms | vs (a) | vs (b) | target | CPU µs/req app / pg |",
  "|---|---:|---:|---:|---:|---:|---|---:|",
);
for (const op of OPS) {
  const r = row(op.suite, op.id);
  if (!r) {
    say(`| ${op.name} | not run | | | | | | |`);
    continue;
  }
  const result = !r.valid ? "**INVALID**" : r.target ? `${r.target.text}: ${r.target.pass ? "pass" : "**MISS**"}` : "—";
  say(`| ${op.name} | ${f0(r.rps)} | ${ms(r.p50_us)} | ${ms(r.p99_us)} | ${pct(ratioTo(op.suite, r, "a"))} | ${pct(ratioTo(op.suite, r, "b"))} | ${result} | ${f0(r.app_us)} / ${f0(Math.max(0, r.pg_us))} |`);
}
say(
  "",
  "Not in the suites: booking `reschedule` (it needs an appointment's token per request), call reports (`calls.php`), the CTI queue (`cti_queue.php`) and the " +
    "providers' callbacks.",
);
const ca = row("core", "a");
const cb = row("core", "b");
if (ca && cb) say("", `Baselines (core suite): (a) ${f0(ca.rps)} req/s, p99 ${ms(ca.p99_us)} ms; (b) ${f0(cb.rps)} req/s, p99 ${ms(cb.p99_us)} ms.`);
say("");

// ---------------------------------------------------------------- DNI instances

type Lock = { batches: number; batch: number; alloc_us: number; commit_us: number; flush_us: number; hold_us: number } | null;
const locks = (suites.dni?.extra.lock ?? {}) as Record<string, Lock>;
say(
  "### New-visitor DNI leases on 1, 2 and 3 instances",
  "",
  "One pool unless said; each instance its own wrk, the connections split. Every instance, PostgreSQL and wrk share the same CPUs here, so more instances " +
    "cannot add capacity on this machine; the rows are for the record (the capacity model says what instances add where there are cores for them).",
  "",
  "| instances | req/s | vs 1 | p50 ms | p99 ms | CPU µs/req app / pg | leases per lock batch | lock held per batch ms |",
  "|---|---:|---:|---:|---:|---:|---:|---:|",
);
const one = row("dni", "new");
for (const [id, label] of [["new", "1"], ["new-2", "2, one pool"], ["new-3", "3, one pool"], ["new-2p", "2, a pool each"]] as const) {
  const r = row("dni", id);
  if (!r) continue;
  const l = locks[id];
  say(
    `| ${label} | ${f0(r.rps)} | ${one ? pct(r.rps / one.rps) : "—"} | ${ms(r.p50_us)} | ${ms(r.p99_us)} | ${f0(r.app_us)} / ${f0(r.pg_us)} | ` +
      `${l ? l.batch.toFixed(1) : "—"} | ${l ? (l.hold_us / 1000).toFixed(2) : "—"} |`,
  );
}
say(
  "",
  "The lock is held from the end of the batch's first statement (its visits written) through the allocation statement and the commit: its hold time is the " +
    "allocation statement's mean execution (pg_stat_statements) plus a commit's WAL flush (pg_stat_wal; the bench's cluster is on /dev/shm, so a disk's fsync adds to it).",
  "",
);

// ---------------------------------------------------------------- webhooks

const burst = row("events", "burst");
const lag = row("events", "lag");
say("### Webhook delivery", "");
if (burst || lag) {
  say("| measurement | rate | p50 ms | p99 ms | result |", "|---|---:|---:|---:|---|");
  if (burst) say(`| burst: deliveries/s from one instance to one endpoint | ${f0(burst.rps)}/s | — | — | ${burst.target ? `${burst.target.text}: ${burst.target.pass ? "pass" : "**MISS**"}` : "—"} |`);
  if (lag) say(`| lag: commit → receipt at a steady intake rate | ${f0(lag.rps)} intakes/s | ${ms(lag.p50_us)} | ${ms(lag.p99_us)} | ${lag.target ? `${lag.target.text}: ${lag.target.pass ? "pass" : "**MISS**"}` : "—"} |`);
  say("");
} else say("Not run.", "");

// ---------------------------------------------------------------- startup

type Start = { ready_ms: number; idle_rss_kib: number };
const st = suites.startup?.extra.startup as { exe_bytes: number; embedded_fresh: Start; embedded_again: Start; postgres: Start } | undefined;
say("### Executable, cold start, idle memory", "");
if (st) {
  say(
    `Executable: ${(st.exe_bytes / 2 ** 20).toFixed(1)} MiB. Cold start is spawn to the first 200 of \`/readyz\` (median of ${((suites.startup?.extra.startup as any)?.postgres?.all ?? []).length || 3}); idle RSS 3 s after ready.`,
    "",
    "| database | cold start ms | idle RSS MiB |",
    "|---|---:|---:|",
    `| embedded, fresh data directory (from the image built into the executable) | ${f0(st.embedded_fresh.ready_ms)} | ${f0(st.embedded_fresh.idle_rss_kib / 1024)} |`,
    `| embedded, existing data directory | ${f0(st.embedded_again.ready_ms)} | ${f0(st.embedded_again.idle_rss_kib / 1024)} |`,
    `| real PostgreSQL (migrated) | ${f0(st.postgres.ready_ms)} | ${f0(st.postgres.idle_rss_kib / 1024)} |`,
    "",
  );
} else say("Not run.", "");

// ---------------------------------------------------------------- conversions feed

type Feed = { rows: number; ttfb_ms: number; total_ms: number; bytes: number; rss_before_mib: number; rss_peak_mib: number; app_cpu_ms: number; pg_cpu_ms: number; paused_reader: { busy: number; idle_in_tx: number } };
const feed = suites.conversions?.extra.feed as Feed | undefined;
say("### Conversions feed", "");
if (feed) {
  say(
    `\`GET /conversions/{feed_id}.csv\` of ${feed.rows.toLocaleString("en-US")} conversions (new leads, calls, bookings over 88 days, beside another organization's leads and calls of the same days), fetched whole, median of the suite's fetches (bench/README.md: conversions).`,
    "",
    "| conversions | first byte ms | whole feed ms | rows/s | MB | service RSS before → peak MiB | CPU ms service / PostgreSQL |",
    "|---:|---:|---:|---:|---:|---:|---:|",
    `| ${feed.rows} | ${f0(feed.ttfb_ms)} | ${f0(feed.total_ms)} | ${f0(feed.rows / (feed.total_ms / 1000))} | ${(feed.bytes / 1e6).toFixed(1)} | ${f0(feed.rss_before_mib)} → ${f0(feed.rss_peak_mib)} | ${f0(feed.app_cpu_ms)} / ${f0(feed.pg_cpu_ms)} |`,
    "",
    `A reader that stopped after the first chunk: ${feed.paused_reader.busy} statements running and ${feed.paused_reader.idle_in_tx} transactions open for the service meanwhile (the feed reads a page of time per statement and holds nothing between pages).`,
    "",
  );
} else say("Not run.", "");

// ---------------------------------------------------------------- pooled

say("### Direct and through PgBouncer", "");
const pooled = suites.pooled;
if (!pooled) say("Not run.", "");
else if (pooled.extra.skipped) say(pooled.notes.join(" "), "");
else {
  say(`${pooled.context}`, "", "| operation | direct req/s | pooled req/s | pooled / direct | p99 ms direct / pooled | CPU µs/req app / pg, pooled |", "|---|---:|---:|---:|---:|---:|");
  for (const d of pooled.rows.filter((r) => !r.id.endsWith("-pooled"))) {
    const p = pooled.rows.find((r) => r.id === `${d.id}-pooled`);
    if (!p) continue;
    say(`| ${p.name.replace(/, through PgBouncer$/, "")} | ${f0(d.rps)} | ${f0(p.rps)}${p.valid ? "" : " **INVALID**"} | ${pct(p.vs?.ratio)} | ${ms(d.p99_us)} / ${ms(p.p99_us)} | ${f0(p.app_us)} / ${f0(p.pg_us)} |`);
  }
  say("");
}

// ---------------------------------------------------------------- capacity model

interface Cost {
  name: string;
  /** Per unit of the operation (a request, or a KPI point). */
  app: number;
  pg: number;
  exec: number | null;
  /** The site profile's rate of the operation, per second. */
  rate: number;
  from: string;
}

/** Per-operation cost from a row, divided by `per` (KPI points per batch). */
function cost(suite: string, id: string, name: string, rate: number, per = 1): Cost | null {
  const r = row(suite, id);
  if (!r || !r.valid) return null;
  return { name, app: r.app_us / per, pg: Math.max(0, r.pg_us) / per, exec: r.db_exec_us === null ? null : r.db_exec_us / per, rate, from: `${suite} ${id}` };
}

// The stated site profile: per second, at the busy hour of a group of sites with their call
// centre: 200 page views of new visitors and 400 of returning ones, each open page beating every
// 30 s (about 2,000 beats/s), 20 leads in, 50 agents' lead reads and 20 CTI lookups, 10 messages
// (half SMS), 1,000 KPI points, 1 booking and 60 webhook deliveries.
const costs = [
  cost("core", "5", "intake", 20),
  cost("core", "2", "get lead", 50),
  cost("core", "3", "CTI lookup", 20),
  cost("messages", "notes", "send: note", 5),
  cost("messages", "sms", "send: SMS to the provider", 5),
  cost("core", "6", "KPI point (batches of 500)", 1000, 500),
  cost("dni", "lease", "DNI lease, warm (returning visitor)", 400),
  cost("dni", "beat", "DNI heartbeat (its write-behind share in pg)", 2000),
  cost("dni", "new", "DNI lease, new visitor", 200),
  cost("booking", "book", "booking", 1),
  cost("events", "burst", "webhook delivery", 60),
].filter((c): c is Cost => c !== null);

say("### Capacity model", "");
if (costs.length) {
  const appSum = costs.reduce((a, c) => a + c.app * c.rate, 0);
  const pgSum = costs.reduce((a, c) => a + c.pg * c.rate, 0);
  const UTIL = 0.7;
  /** Profiles per second one instance sustains: its JavaScript runs on one thread, so at most one core (at 70%). */
  const perInstance = (UTIL * 1e6) / appSum;
  /** Profiles per second per PostgreSQL core (at 70%). */
  const perPgCore = (UTIL * 1e6) / pgSum;
  const lockNew = locks.new;
  const lockCeiling = lockNew ? (lockNew.batch / lockNew.hold_us) * 1e6 : null;
  const newRate = costs.find((c) => c.name.startsWith("DNI lease, new"))?.rate ?? 0;
  say(
    "Measured per operation in this run, at saturation on this machine: the service's CPU per request (`/proc/<pid>/stat` of the executable), PostgreSQL's " +
      "(every PostgreSQL process, `/proc`, which includes background work such as the write-behind renewals and the key last-use writes) and the statements' " +
      "execution time (`pg_stat_statements`: wall time inside PostgreSQL, lock and I/O waits included, so it can exceed the CPU). The **site profile** is a stated mix per second (the rate column): the busy hour of a group of sites with their call centre.",
    "",
    "| operation | app CPU µs | PostgreSQL CPU µs | statement time µs (wall, waits included) | profile rate /s | app CPU ms/s | PostgreSQL CPU ms/s | measured in |",
    "|---|---:|---:|---:|---:|---:|---:|---|",
    ...costs.map(
      (c) =>
        `| ${c.name} | ${c.app.toFixed(1)} | ${c.pg.toFixed(1)} | ${c.exec === null ? "—" : c.exec.toFixed(1)} | ${c.rate} | ${((c.app * c.rate) / 1000).toFixed(1)} | ${((c.pg * c.rate) / 1000).toFixed(1)} | ${c.from} |`,
    ),
    `| **the profile** | | | | | **${(appSum / 1000).toFixed(0)}** | **${(pgSum / 1000).toFixed(0)}** | |`,
    "",
    `One profile-second costs ${(appSum / 1000).toFixed(0)} ms of service CPU and ${(pgSum / 1000).toFixed(0)} ms of PostgreSQL CPU. An instance runs its ` +
      "JavaScript on one thread, so it is good for at most one core; at 70% of a core it carries " +
      `**${perInstance.toFixed(2)}× the profile**. PostgreSQL spreads over its cores (one backend per connection); at 70% of each it carries ` +
      `**${perPgCore.toFixed(2)}× the profile per core**.` +
      (lockCeiling && lockNew
        ? ` New visitors of one pool are also serialized by the pool's advisory lock: measured ${lockNew.batch.toFixed(1)} leases per batch and ` +
          `${(lockNew.hold_us / 1000).toFixed(2)} ms held per batch, about ${f0(lockCeiling)} new visitors/s per pool at that batch size ` +
          `(${(lockCeiling / Math.max(1, newRate)).toFixed(0)}× the profile's ${newRate}/s); batches grow with the load (up to 500), so this is a floor, and ` +
          "a disk's commit flush lowers it: one pool per site keeps them apart (2 instances on a pool each measured above)."
        : ""),
    "",
    "Capacity in multiples of the profile, N instances (each with its core) on one PostgreSQL of K cores; the resource that runs out first in brackets:",
    "",
    `| | ${[2, 4, 8, 16].map((k) => `K = ${k}`).join(" | ")} |`,
    "|---|---:|---:|---:|---:|",
    ...[1, 2, 4, 8, 16].map((n) => {
      const cells = [2, 4, 8, 16].map((k) => {
        const a = n * perInstance;
        const p = k * perPgCore;
        const lock = lockCeiling && newRate ? lockCeiling / newRate : Infinity;
        const cap = Math.min(a, p, lock);
        const by = cap === a ? "instances" : cap === p ? "PostgreSQL" : "pool lock";
        return `${cap.toFixed(1)} (${by})`;
      });
      return `| N = ${n} | ${cells.join(" | ")} |`;
    }),
    "",
    `Which runs out first: the instances while N is below about ${(perPgCore / perInstance).toFixed(1)} × K (one instance's core of JavaScript carries ` +
      `${(perInstance / perPgCore).toFixed(2)} PostgreSQL cores' worth of this profile), PostgreSQL's CPU beyond that; the pool lock is per pool. ` +
      "Not modelled: connections (each instance holds DB_POOL_MAX of them; a pooler in front, see above, keeps PostgreSQL's count flat), the network, disks " +
      "(the bench's cluster is in memory) and the load generator's share, which here took CPU from both.",
    "",
  );
} else say("Not run (needs the core, messages, booking, events and dni suites of the same run).", "");

writeSection("bench", out.join("\n"));
console.error("bench/report: written to bench/RESULTS.md");
