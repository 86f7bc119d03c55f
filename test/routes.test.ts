// One declaration per route: what the server serves (Elysia's route table and Bun's native table)
// is exactly what the features declare (src/app/app.ts declaredRoutes and declaredPaths), every
// declared selector value of a query-routed path is dispatched to its route, an undeclared one gets
// the path's unknown answer, and every other method the path's declared answer.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { buildApp, declaredPaths, declaredRoutes } from "../src/app/app";
import type { Deps } from "../src/http/deps";
import { mountRoutes, routerPath } from "../src/http/mount";
import { isDefined } from "../src/http/define";
import type { PathRoute, Route } from "../src/http/route";
import { statusOf } from "../src/errors";
import { call, startApp, type TestApp } from "./harness/app";
import { testDatabase, type TestDatabase } from "./harness/db";

let db: TestDatabase;
let app: TestApp;
let deps: Deps;
let routes: Route[];
let paths: PathRoute[];

beforeAll(async () => {
  db = await testDatabase();
  app = await startApp(db.url);
  deps = app.running.deps;
  routes = declaredRoutes(deps);
  paths = declaredPaths(deps);
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

/** A declared path with its parameters filled in. */
const concrete = (path: string) => path.replace(/\{[^}]+\}/g, "x");

describe("the served table is the declared one", () => {
  test("every route and path is served, and nothing else", () => {
    const served = buildApp(deps);
    const native = (served.config.serve as { routes: Record<string, Record<string, unknown>> }).routes;
    const actual = [
      ...served.routes.map((r) => `${r.method} ${r.path}`),
      ...Object.entries(native).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m} ${path} (native)`)),
    ].sort();
    const dispatched = new Map(paths.filter((p) => p.select).map((p) => [p.path, p]));
    const expected = [
      ...routes.filter((r) => !r.select).map((r) => `${r.method} ${routerPath(r.path)}${r.native ? " (native)" : ""}`),
      ...[...dispatched.values()].flatMap((p) =>
        [...new Set(routes.filter((r) => r.path === p.path && r.select).map((r) => r.method))].map((m) => `${m} ${p.path}${p.native ? " (native)" : ""}`),
      ),
      ...paths.filter((p) => p.otherMethods).map((p) => `ALL ${p.path}`),
    ].sort();
    expect(actual).toEqual(expected);
  });

  test("every route is built by the one pipeline, once, with a schema for each of its inputs", () => {
    for (const r of routes) {
      const path = r.path.match(/\{[A-Za-z_]+\}/g) ?? [];
      expect([r.id, isDefined(r), path.length === 0 || r.params !== undefined]).toEqual([r.id, true, true]);
      // A route that reads a body declares it (its schema, whether a form, its limit).
      if (r.body) expect([r.id, r.body.limit > 0, r.body.schema !== undefined]).toEqual([r.id, true, true]);
    }
    // Every form of the console carries its declared fields and _csrf, within a limit.
    for (const r of routes.filter((r) => r.access.kind === "session" && r.method === "POST")) expect([r.id, r.body?.form]).toEqual([r.id, true]);
  });

  test("ids are unique, every selected route's path has a dispatcher on its parameter, and every route declares its answers", () => {
    expect(new Set(routes.map((r) => r.id)).size).toBe(routes.length);
    for (const r of routes.filter((r) => r.select)) {
      const path = paths.find((p) => p.path === r.path);
      expect([r.id, path?.select?.param]).toEqual([r.id, r.select!.param]);
    }
    for (const r of routes) expect([r.id, Object.keys(r.answers).length > 0]).toEqual([r.id, true]);
  });

  test("the surfaces this issue declared are all there", () => {
    const have = new Set(routes.map((r) => `${r.method} ${r.path}${r.select ? `?${r.select.param}=${r.select.value}` : ""}`));
    for (const want of [
      "POST /hooks/dni.php?action=lease",
      "POST /hooks/dni.php?action=heartbeat",
      "POST /hooks/dni.php?action=event",
      "OPTIONS /hooks/dni.php",
      "GET /dni.js",
      "GET /book/api.php?action=slots",
      "POST /book/api.php?action=slots",
      "POST /book/api.php?action=book",
      "POST /book/api.php?action=reschedule",
      "OPTIONS /book/api.php",
      "GET /book/{slug}",
      "GET /book",
      "GET /book/_/{name}",
      "POST /hooks/sms_status.php",
      "POST /hooks/sms_inbound.php",
      "GET /healthz",
      "GET /readyz",
    ]) {
      expect(have.has(want) ? want : `missing: ${want}`).toBe(want);
    }
  });

  test("a selected route without a dispatcher, or a route declared twice, is refused at start", () => {
    const dni = routes.filter((r) => r.path === "/hooks/dni.php");
    expect(() => mountRoutes(dni, [])).toThrow(/has no dispatcher/);
    const health = routes.find((r) => r.id === "healthz")!;
    expect(() => mountRoutes([health, { ...health, id: "again" }])).toThrow(/declared twice/);
  });
});

describe("query-routed paths dispatch what they declare", () => {
  test("every declared selector value reaches its route; an undeclared one gets the path's unknown answer", async () => {
    for (const path of paths.filter((p) => p.select)) {
      const selected = routes.filter((r) => r.path === path.path && r.select);
      expect(selected.length).toBeGreaterThan(0);
      for (const r of selected) {
        const value = r.select!.value.replace("{id}", "1");
        const res = await call(app.base, `${r.path}?${r.select!.param}=${encodeURIComponent(value)}`, {
          method: r.method,
          body: r.method === "POST" ? "{}" : undefined,
        });
        // Reached: anything but the answer to an undeclared value.
        expect([r.id, res.status === statusOf(path.select!.unknown, path.surface) && res.body?.error === path.select!.unknown]).toEqual([r.id, false]);
      }
      for (const method of new Set(selected.map((r) => r.method))) {
        const res = await call(app.base, `${path.path}?${path.select!.param}=no-such-value`, { method, body: method === "POST" ? "{}" : undefined });
        expect([path.path, method, res.status, res.body]).toEqual([path.path, method, statusOf(path.select!.unknown, path.surface), { ok: false, error: path.select!.unknown }]);
      }
    }
  });

  test("every other method gets the path's declared answer, with Allow naming the declared methods", async () => {
    for (const path of paths.filter((p) => p.otherMethods)) {
      const declared = new Set(routes.filter((r) => r.path === path.path).map((r) => r.method));
      for (const method of ["PUT", "DELETE", "PATCH", "GET", "POST"].filter((m) => !declared.has(m as Route["method"]))) {
        const res = await call(app.base, `${path.path}?action=lease&r=leads/1`, { method });
        const code = path.otherMethods!;
        expect([path.path, method, res.status, res.body]).toEqual([path.path, method, statusOf(code, path.surface), { ok: false, error: code }]);
        if (code === "method_not_allowed") {
          expect(res.headers.get("allow")).toBe(["GET", "POST", "OPTIONS"].filter((m) => declared.has(m as Route["method"])).join(", "));
        }
        for (const [name, value] of Object.entries(path.headers ?? {})) expect([path.path, name, res.headers.get(name)]).toEqual([path.path, name, value]);
      }
    }
  });

  test("a route's own path with a method it does not declare is not served (404 not_found)", async () => {
    for (const r of routes.filter((r) => !r.select && !paths.some((p) => p.path === r.path))) {
      const methods = new Set(routes.filter((x) => x.path === r.path).map((x) => x.method));
      const method = methods.has("POST") ? "PUT" : "POST";
      const res = await call(app.base, concrete(r.path), { method, body: "{}" });
      expect([r.id, method, res.status, res.body]).toEqual([r.id, method, 404, { ok: false, error: "not_found" }]);
    }
  });
});

describe("an address nothing answers", () => {
  const HTML = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

  test("under /console, opened by a browser: the console's Not found page (404, HTML, a way back), whoever asks", async () => {
    for (const path of ["/console/setting", "/console/no/such/page", "/console/reports?day=2026-11-28"]) {
      for (const method of ["GET", "HEAD"]) {
        const res = await fetch(app.base + path, { method, headers: { accept: HTML }, redirect: "manual" });
        expect([path, method, res.status, res.headers.get("content-type")]).toEqual([path, method, 404, "text/html; charset=utf-8"]);
        const body = await res.text();
        if (method === "GET") expect([path, body.includes("<title>Not found · Leadline</title>"), body.includes('href="/console"')]).toEqual([path, true, true]);
      }
    }
  });

  test("anything else is not_found as JSON: another method, a client that does not ask for HTML, any other path", async () => {
    const cases: [string, string, string | null][] = [
      ["/console/no/such/page", "POST", HTML],
      ["/console/no/such/page", "GET", "application/json"],
      ["/console/no/such/page", "GET", null],
      ["/consoles", "GET", HTML],
      ["/no/such/page", "GET", HTML],
      ["/api/v1/console/x", "GET", HTML],
    ];
    for (const [path, method, accept] of cases) {
      const res = await call(app.base, path, { method, headers: accept ? { accept } : {}, ...(method === "POST" ? { body: "{}" } : {}) });
      expect([path, method, accept, res.status, res.body]).toEqual([path, method, accept, 404, { ok: false, error: "not_found" }]);
    }
  });
});
