// `leadline serve`: connect → migrate → build the app → listen; SIGTERM drains and exits 0.
import type { Config } from "./config";
import { KeyStore } from "./auth/service";
import { migrate } from "./db/migrate";
import { openDatabase, type Database } from "./db/open";
import { buildApp } from "./http/app";
import type { Deps } from "./http/deps";
import { RateLimiter } from "./http/rate-limit";
import { errorFields, log } from "./log";
import { VERSION } from "./version";

/** Bun refuses larger bodies with a bare 413 before any handler; routes apply their own, smaller limits. */
const MAX_REQUEST_BODY = 8 * 1024 * 1024;

export interface Running {
  port: number;
  deps: Deps;
  /** Stops accepting, lets requests in flight finish, flushes counters, closes the database. */
  stop(): Promise<void>;
}

/** Starts the service on an open database; used by `serve` and by tests. */
export async function start(config: Config, db: Database): Promise<Running> {
  await migrate(db.sql);
  const keys = new KeyStore(db.sql);
  const limiter = new RateLimiter(db.sql);
  const deps: Deps = { sql: db.sql, config, keys, limiter, now: () => new Date() };
  // The embedded database is a single connection that LISTEN would take over; it has one process.
  if (!db.embedded) await keys.listen();
  const app = buildApp(deps).listen({ port: config.port, hostname: config.host, maxRequestBodySize: MAX_REQUEST_BODY });
  const timers = [
    setInterval(() => void keys.flushLastUse(), 5_000),
    setInterval(() => void limiter.prune().catch((err) => log.warn("pruning rate counters failed", errorFields(err))), 600_000),
  ];
  let stopping: Promise<void> | null = null;
  return {
    port: app.server!.port!,
    deps,
    stop: () =>
      (stopping ??= (async () => {
        timers.forEach(clearInterval);
        await app.server?.stop(false);
        await limiter.flush().catch(() => {});
        await keys.flushLastUse();
        await db.close();
      })()),
  };
}

/** Uncaught errors are logged as JSON lines before the process exits (systemd restarts it). */
function logFatalErrors(): void {
  process.on("uncaughtException", (err) => {
    log.error("uncaught exception", errorFields(err));
    process.exit(1);
  });
}

export async function serve(config: Config): Promise<number> {
  logFatalErrors();
  const db = await openDatabase(config, "serve");
  let running: Running;
  try {
    running = await start(config, db);
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
  log.info("listening", { version: VERSION, host: config.host, port: running.port, embedded: db.embedded });
  if (!config.ipSalt) log.warn("NPK_IP_SALT is not set; DNI IP hashes use a generated per-installation salt");
  await new Promise<void>((resolve) => {
    const onSignal = (signal: string) => {
      log.info("stopping", { signal });
      resolve();
    };
    process.once("SIGTERM", () => onSignal("SIGTERM"));
    process.once("SIGINT", () => onSignal("SIGINT"));
  });
  await running.stop();
  log.info("stopped");
  return 0;
}
