// A throwaway PgBouncer (Debian's 1.18, `apt-get install pgbouncer`; test/run.ts installs it) in
// transaction pooling mode in front of the test cluster, on a free local port, that a test can
// stop and start again on the same port (a pooler restart under load).
import type { Subprocess } from "bun";
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { freePort } from "./cluster";

export const PGBOUNCER = "/usr/sbin/pgbouncer";
export const havePgBouncer = existsSync(PGBOUNCER);

export interface PgBouncer {
  /** `target` rewritten to go through the pooler (same user and database). */
  url: string;
  port: number;
  /** Immediate shutdown (SIGTERM): every client and server connection dropped at once. */
  stop(): Promise<void>;
  /** Starts it again on the same port. */
  start(): Promise<void>;
  /** Stops it and deletes its directory. */
  close(): Promise<void>;
  /** Its log, for a failing test's message. */
  log(): string;
}

/** PgBouncer refuses to run as root: as root it is run as `postgres` (the cluster's user), else `nobody`. */
function runAs(): { name: string; uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  for (const name of ["postgres", "nobody"]) {
    const r = spawnSync("id", ["-u", name], { encoding: "utf8" });
    if (r.status === 0) return { name, uid: Number(r.stdout), gid: Number(spawnSync("id", ["-g", name], { encoding: "utf8" }).stdout) };
  }
  return null;
}

/**
 * `target`: a postgres:// URL of the real server (its user must need no password there, as on the
 * test cluster, which trusts local connections). Clients authenticate with auth_type trust against
 * a generated userlist holding that user.
 */
export async function startPgBouncer(target: string, opts: { poolSize?: number } = {}): Promise<PgBouncer> {
  if (!havePgBouncer) throw new Error(`${PGBOUNCER} is missing: apt-get install -y pgbouncer (test/run.ts does it as root)`);
  const dest = new URL(target);
  const user = decodeURIComponent(dest.username || "postgres");
  const dir = mkdtempSync(join(tmpdir(), "leadline-pgbouncer-"));
  const as = runAs();
  if (as) chownSync(dir, as.uid, as.gid);
  const port = await freePort();
  const logFile = join(dir, "pgbouncer.log");
  writeFileSync(join(dir, "userlist.txt"), `"${user}" ""\n`);
  writeFileSync(
    join(dir, "pgbouncer.ini"),
    [
      "[databases]",
      `* = host=${dest.hostname} port=${dest.port || 5432}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${join(dir, "userlist.txt")}`,
      "pool_mode = transaction",
      `default_pool_size = ${opts.poolSize ?? 10}`,
      "max_client_conn = 500",
      `logfile = ${logFile}`,
      "log_connections = 0",
      "log_disconnections = 0",
      // Quick to notice a server that went away, as an operator would configure it.
      "server_connect_timeout = 2",
      "server_login_retry = 1",
      "query_wait_timeout = 5",
      "",
    ].join("\n"),
  );
  if (as) for (const f of ["pgbouncer.ini", "userlist.txt"]) chownSync(join(dir, f), as.uid, as.gid);

  let proc: Subprocess | null = null;
  const start = async () => {
    // A port just released can still be in TIME_WAIT for a moment; PgBouncer sets SO_REUSEADDR.
    for (let attempt = 1; ; attempt++) {
      const cmd = [PGBOUNCER, ...(as ? ["-u", as.name] : []), join(dir, "pgbouncer.ini")];
      const p = Bun.spawn(cmd, { stdout: "ignore", stderr: "pipe" });
      if (await listening(port, p)) {
        proc = p;
        return;
      }
      p.kill("SIGKILL");
      if (attempt === 3) throw new Error(`pgbouncer did not start on 127.0.0.1:${port}: ${await new Response(p.stderr).text()}\n${readLog()}`);
      await Bun.sleep(500);
    }
  };
  const stop = async () => {
    const p = proc;
    proc = null;
    if (!p) return;
    p.kill("SIGTERM");
    const code = await Promise.race([p.exited, Bun.sleep(5000).then(() => null)]);
    if (code === null) {
      p.kill("SIGKILL");
      await p.exited;
    }
  };
  const readLog = () => (existsSync(logFile) ? readFileSync(logFile, "utf8").split("\n").slice(-30).join("\n") : "");
  await start();
  const url = new URL(target);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return {
    url: url.toString(),
    port,
    stop,
    start,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
    log: readLog,
  };
}

/** True once something accepts on the port while `proc` lives; false if it exits or 10 s pass. */
async function listening(port: number, proc: Subprocess): Promise<boolean> {
  const end = Date.now() + 10_000;
  while (Date.now() < end && proc.exitCode === null) {
    const ok = await new Promise<boolean>((resolve) => {
      Bun.connect({
        hostname: "127.0.0.1",
        port,
        socket: {
          open(s) {
            s.end();
            resolve(true);
          },
          error: () => resolve(false),
          data() {},
        },
      }).catch(() => resolve(false));
    });
    if (ok) return true;
    await Bun.sleep(50);
  }
  return false;
}
