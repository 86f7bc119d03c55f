// The KPI page's stacked dimensions and its CSV (issue 30): a metric reported under dimension keys
// drawn as one stacked bar a day (each dimension a part, the largest first, beyond seven the rest
// summed as one part), its numbers in the table beside the chart, and /console/kpi.csv writing
// exactly that table for the same query; a dimension key starting with `=` comes out as text.
// Over HTTP on the served app with a session, across two organizations.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);
let db: TestDatabase;
let app: TestApp;
const clock = new ManualClock(Date.UTC(2026, 10, 23, 17));
const as: Record<"admin" | "manager" | "manager2", ConsoleClient> = {} as never;

/** The chart's table as the page shows it: header cells, then each row's cells (text, tags removed). */
function chartTable(body: string): string[][] {
  const table = /<details class="chart-data">[\s\S]*?<table class="data">([\s\S]*?)<\/table>/.exec(body)?.[1] ?? "";
  const text = (s: string) => s.replace(/<[^>]*>/g, "").replaceAll("&amp;", "&").replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&quot;", '"').replaceAll("&#39;", "'");
  return [...table.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((r) => [...r[1].matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((c) => text(c[1])));
}

/** An RFC 4180 file's rows (quoted cells may hold commas, quotes doubled; no line breaks in these). */
const csvRows = (body: string) =>
  body
    .trim()
    .split("\r\n")
    .map((l) => [...l.matchAll(/(?:^|,)(?:"((?:[^"]|"")*)"|([^,]*))/g)].map((m) => (m[1] !== undefined ? m[1].replaceAll('""', '"') : m[2])));

/** The page's table as a CSV writes it: "–" (no point) empty, thousands separators gone. */
const asCsv = (t: string[][]) => t.map((r) => r.map((c) => (c === "–" ? "" : /^[\d,.]+$/.test(c) ? c.replaceAll(",", "") : c)));

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await db.sql`insert into kpi_metrics (key, label) values ('sales', 'Sales'), ('visits', 'Visits')`;
  // Organization 1's sales on Nov 20-22: google 10 a day, facebook 3 a day (none on the 21st), and
  // a dimension named like a formula; organization 2's sales under its own dimension.
  await db.sql`insert into kpi_points (org_id, metric_key, day, dim_key, value) values
    (1, 'sales', '2026-11-20', 'google', 10), (1, 'sales', '2026-11-21', 'google', 10), (1, 'sales', '2026-11-22', 'google', 1000),
    (1, 'sales', '2026-11-20', 'facebook', 3), (1, 'sales', '2026-11-22', 'facebook', 3),
    (1, 'sales', '2026-11-22', '=HYPERLINK("x")', 1),
    (2, 'sales', '2026-11-22', 'bolt-secret', 777)`;
  // Ten dimensions of visits: 1..10 on one day.
  await db.sql`insert into kpi_points (org_id, metric_key, day, dim_key, value)
    select 1, 'visits', '2026-11-22', 'd' || lpad(i::text, 2, '0'), i from generate_series(1, 10) i`;
  app = await startApp(db.url, { BASE_URL: "https://leads.example" }, { clock });
  const users = {
    admin: await makeUser(db.sql, { role: "admin", orgId: null }),
    manager: await makeUser(db.sql, { role: "manager", orgId: 1 }),
    manager2: await makeUser(db.sql, { role: "manager", orgId: 2 }),
  };
  for (const [role, u] of Object.entries(users)) as[role as keyof typeof as] = await signIn(app.base, u.email, u.password);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

const Q = "metric=sales&from=2026-11-20&to=2026-11-22";
const PREV = "Previous period (2026-11-17 to 2026-11-19), same day of the period";

describe("KPI stacked by dimension", () => {
  test("one stacked bar a day: each dimension a part, largest first, their total, the previous period", async () => {
    const r = await as.manager.get(`/console/kpi?${Q}&stack=dim`);
    expect(r.status).toBe(200);
    const body = r.body as string;
    expect(chartTable(body)).toEqual([
      ["Day", "google", "facebook", '=HYPERLINK("x")', "Total", PREV],
      ["2026-11-20", "10", "3", "–", "13", "–"],
      ["2026-11-21", "10", "–", "–", "10", "–"],
      ["2026-11-22", "1,000", "3", "1", "1,004", "–"],
    ]);
    // Drawn stacked: each part a rect with its name in words; a legend of names; the choice kept.
    expect(body).toContain("<title>google, Nov 22: 1,000</title>");
    expect(body).toContain('<title id="kpi-chart-title">Sales by day and dimension, 2026-11-20 to 2026-11-22</title>');
    expect(body).toMatch(/<ul class="chart-legend"><li><span class="chart-key chart-s0" aria-hidden="true"><\/span>google<\/li>/);
    expect(body).toContain('<option value="dim" selected>Stacked by dimension</option>');
    // The presets keep the stacking.
    expect(body).toContain("stack=dim&amp;preset=7");
    // Another organization's dimension never shows.
    expect(body).not.toContain("bolt-secret");
  });

  test("without stack=dim, one bar a day (the dimension filter as before)", async () => {
    expect(chartTable((await as.manager.get(`/console/kpi?${Q}`)).body as string)).toEqual([
      ["Day", "Sales", PREV],
      ["2026-11-20", "13", "–"],
      ["2026-11-21", "10", "–"],
      ["2026-11-22", "1,004", "–"],
    ]);
    expect(chartTable((await as.manager.get(`/console/kpi?${Q}&dim=facebook`)).body as string)[3]).toEqual(["2026-11-22", "3", "–"]);
  });

  test("beyond seven dimensions the smallest are summed as one part", async () => {
    const t = chartTable((await as.manager.get("/console/kpi?metric=visits&from=2026-11-22&to=2026-11-22&stack=dim")).body as string);
    expect(t[0]).toEqual(["Day", "d10", "d09", "d08", "d07", "d06", "d05", "Other dimensions (4)", "Total", "Previous period (2026-11-21 to 2026-11-21), same day of the period"]);
    expect(t[1]).toEqual(["2026-11-22", "10", "9", "8", "7", "6", "5", "10", "55", "–"]);
  });
});

describe("the KPI CSV", () => {
  test("its rows are the page's table for the same query, stacked or not", async () => {
    for (const q of [`${Q}&stack=dim`, Q, `${Q}&dim=google`, "metric=visits&from=2026-11-22&to=2026-11-22&stack=dim"]) {
      const page = chartTable((await as.manager.get(`/console/kpi?${q}`)).body as string);
      const r = await as.manager.get(`/console/kpi.csv?${q}`);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toBe("text/csv; charset=utf-8");
      const rows = csvRows(r.body as string).map((row) => row.map((c) => c.replace(/^'(?==)/, "")));
      expect(rows).toEqual(asCsv(page));
    }
    expect((await as.manager.get(`/console/kpi.csv?${Q}`)).headers.get("content-disposition")).toBe('attachment; filename="kpi-sales-2026-11-20-2026-11-22.csv"');
    // The page links to the CSV of what it shows.
    expect((await as.manager.get(`/console/kpi?${Q}&stack=dim`)).body as string).toContain(
      'href="/console/kpi.csv?metric=sales&amp;stack=dim&amp;from=2026-11-20&amp;to=2026-11-22"',
    );
  });

  test("a dimension named like a formula comes out as text", async () => {
    const body = (await as.manager.get(`/console/kpi.csv?${Q}&stack=dim`)).body as string;
    expect(body.split("\r\n")[0]).toBe(`Day,google,facebook,"'=HYPERLINK(""x"")",Total,"${PREV}"`);
  });

  test("another organization's points: never a manager's (org ignored), an admin's by choice", async () => {
    const own = (await as.manager.get(`/console/kpi.csv?${Q}&stack=dim&org=2`)).body as string;
    expect(own).not.toContain("bolt-secret");
    expect(own).toContain("google");
    const bolt = (await as.manager2.get(`/console/kpi.csv?${Q}&stack=dim`)).body as string;
    // One dimension: its part is the whole, no total column.
    expect(bolt.split("\r\n").slice(0, 4)).toEqual([`Day,bolt-secret,"${PREV}"`, "2026-11-20,,", "2026-11-21,,", "2026-11-22,777,"]);
    expect(bolt).not.toContain("google");
    expect((await as.admin.get(`/console/kpi.csv?${Q}&stack=dim&org=2`)).body as string).toBe(bolt);
  });

  test("bad input is the page's defaults, never an error", async () => {
    for (const q of ["metric=%00&from=nonsense&to=2026-13-45&stack=%ff", "stack=dim&dim=*&org=abc", "from=2026-11-22&to=2026-11-20&stack=dim&metric=sales"]) {
      const r = await as.manager.get(`/console/kpi.csv?${q}`);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    }
  });
});
