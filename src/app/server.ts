// `leadline serve`: connect → migrate → build the app → start workers → listen; SIGTERM stops
// accepting, lets requests in flight finish, stops the workers in reverse order (flushing what
// they buffer), closes the database and exits 0.
import { lookup } from "node:dns/promises";
import { Passwords, type PasswordOptions } from "../auth/passwords";
import { KeyStore } from "../auth/service";
import { systemClock, type Clock } from "../clock";
import { ConfigError, type Config } from "../config";
import { migrate } from "../db/migrate";
import { openDatabase, type Database } from "../db/open";
import { startControl, type Control } from "../control/server";
import { automationHandler, automationWorkers } from "../automations/jobs";
import { installerBanner, installerUrl, issueInstallerLink } from "../console/installer";
import { sessionPruner } from "../console/sessions";
import { demoBanner, provisionDemo, type DemoOutcome } from "../demo/provision";
import { seedDemoWorkspace } from "../demo/workspace";
import { dniWorkers } from "../dni/instance";
import { eventWorkers, webhookDeliveryHandler } from "../events/jobs";
import { FeedHub } from "../feed/hub";
import { feedWorkers } from "../feed/sequencer";
import type { Deps } from "../http/deps";
import { JobRunner, type JobHandler } from "../jobs/queue";
import { Workers, type Worker } from "../jobs/worker";
import { Limits } from "../limits/limits";
import { errorFields, log } from "../log";
import { messageJobs, messageWorkers } from "../messages/worker";
import { AccessLog } from "../metrics/access-log";
import { RequestObserver } from "../metrics/observe";
import { checkStoredSecrets } from "../secrets/stored";
import { VERSION } from "../version";
import { callbackHandler, workspaceWorkers } from "../workspace/jobs";
import { buildApp } from "./app";
import { loadIpSalt, loadUnsubscribeKey, withProvisionedSettings } from "./settings";

/**
 * Bun refuses larger bodies with a bare 413 before any handler, without the CORS headers a browser
 * needs to see it; routes read bodies with their own, smaller limits (1 MiB at most) and answer
 * their own 413 there. This ceiling is what the server holds for any request at all (docs/operations.md: Limits).
 */
export const MAX_REQUEST_BODY = 8 * 1024 * 1024;

/**
 * Seconds a connection may stay silent before Bun closes it (Bun's default, written down): it ends
 * a client that stops sending, not one that trickles, which the body deadline (BODY_DEADLINE_MS,
 * src/http/body.ts) ends.
 */
const IDLE_TIMEOUT_S = 10;

export interface Running {
  port: number;
  deps: Deps;
  /** Stops accepting, lets requests in flight finish, stops the workers, closes the database. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** The clock every time rule reads (tests set it). */
  clock?: Clock;
  /** The console's password checks: how many at once, how many wait, Argon2id's cost (tests lower it). */
  passwords?: PasswordOptions;
  /** How long a send waits for its provider (default 10 s; tests whose provider hangs set it: Config.providerTimeoutMs). */
  providerTimeoutMs?: number;
  /** Every route's request deadline (default the contract's 1 s; the tests' instances lengthen it: Config.deadlineMs). */
  deadlineMs?: number;
  /** Run with the service's deps before it listens or any background work starts (the demo's workspace). */
  prepare?: (deps: Deps) => Promise<void>;
}

/** The job kinds of every feature: one runner claims them all. */
function jobHandlers(deps: Deps): JobHandler[] {
  return [...messageJobs(deps), webhookDeliveryHandler(deps), automationHandler(deps), callbackHandler(deps.sql, deps.clock)];
}

/** Starts the service on an open database; used by `serve` and by tests. */
export async function start(given: Config, db: Database, options: StartOptions = {}): Promise<Running> {
  // On the direct connection: DDL and its lock do not belong on a pooled one (docs/several-instances.md).
  await migrate(db.direct);
  // Refuses to start (one line naming the key ids) when a stored secret does not open with
  // LEADLINE_SECRET_KEY, rather than failing every send and delivery that needs it later.
  await checkStoredSecrets(db.sql, given.secretKey);
  const provisioned = await withProvisionedSettings(db.sql, given);
  const config = {
    ...provisioned,
    ...(options.providerTimeoutMs === undefined ? {} : { providerTimeoutMs: options.providerTimeoutMs }),
    ...(options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs }),
  };
  const clock = options.clock ?? systemClock;
  const keys = new KeyStore(db.sql, clock);
  const limits = new Limits(db.sql, clock);
  const ipSalt = await loadIpSalt(db.sql, config);
  const passwords = new Passwords(options.passwords);
  const unsubscribeKey = await loadUnsubscribeKey(db.sql);
  const feed = new FeedHub(db.sql);
  const deps: Deps = { sql: db.sql, config, clock, keys, limits, passwords, ipSalt, unsubscribeKey, feed, embedded: db.embedded };
  // The embedded database is a single connection that LISTEN would take over; it has one process.
  // A transaction pooler would hand the LISTEN session to whoever runs next: LISTEN goes direct.
  if (!db.embedded) {
    await keys.listen(db.direct);
    await feed.listen(db.direct);
  }
  if (options.prepare) await options.prepare(deps);
  // The access log is an info line per request: off at LOG_LEVEL warn or error, or with ACCESS_LOG=false.
  const accessLog = config.accessLog && (config.logLevel === "info" || config.logLevel === "debug") ? new AccessLog() : null;
  const app = buildApp(deps, new RequestObserver(accessLog, config.trustProxy, ipSalt));
  const server = listen(app, config);
  // Background work on a pool of its own: a backlog of jobs never takes the requests' connections.
  const behind: Deps = { ...deps, sql: db.background };
  const runner = new JobRunner(db.background, clock, jobHandlers(behind));
  // Stopped in reverse: the outbox fan-out and the automation triggers before the runner that runs what they queue.
  const background: Worker[] = [
    // First started, last stopped: it writes the lines of every request answered before the stop.
    ...(accessLog ? [accessLog.worker()] : []),
    keys.lastUseWorker(),
    ...limits.workers(),
    sessionPruner(db.background, clock),
    ...messageWorkers(behind),
    ...dniWorkers(deps),
    runner,
    ...eventWorkers(behind, () => runner.wake()),
    ...automationWorkers(behind, () => runner.wake()),
    ...workspaceWorkers(db.background, clock),
    ...feedWorkers(db.background, clock, feed, db.embedded),
  ];
  const workers = new Workers(background);
  workers.start();
  let stopping: Promise<void> | null = null;
  return {
    port: server.port!,
    deps,
    stop: () =>
      (stopping ??= (async () => {
        // Open event streams last as long as their tabs: ended first, or the graceful stop waits for them.
        feed.close();
        await server.stop(false);
        await workers.stop();
        await db.close();
      })()),
  };
}

