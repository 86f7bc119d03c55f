// A throwaway PostgreSQL cluster for the benchmark, started the way test/run.ts starts its own
// (that file runs its main() on import, so the few functions are repeated here): the system's
// binaries under /usr/lib/postgresql/<major>/bin, run as `postgres` (or `nobody`) when we are root,
// data in /dev/shm when it has room. Durability settings are PostgreSQL's defaults.
import { spawnSync, type SpawnSyncOptions } from "node:child_process";
import { accessSync, appendFileSync, chownSync, constants, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Cluster {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  url: string;
  label: string;
  /** The cluster's data directory (postmaster.pid names the server's process). */
  dataDir: string;
  /** Stops the server (immediate) and deletes its directory; safe to call twice, synchronous. */
  stop(): void;
}

const spawn = (cmd: string[], opts: SpawnSyncOptions = {}) => spawnSync(cmd[0]!, cmd.slice(1), { encoding: "utf8", ...opts });

function run(cmd: string[], opts: SpawnSyncOptions = {}): string {
  const r = spawn(cmd, opts);
  if (r.status !== 0) {
    const why = r.error?.message ?? `exit ${r.status}`;
    throw new Error(`${cmd.join(" ")} failed (${why}):\n${r.stdout ?? ""}${r.stderr ?? ""}`);
  }
  return String(r.stdout ?? "");
}

export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => ok(port));
    });
  });
}

function systemBinDir(): string {
  const base = "/usr/lib/postgresql";
  const majors = existsSync(base)
    ? readdirSync(base).filter((v) => /^\d+$/.test(v)).sort((x, y) => Number(y) - Number(x))
    : [];
  const dir = majors.map((v) => join(base, v, "bin")).find((d) => existsSync(join(d, "initdb")) && existsSync(join(d, "pg_ctl")));
  if (!dir) throw new Error("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (apt-get install postgresql)");
  return dir;
}

function clusterParent(): string {
  try {
    accessSync("/dev/shm", constants.W_OK);
    const fs = statfsSync("/dev/shm");
    if (fs.bavail * fs.bsize >= 1024 ** 3) return "/dev/shm";
  } catch {
    // fall through
  }
  return tmpdir();
}

function unprivilegedUser(): { name: string; uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  for (const name of ["postgres", "nobody"]) {
    const r = spawn(["id", "-u", name]);
    if (r.status === 0) return { name, uid: Number(r.stdout), gid: Number(run(["id", "-g", name])) };
  }
  throw new Error("running as root and neither a `postgres` nor a `nobody` user exists to run PostgreSQL as");
}

export async function startCluster(): Promise<Cluster> {
  const bin = systemBinDir();
  const user = unprivilegedUser();
  const asUser = (cmd: string[]) => {
    if (!user) return cmd;
    const runuser = ["/usr/sbin/runuser", "/sbin/runuser"].find((p) => existsSync(p));
    if (runuser) return [runuser, "-u", user.name, "--", ...cmd];
    const quoted = cmd.map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(" ");
    return ["su", "-s", "/bin/sh", user.name, "-c", quoted];
  };
  const dir = mkdtempSync(join(clusterParent(), "leadline-bench-pg-"));
  const data = join(dir, "data");
  const log = join(dir, "postgres.log");
  const pgCtl = join(bin, "pg_ctl");
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    if (existsSync(join(data, "postmaster.pid"))) {
      spawn(asUser([pgCtl, "-D", data, "-m", "immediate", "-w", "stop"]), { stdio: "ignore" });
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    if (user) chownSync(dir, user.uid, user.gid);
    run(asUser([join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"]));
    appendFileSync(
      join(data, "postgresql.conf"),
      [
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${dir}'`,
        "max_connections = 100",
        // Per-statement counts and times for the report, when the contrib module is installed.
        ...(existsSync(join(bin, "..", "lib", "pg_stat_statements.so")) ? ["shared_preload_libraries = 'pg_stat_statements'"] : []),
        "",
      ].join("\n"),
    );
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const r = spawn(asUser([pgCtl, "-D", data, "-l", log, "-o", `-p ${port}`, "-w", "-t", "60", "start"]));
      if (r.status === 0) {
        const version = run([join(bin, "postgres"), "--version"]).trim();
        return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, label: `${version}, throwaway cluster in ${dir}`, dataDir: data, stop };
      }
      const tail = existsSync(log) ? readFileSync(log, "utf8").split("\n").slice(-20).join("\n") : "";
      if (attempt === 3) throw new Error(`pg_ctl start failed:\n${r.stdout}${r.stderr}\n${tail}`);
    }
  } catch (err) {
    stop();
    throw err;
  }
}
