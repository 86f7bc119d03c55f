// Bounded bodies: a body that trickles in is cut off after the body deadline on every route that
// reads one, with the route's own error form and the connection closed; the server-wide body
// ceiling is 8 MiB, under which each route answers its own 413.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import net from "node:net";
import { MAX_REQUEST_BODY } from "../src/app/server";
import { call, startApp, type TestApp } from "./harness/app";
import { testDatabase, type TestDatabase } from "./harness/db";
import { provisionPools, poolNumbers } from "./harness/dni";
import { ALL_SCOPES, makeKey, seedWorld } from "./harness/factory";
import { LatenessMeter, waitBound } from "./harness/timing";

const DEADLINE_MS = 500;

let db: TestDatabase;
let app: TestApp;
let port: number;
let key: string;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await provisionPools(db.sql, [{ numbers: poolNumbers(2) }]);
  app = await startApp(db.url, { BODY_DEADLINE_MS: String(DEADLINE_MS) });
  port = app.running.port;
  key = (await makeKey(db.sql, { scopes: ALL_SCOPES, org: 1, agent: "agent7" })).key;
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

interface Raw {
  status: number;
  headers: Record<string, string>;
  body: any;
  /** Milliseconds from the end of the headers to the answer. */
  answeredAfter: number;
  /** The server closed the connection (before the client's own give-up). */
  closed: boolean;
  /** How late this process's timers (the in-process server's among them) fired meanwhile (test/harness/timing.ts). */
  late: number;
}

/**
 * Sends the request line and headers, then one byte of the body every `everyMs` (never the whole
 * body), and reads the answer until the server closes the connection or 5 s pass.
 */
function trickle(path: string, headers: Record<string, string>, opts: { chunked?: boolean; everyMs?: number } = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    const meter = new LatenessMeter().start();
    const started = performance.now();
    let answeredAt = 0;
    let data = "";
    const framing = opts.chunked ? { "transfer-encoding": "chunked" } : { "content-length": "10000" };
    const lines = Object.entries({ host: "127.0.0.1", ...framing, ...headers }).map(([k, v]) => `${k}: ${v}`);
    socket.write(`POST ${path} HTTP/1.1\r\n${lines.join("\r\n")}\r\n\r\n`);
    const byte = opts.chunked ? "1\r\n{\r\n" : "{";
    const timer = setInterval(() => {
      if (!socket.destroyed && socket.writable) socket.write(byte);
    }, opts.everyMs ?? 100);
    const giveUp = setTimeout(() => finish(false), 5000);
    socket.on("data", (d) => {
      answeredAt ||= performance.now();
      data += d.toString();
    });
    socket.on("error", () => {});
    socket.on("close", () => finish(true));
    let finished = false;
    async function finish(closed: boolean) {
      if (finished) return; // the give-up's destroy closes the socket too
      finished = true;
      clearInterval(timer);
      clearTimeout(giveUp);
      socket.destroy();
      await meter.stop();
      const [head, ...rest] = data.split("\r\n\r\n");
      const [statusLine, ...headerLines] = head.split("\r\n");
      if (!statusLine) return reject(new Error("no answer"));
      const hs: Record<string, string> = {};
      for (const l of headerLines) {
        const i = l.indexOf(":");
        hs[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
      }
      const text = rest.join("\r\n\r\n");
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {}
      resolve({ status: Number(statusLine.split(" ")[1]), headers: hs, body, answeredAfter: answeredAt - started, closed, late: meter.worst() });
    }
  });
}

function expectCutOff(r: Raw) {
  // Answered at the deadline: never before it, and after it only by as much as timers ran late
  // meanwhile (the 10,000-byte body would take a thousand seconds to end).
  expect(r.answeredAfter).toBeGreaterThanOrEqual(DEADLINE_MS - 20);
  expect(r.answeredAfter).toBeLessThan(waitBound(DEADLINE_MS, r.late));
  expect(r.headers.connection).toBe("close");
  expect(r.closed).toBe(true);
}

const json = { "content-type": "application/json" };

