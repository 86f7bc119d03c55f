// JSON lines on stdout. Never pass API keys or request bodies here.
import type { LogLevel } from "./config";

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
let threshold = rank.info;

export function setLogLevel(level: LogLevel): void {
  threshold = rank[level];
}

function write(level: LogLevel, msg: string, fields?: Record<string, unknown>): void {
  if (rank[level] < threshold) return;
  const line = JSON.stringify({ ts: new Date().toISOString(), level, msg, ...fields });
  process.stdout.write(line + "\n");
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
