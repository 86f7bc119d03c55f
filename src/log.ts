// JSON lines on stdout. Never pass API keys, tokens, credentials, raw client addresses or request
// bodies here: `make test` scans every line the suite logs for them (test/harness/sweep.ts).
import { closeSync, openSync, writeSync } from "node:fs";
import type { LogLevel } from "./config";

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
let threshold = rank.info;
/** LOG_COPY_FILE's descriptor: every line at every level, whatever LOG_LEVEL lets through to stdout. */
let copy: number | null = null;
let copyPath: string | null = null;

export function setLogLevel(level: LogLevel): void {
  threshold = rank[level];
}

/**
 * Appends every log line, debug included, to `path` as well (LOG_COPY_FILE; null stops). Written
 * synchronously with O_APPEND, so several processes may share one file: the test suite's sweep
 * collects every line its in-process servers and spawned executables write. Answers the file it
 * replaces.
 */
export function copyLogTo(path: string | null): string | null {
  const previous = copyPath;
  if (copy !== null) closeSync(copy);
  copy = path === null ? null : openSync(path, "a", 0o600);
  copyPath = path;
  return previous;
}

function write(level: LogLevel, msg: string, fields?: Record<string, unknown>): void {
  const shown = rank[level] >= threshold;
  if (!shown && copy === null) return;
  const line = JSON.stringify({ ts: new Date().toISOString(), level, msg, ...fields }) + "\n";
  if (copy !== null) writeSync(copy, line);
  if (shown) process.stdout.write(line);
}

/** Lines already formatted (the access log's batches): to stdout, and to LOG_COPY_FILE when set. */
export function writeLines(text: string): void {
  if (copy !== null) writeSync(copy, text);
  process.stdout.write(text);
}

export const log = {
  debug: (msg: string, fields?: Record<string, unknown>) => write("debug", msg, fields),
  info: (msg: string, fields?: Record<string, unknown>) => write("info", msg, fields),
  warn: (msg: string, fields?: Record<string, unknown>) => write("warn", msg, fields),
  error: (msg: string, fields?: Record<string, unknown>) => write("error", msg, fields),
};

export function errorFields(err: unknown): Record<string, unknown> {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return { error: err.message, code, stack: err.stack?.split("\n").slice(0, 6).join("\n") };
  }
  return { error: String(err) };
}

/**
 * A failure that repeats while its cause lasts (the database away: every worker's poll and every
 * request fails). The first is logged whole; the rest are counted and summarised at most once a
 * minute, without a stack, while they last; the first success after them (or a minute without a
 * failure) ends the episode. One per kind of failure: `every` keeps one per worker.
 */
export class RepeatedFailure {
  private count = 0;
  private unreported = 0;
  private lastLine = 0;
  private lastFailure = 0;

  constructor(
    private readonly msg: string,
    private readonly now: () => number = Date.now,
    private readonly intervalMs = 60_000,
  ) {}

  failed(err: unknown, fields?: Record<string, unknown>): void {
    const t = this.now();
    // Quiet for a whole interval: a new episode (a caller that never reports success, such as
    // the request path, still gets its first failure logged whole).
    if (this.count > 0 && t - this.lastFailure >= this.intervalMs) this.succeeded();
    this.lastFailure = t;
    this.count++;
    if (this.count === 1) {
      this.lastLine = t;
      log.warn(this.msg, { ...fields, ...errorFields(err) });
    } else if (t - this.lastLine >= this.intervalMs) {
      const { error, code } = errorFields(err);
      log.warn(`${this.msg} (still failing)`, { ...fields, error, code, failures: this.count, since_last_line: this.unreported + 1 });
      this.lastLine = t;
      this.unreported = 0;
    } else {
      this.unreported++;
    }
  }

  succeeded(): void {
    if (this.count === 0) return;
    if (this.count > 1) log.info(`${this.msg}: recovered`, { failures: this.count });
    this.count = 0;
    this.unreported = 0;
  }
}