describe("a body that trickles in is cut off at the deadline", () => {
  const keyed = [
    "/hooks/lead_intake.php",
    "/hooks/api_v1.php?r=messages",
    "/hooks/api_v1.php?r=cti/dial",
    "/hooks/kpi_ingest.php",
    "/hooks/calls.php",
  ];
  for (const path of keyed) {
    test(`${path}: 408 body_timeout`, async () => {
      const r = await trickle(path, { ...json, "x-api-key": key });
      expectCutOff(r);
      expect(r.status).toBe(408);
      expect(r.body).toEqual({ ok: false, error: "body_timeout", message: `body not received within ${DEADLINE_MS / 1000} s` });
    });
  }

  test("the key need not have arrived: a key in the body that never came is still 408", async () => {
    const r = await trickle("/hooks/lead_intake.php", json);
    expectCutOff(r);
    expect(r.status).toBe(408);
    expect(r.body.error).toBe("body_timeout");
  });

  test("a chunked body (no declared length) is cut off the same way", async () => {
    const r = await trickle("/hooks/kpi_ingest.php", { ...json, "x-api-key": key }, { chunked: true });
    expectCutOff(r);
    expect(r.status).toBe(408);
    expect(r.body.error).toBe("body_timeout");
  });

  test("dni.php: 408 body_timeout with its CORS header", async () => {
    const r = await trickle("/hooks/dni.php?action=lease", { ...json, origin: "https://shop.example" });
    expectCutOff(r);
    expect(r.status).toBe(408);
    expect(r.body).toEqual({ ok: false, error: "body_timeout" });
    const normal = await call(app.base, "/hooks/dni.php?action=lease", { method: "POST", json: {}, headers: { origin: "https://shop.example" } });
    expect(r.headers["access-control-allow-origin"]).toBe(normal.headers.get("access-control-allow-origin")!);
  });

  test("book/api.php: its own form for a bad body (HTTP 200 {ok:false}) with CORS", async () => {
    const r = await trickle("/book/api.php?action=book", json);
    expectCutOff(r);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: false, error: "body_timeout" });
    expect(r.headers["access-control-allow-origin"]).toBe("*");
    expect(r.headers["cache-control"]).toBe("no-store");
  });

  for (const path of ["/hooks/sms_inbound.php", "/hooks/sms_status.php"]) {
    test(`${path}: 408 body_timeout`, async () => {
      const r = await trickle(path, { "content-type": "application/x-www-form-urlencoded" });
      expectCutOff(r);
      expect(r.status).toBe(408);
      expect(r.body).toEqual({ ok: false, error: "body_timeout" });
    });
  }

  test("a body that arrives slowly but within the deadline is read", async () => {
    const body = JSON.stringify([{ metric_key: "calls", value: 1, day: "2026-11-20" }]);
    const r = await new Promise<string>((resolve) => {
      const socket = net.connect(port, "127.0.0.1");
      let data = "";
      socket.write(`POST /hooks/kpi_ingest.php HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nx-api-key: ${key}\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`);
      socket.write(body.slice(0, 5));
      setTimeout(() => socket.write(body.slice(5)), DEADLINE_MS / 2);
      socket.on("data", (d) => (data += d.toString()));
      socket.on("close", () => resolve(data));
    });
    expect(r.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
  });
});

describe("the body ceiling", () => {
  test("is 8 MiB", () => {
    expect(MAX_REQUEST_BODY).toBe(8 * 1024 * 1024);
  });

  test("a 9 MiB body gets the server's bare 413 before any route", async () => {
    const res = await fetch(`${app.base}/hooks/kpi_ingest.php`, {
      method: "POST",
      headers: { ...json, "x-api-key": key },
      body: "x".repeat(9 * 1024 * 1024),
    }).catch((err) => err as Error);
    // Bun answers as soon as it sees the declared length; the client may see the answer or the
    // connection closed while it was still sending.
    if (res instanceof Response) {
      expect(res.status).toBe(413);
      expect(await res.text()).not.toContain("body_too_large");
    }
  });

  test("8 MiB - 1 on KPI (1 MiB limit) gets the route's own 413 body_too_large", async () => {
    const r = await call(app.base, "/hooks/kpi_ingest.php", {
      method: "POST",
      headers: { ...json, "x-api-key": key },
      body: "x".repeat(8 * 1024 * 1024 - 1),
    });
    expect(r.status).toBe(413);
    expect(r.body).toEqual({ ok: false, error: "body_too_large", message: "body over 1 MiB" });
  });
});
