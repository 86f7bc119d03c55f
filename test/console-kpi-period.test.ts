// The KPI page's periods (issue 30): the default range ends at the later of the organization's
// today and the server's date (a point ingested without `day` is stored under the server's, so an
// organization whose zone is behind must still see it), presets of today / 7 / 30 / 90 days, the
// previous period of the same length beside the current, and the organization's labels; over HTTP on
// the served app with a session, across two organizations.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { localDay } from "../src/kpi/service";
import { setKpiLabel } from "../src/kpi/labels";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);
let db: TestDatabase;
let app: TestApp;
// 23:30 in Honolulu on Nov 22 is 09:30 UTC on Nov 23: the server's date (whatever its zone, short of
// UTC-10 or further west) is the 23rd while the organization's is still the 22nd.
const NOW = Date.UTC(2026, 10, 23, 9, 30);
const clock = new ManualClock(NOW);
const as: Record<"admin" | "manager" | "manager2", ConsoleClient> = {} as never;
let acmeKey = "";

const totals = (body: string) => [...(/<dl class="totals" id="kpi-totals">([\s\S]*?)<\/dl>/.exec(body)?.[1] ?? "").matchAll(/<dt>([^<]*)<\/dt><dd>([^<]*)<\/dd>/g)].map((m) => [m[1], m[2]]);

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await db.sql`update orgs set timezone = 'Pacific/Honolulu' where id = 1`;
  await db.sql`insert into kpi_metrics (key, label) values ('acme.sales', 'acme.sales'), ('bolt.sales', 'bolt.sales')`;
  // Organization 1: 1 a day from Nov 1 to Nov 22; organization 2: 1,000 on Nov 22.
  await db.sql`insert into kpi_points (org_id, metric_key, day, dim_key, value)
    select 1, 'acme.sales', d::date, '', 1 from generate_series(timestamp '2026-11-01', timestamp '2026-11-22', interval '1 day') d`;
  await db.sql`insert into kpi_points (org_id, metric_key, day, dim_key, value) values (2, 'bolt.sales', '2026-11-22', '', 1000), (2, 'acme.sales', '2026-11-22', '', 5000)`;
  acmeKey = (await makeKey(db.sql, { scopes: ["metrics:write"], org: 1 })).key;
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

describe("KPI periods", () => {
  test("a point ingested now without a day is in the default range of an organization behind the server", async () => {
    const server = localDay(new Date(NOW));
    expect(server).toBe("2026-11-23");
    const r = await call(app.base, "/hooks/kpi_ingest.php", { method: "POST", key: acmeKey, json: { metric_key: "acme.sales", value: 40 } });
    expect(r.status).toBe(200);
    const body = (await as.manager.get("/console/kpi?metric=acme.sales")).body as string;
    // 30 days ending on the server's date: Nov 1-22 (22) and the point just ingested (40).
    expect(totals(body)).toEqual([
      ["2026-10-25 to 2026-11-23", "62"],
      ["Previous period, 2026-09-25 to 2026-10-24", "0"],
    ]);
    expect(body).toContain('<th scope="row">2026-11-23</th><td class="num">40</td>');
    await db.sql`delete from kpi_points where org_id = 1 and day = '2026-11-23'`;
  });

  test("presets: today, 7, 30 and 90 days, each with the previous period of its length", async () => {
    const at = async (preset: string) => totals((await as.manager.get(`/console/kpi?metric=acme.sales&preset=${preset}`)).body as string);
    expect(await at("today")).toEqual([["2026-11-23 to 2026-11-23", "0"], ["Previous period, 2026-11-22 to 2026-11-22", "1"]]);
    expect(await at("7")).toEqual([["2026-11-17 to 2026-11-23", "6"], ["Previous period, 2026-11-10 to 2026-11-16", "7"]]);
    expect(await at("90")).toEqual([["2026-08-26 to 2026-11-23", "22"], ["Previous period, 2026-05-28 to 2026-08-25", "0"]]);
    // An unknown preset is the default 30 days; from/to win over a preset.
    expect((await at("nonsense"))[0][0]).toBe("2026-10-25 to 2026-11-23");
    const range = totals((await as.manager.get("/console/kpi?metric=acme.sales&preset=7&from=2026-11-20&to=2026-11-22")).body as string);
    expect(range).toEqual([["2026-11-20 to 2026-11-22", "3"], ["Previous period, 2026-11-17 to 2026-11-19", "3"]]);
    const page = (await as.manager.get("/console/kpi?metric=acme.sales&preset=7")).body as string;
    expect(page).toContain('href="/console/kpi?metric=acme.sales&amp;preset=90"');
    expect(page).toMatch(/<a href="[^"]*preset=7" aria-current="true">7 days<\/a>/);
    // The previous period's numbers are in the chart's table beside the current ones.
    expect(page).toContain('<th scope="row">2026-11-22</th><td class="num">1</td><td class="num">1</td>');
  });

  test("the organization's labels; another organization's points and labels never show", async () => {
    expect(await setKpiLabel(db.sql, { orgId: 1, type: "user", id: "m", agent: null, keyId: null }, { metric: "acme.sales", label: "Sales closed" }, new Date(NOW))).toMatchObject({ ok: true });
    const own = (await as.manager.get("/console/kpi?metric=acme.sales&preset=today")).body as string;
    expect(own).toContain(">Sales closed</option>");
    expect(own).not.toContain("bolt.sales");
    expect(own).not.toContain("5,000");
    const other = (await as.manager2.get("/console/kpi?metric=acme.sales&from=2026-11-22&to=2026-11-22")).body as string;
    expect(other).not.toContain("Sales closed");
    expect(totals(other)[0]).toEqual(["2026-11-22 to 2026-11-22", "5,000"]);
    const admin = (await as.admin.get("/console/kpi?org=1&metric=acme.sales&from=2026-11-22&to=2026-11-22")).body as string;
    expect(admin).toContain(">Sales closed</option>");
    expect(totals(admin)[0]).toEqual(["2026-11-22 to 2026-11-22", "1"]);
  });

  test("the label form: a manager labels their organization's metric; CSRF needed; bad labels change nothing", async () => {
    const saved = await as.manager2.post("/console/kpi/labels", { metric: "bolt.sales", label: "Bolt revenue", org: "1" });
    expect(saved.status).toBe(303);
    expect(saved.headers.get("location")).toBe("/console/kpi?metric=bolt.sales");
    expect((await as.manager2.get("/console/kpi?metric=bolt.sales")).body as string).toContain(">Bolt revenue</option>");
    const [row] = await db.sql`select org_id from kpi_labels where metric_key = 'bolt.sales'`;
    expect(row.org_id).toBe(2);
    expect((await as.manager2.post("/console/kpi/labels", { metric: "bolt.sales", label: "x".repeat(81) })).status).toBe(303);
    expect((await as.manager2.post("/console/kpi/labels", { metric: "bolt.sales", label: "Forged", _csrf: "wrong" })).status).toBe(403);
    const [after] = await db.sql`select label from kpi_labels where metric_key = 'bolt.sales'`;
    expect(after.label).toBe("Bolt revenue");
  });
});
