// A throwaway PgBouncer in transaction pooling mode in front of the bench's cluster: Debian's
// `pgbouncer` package (installed with apt-get when missing and running as root), on a free local
// port, trust authentication like the cluster, run as the cluster's unprivileged user when we are
// root (PgBouncer refuses to run as root). Stopped (SIGTERM, then SIGKILL) by `stop()`.
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { freePort } from "./pg";

export interface Bouncer {
  /** postgres://postgres@127.0.0.1:PORT/<database>, through the pooler. */
  url: string;
  version: string;
  child: Subprocess;
  stop(): void;
}

const BINARY = "/usr/sbin/pgbouncer";

/** Installs Debian's pgbouncer when it is missing (as root); throws when it cannot. */
export function ensurePgbouncer(): void {
  if (existsSync(BINARY)) return;
  if (process.getuid?.() !== 0) throw new Error("pgbouncer is required (apt-get install -y pgbouncer, as root)");
  let r = Bun.spawnSync(["apt-get", "install", "-y", "pgbouncer"], { stdout: "ignore", stderr: "pipe" });
  if (r.exitCode !== 0) {
    Bun.spawnSync(["apt-get", "update"], { stdout: "ignore", stderr: "ignore" });
    r = Bun.spawnSync(["apt-get", "install", "-y", "pgbouncer"], { stdout: "ignore", stderr: "pipe" });
  }
  if (r.exitCode !== 0 || !existsSync(BINARY)) throw new Error(`apt-get install -y pgbouncer failed: ${r.stderr.toString().slice(-500)}`);
}

/** The user to run as when root (the cluster's: postgres, else nobody). */
function runAs(): { name: string; uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  for (const name of ["postgres", "nobody"]) {
    const u = Bun.spawnSync(["id", "-u", name], { stdout: "pipe", stderr: "ignore" });
    const g = Bun.spawnSync(["id", "-g", name], { stdout: "pipe", stderr: "ignore" });
    if (u.exitCode === 0) return { name, uid: Number(u.stdout.toString()), gid: Number(g.stdout.toString()) };
  }
  throw new Error("running as root and neither a postgres nor a nobody user exists to run pgbouncer as");
}

/**
 * PgBouncer for `database` on the cluster at `directUrl` (postgres://postgres@127.0.0.1:PORT/...),
 * pool_mode=transaction, `poolSize` server connections for the database, and `settings` (extra
 * lines of its [pgbouncer] section). Resolves once it accepts connections.
 */
export async function startPgbouncer(directUrl: string, database: string, poolSize: number, settings: string[] = []): Promise<Bouncer> {
  ensurePgbouncer();
  const target = new URL(directUrl);
  const dir = mkdtempSync(join(tmpdir(), "leadline-bench-pgbouncer-"));
  const port = await freePort();
  const ini = join(dir, "pgbouncer.ini");
  writeFileSync(join(dir, "users.txt"), `"postgres" ""\n`);
  writeFileSync(
    ini,
    [
      "[databases]",
      `${database} = host=${target.hostname} port=${target.port} dbname=${database} user=postgres`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      `unix_socket_dir = ${dir}`,
      "auth_type = trust",
      `auth_file = ${join(dir, "users.txt")}`,
      "pool_mode = transaction",
      `default_pool_size = ${poolSize}`,
      "max_client_conn = 2000",
      // Startup parameters PgBouncer 1.18 would refuse the connection for: postgres.js's, and the
      // service's plan_cache_mode, which only steers prepared statements' plans (the pooled mode
      // prepares none: an unnamed statement gets a custom plan every time).
      "ignore_startup_parameters = extra_float_digits,options,search_path,statement_timeout,plan_cache_mode",
      `logfile = ${join(dir, "pgbouncer.log")}`,
      ...settings,
      "",
    ].join("\n"),
  );
  const user = runAs();
  if (user) {
    chownSync(dir, user.uid, user.gid);
    for (const f of ["pgbouncer.ini", "users.txt"]) chownSync(join(dir, f), user.uid, user.gid);
  }
  const cmd = user ? ["/usr/sbin/runuser", "-u", user.name, "--", BINARY, ini] : [BINARY, ini];
  const child = Bun.spawn(cmd, { stdout: "ignore", stderr: "pipe", stdin: "ignore" });
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    if (child.exitCode === null) child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", stop);
  const version = Bun.spawnSync([BINARY, "--version"], { stdout: "pipe", stderr: "ignore" }).stdout.toString().split("\n")[0].trim();
  const until = Date.now() + 15_000;
  while (Date.now() < until) {
    if (child.exitCode !== null) {
      const err = await new Response(child.stderr as ReadableStream).text();
      stop();
      throw new Error(`pgbouncer exited ${child.exitCode}: ${err.slice(-500)}`);
    }
    const open = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } }).then(
      (s) => (s.end(), true),
      () => false,
    );
    if (open) return { url: `postgres://postgres@127.0.0.1:${port}/${database}`, version, child, stop };
    await Bun.sleep(50);
  }
  stop();
  throw new Error("pgbouncer did not accept connections within 15 s");
}
