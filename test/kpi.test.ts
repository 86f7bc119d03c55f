import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testDatabase, type TestDatabase } from "./harness/db";
import { call, startApp, type TestApp } from "./harness/app";
import { makeKey, seedWorld } from "./harness/factory";
import { localDay } from "../src/kpi/service";

let db: TestDatabase;
let app: TestApp;
let acme: string;
let global: string;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url);
  acme = (await makeKey(db.sql, { scopes: ["metrics:write"], org: 1 })).key;
  global = (await makeKey(db.sql, { scopes: ["metrics:write"] })).key;
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

const ingest = (key: string, body: unknown, raw = false) =>
  call(app.base, "/hooks/kpi_ingest.php", {
    method: "POST",
    key,
    ...(raw ? { body: body as string, headers: { "content-type": "application/json" } } : { json: body }),
  });
const points = (metric: string) =>
  db.sql`select org_id, metric_key, day, dim_key, value from kpi_points where metric_key = ${metric} order by day, dim_key`;

describe("kpi ingest", () => {
  test("a single point defaults the day to today and registers the metric", async () => {
    const r = await ingest(global, { metric_key: "calls.made", value: "12.5" });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true, upserts: 1 });
    const today = localDay(new Date());
    expect([...(await points("calls.made"))]).toEqual([{ org_id: null, metric_key: "calls.made", day: today, dim_key: "", value: 12.5 }]);
    const [m] = await db.sql`select label, aggregation from kpi_metrics where key = 'calls.made'`;
    expect(m).toEqual({ label: "calls.made", aggregation: "sum" });
  });

  test("batches upsert; the last of two identical identities wins; re-sending replaces", async () => {
    const body = {
      points: [
        { metric_key: "leads", value: 1, day: "2026-01-02", dim_key: "google" },
        { metric_key: "leads", value: 2, day: "2026-01-02", dim_key: "google" },
        { metric_key: "leads", value: 3, day: "2026-01-03" },
      ],
    };
    expect((await ingest(global, body)).body).toEqual({ ok: true, upserts: 3 });
    expect((await points("leads")).map((p) => p.value)).toEqual([2, 3]);
    await ingest(global, [{ metric_key: "leads", value: 9, day: "2026-01-03" }]);
    expect((await points("leads")).map((p) => p.value)).toEqual([2, 9]);
  });

  test("partial success reports each failed point by index", async () => {
    const r = await ingest(global, [
      { metric_key: "ok1", value: 1 },
      { metric_key: "ok1", value: "abc" },
      { metric_key: "bad key!", value: 1 },
      { metric_key: "ok2", value: 1, day: "2026-13-45" },
      { metric_key: "ok3", value: 1, day: "26-1-1" },
      { metric_key: "ok4", value: 1, dim_key: "d".repeat(81) },
      "nope",
      { metric_key: "x".repeat(61), value: 1 },
      { metric_key: "ok5", value: true },
    ]);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      ok: true,
      upserts: 2,
      errors: [
        { index: 1, error: "bad_value" },
        { index: 2, error: "bad_metric_key" },
        { index: 4, error: "bad_day" },
        { index: 5, error: "bad_dim_key" },
        { index: 6, error: "bad_point" },
        { index: 7, error: "bad_metric_key" },
        { index: 8, error: "bad_value" },
      ],
    });
    // Only the shape of the day is checked.
    expect((await points("ok2"))[0].day).toBe("2026-13-45");
  });

  test("no valid point is 422 no_valid_points with the indexed errors", async () => {
    const r = await ingest(global, [{ metric_key: "a", value: "x" }, { value: 1 }]);
    expect(r.status).toBe(422);
    expect(r.body).toEqual({
      ok: false,
      error: "no_valid_points",
      message: expect.any(String),
      errors: [
        { index: 0, error: "bad_value" },
        { index: 1, error: "bad_metric_key" },
      ],
    });
  });

  test("body errors", async () => {
    const cases: [unknown, boolean, string][] = [
      ["{oops", true, "malformed_json"],
      ["", true, "malformed_json"],
      ["42", true, "malformed_body"],
      ["null", true, "malformed_body"],
      ['"x"', true, "malformed_body"],
      [{ points: "x" }, false, "malformed_body"],
      [[], false, "no_points"],
      [{ points: [] }, false, "no_points"],
      [Array.from({ length: 501 }, () => ({ metric_key: "a", value: 1 })), false, "too_many_points"],
    ];
    for (const [body, raw, code] of cases) {
      const r = await ingest(global, body, raw);
      expect({ body, status: r.status, code: r.body.error }).toEqual({ body, status: 422, code });
    }
  });

  test("500 points is accepted in one request", async () => {
    const batch = Array.from({ length: 500 }, (_, i) => ({ metric_key: "bulk", value: i, dim_key: `d${i}` }));
    const r = await ingest(global, { points: batch });
    expect(r.body).toEqual({ ok: true, upserts: 500 });
    expect((await points("bulk")).length).toBe(500);
  });

  test("org scoping: a tenant key's org overrides input; the global key may name a real org; anything else is house", async () => {
    await ingest(acme, { org_id: 2, points: [{ metric_key: "scoped", value: 1, org_id: 2, dim_key: "a" }] });
    await ingest(global, { org_id: 2, points: [{ metric_key: "scoped", value: 1, dim_key: "b" }, { metric_key: "scoped", value: 1, org_id: 999, dim_key: "c" }] });
    await ingest(global, { metric_key: "scoped", value: 1, org_id: "1", dim_key: "d" });
    expect((await points("scoped")).map((p) => [p.dim_key, p.org_id])).toEqual([
      ["a", 1],
      ["b", 2],
      ["c", null],
      ["d", 1],
    ]);
  });

  test("numbers out of range or non-finite are bad_value, never a 500", async () => {
    const r = await ingest(global, '[{"metric_key":"big","value":"1e999"},{"metric_key":"big","value":1e308}]', true);
    expect(r.status).toBe(200);
    expect(r.body.errors).toEqual([{ index: 0, error: "bad_value" }]);
  });
});
