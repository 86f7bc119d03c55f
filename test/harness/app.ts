// The real service, in-process, on a test database, listening on a free port: tests talk HTTP.
import { loadConfig } from "../../src/config";
import { servePools } from "../../src/db/open";
import { start, type Running, type StartOptions } from "../../src/app/server";
import { setLogLevel } from "../../src/log";
import { TEST_DEADLINE_MS } from "./deadline";

export interface TestApp {
  base: string;
  running: Running;
  stop(): Promise<void>;
}

setLogLevel("error");

export { TEST_DEADLINE_MS };

/** Starts an instance on `url` with its own pool and caches, like a separate process would have. */
export async function startApp(url: string, env: Record<string, string> = {}, options: StartOptions = {}): Promise<TestApp> {
  const config = loadConfig({ DATABASE_URL: url, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "error", ...env });
  // The pools `serve` opens (src/db/open.ts).
  const { sql, background, breaker } = servePools(url, 4, "leadline-test-app");
  const close = async () => {
    breaker.stop();
    await Promise.all([sql.end({ timeout: 5 }), background.end({ timeout: 5 })]);
  };
  const running = await start(config, { sql, direct: sql, background, embedded: false, close }, { deadlineMs: TEST_DEADLINE_MS, ...options });
  return { base: `http://127.0.0.1:${running.port}`, running, stop: () => running.stop() };
}

export interface Reply {
  status: number;
  body: any;
  headers: Headers;
}

export async function call(base: string, path: string, init: RequestInit & { json?: unknown; key?: string } = {}): Promise<Reply> {
  const headers = new Headers(init.headers);
  if (init.key !== undefined) headers.set("x-api-key", init.key);
  let body = init.body;
  if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    if (!headers.has("content-type")) headers.set("content-type", "application/json");
  }
  const res = await fetch(base + path, { ...init, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: res.status, body: parsed, headers: res.headers };
}