/** Listening is exclusive: a second process on the same address fails at once instead of sharing it. */
function listen(app: ReturnType<typeof buildApp>, config: Config) {
  try {
    app.listen({
      port: config.port,
      hostname: config.host,
      maxRequestBodySize: MAX_REQUEST_BODY,
      idleTimeout: IDLE_TIMEOUT_S,
      reusePort: false,
      development: false,
    });
  } catch (err) {
    const message = (err as Error).message;
    const why = message.includes("in use") ? "the address is in use" : message.includes("EADDRNOTAVAIL") || message.includes("EINVAL") ? "HOST is not an address of this machine" : message;
    throw new Error(`cannot listen on ${config.host}:${config.port} (HOST:PORT): ${why}`);
  }
  return app.server!;
}

/** Uncaught errors are logged as JSON lines before the process exits (systemd restarts it). */
function logFatalErrors(): void {
  process.on("uncaughtException", (err) => {
    log.error("uncaught exception", errorFields(err));
    process.exit(1);
  });
  process.on("unhandledRejection", (reason) => {
    log.error("unhandled promise rejection", errorFields(reason));
  });
}

/** HOST's name resolved before anything else starts, so a typo fails at once, naming the variable. */
async function resolveHost(host: string): Promise<void> {
  try {
    await lookup(host);
  } catch (err) {
    throw new ConfigError(`HOST ${JSON.stringify(host)} does not resolve to an address (${(err as { code?: string }).code ?? "lookup failed"})`);
  }
}

export async function serve(config: Config, options: { demo?: boolean } = {}): Promise<number> {
  logFatalErrors();
  await resolveHost(config.host);
  // Before "listening", so that whoever waits for that line has seen it.
  if (!config.secretKey) {
    log.warn("LEADLINE_SECRET_KEY is not set; provider credentials and webhook secrets are stored in clear (docs/operations.md: Secrets at rest)");
  }
  const db = await openDatabase(config, "serve");
  if (db.createdFromImage) log.info("created the embedded database from the image", { migration: db.createdFromImage });
  let running: Running;
  let demo: DemoOutcome | null = null;
  try {
    // The demo is in place before anything listens or runs, and before start reads the settings
    // it provisions (COMMS_INBOUND_LIST_ID).
    if (options.demo) {
      await migrate(db.direct);
      demo = await provisionDemo(db.sql, new Date(systemClock.now()), config.secretKey);
    }
    running = await start(config, db, demo?.applied ? { prepare: seedDemoWorkspace } : {});
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
  // The CLI's way in while this process holds the embedded database (src/control/server.ts). The
  // key cache is emptied after each command: there is no LISTEN here to announce key changes.
  let control: Control | null = null;
  if (db.embedded) {
    try {
      control = await startControl(db.sql, running.deps.config, () => running.deps.keys.invalidate());
    } catch (err) {
      await running.stop().catch(() => {});
      throw new Error(`cannot open the control socket: ${(err as Error).message}`);
    }
  }
  // Nobody can sign in to the console yet: the one-time link that creates the first admin, printed
  // once, after the "listening" line, for the person starting the service. On standard error, so
  // standard output stays JSON log lines only (and the token is never in one; the access log names
  // no paths). Issued before that line, so nothing is awaited between it and the signal handlers.
  let installer: string | null = null;
  try {
    installer = await issueInstallerLink(db.sql, systemClock.now());
  } catch (err) {
    log.warn("could not issue the installer link; create the first admin with leadline users create", errorFields(err));
  }
  log.info("listening", { version: VERSION, host: config.host, port: running.port, embedded: db.embedded, ...(control ? { control: control.path } : {}) });
  if (!config.ipSalt) log.warn("NPK_IP_SALT is not set; client-address hashes use a generated per-installation salt");
  if (demo !== null) process.stdout.write(demoBanner(demo, running.deps.config.baseUrl));
  if (installer !== null) process.stderr.write(installerBanner(installerUrl(running.deps.config.baseUrl, installer)));
  await new Promise<void>((resolve) => {
    const onSignal = (signal: string) => {
      log.info("stopping", { signal });
      resolve();
    };
    process.once("SIGTERM", () => onSignal("SIGTERM"));
    process.once("SIGINT", () => onSignal("SIGINT"));
  });
  await control?.close();
  await running.stop();
  log.info("stopped");
  return 0;
}
