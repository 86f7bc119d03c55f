// The Calls, Number insertion, KPI and Billing pages in real Chromium: axe finds no serious or
// critical problem on any of them, each is screenshotted at 1280 and 375 px, the filters work from
// the keyboard, and the chart is an SVG with its numbers beside it.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems } from "./harness/browser";
import { ManualClock } from "./harness/clock";
import { browserSignIn, makeUser, shoot } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { provisionPools, T0 } from "./harness/dni";
import { seedWorld } from "./harness/factory";


setDefaultTimeout(60_000);
let db: TestDatabase;
let app: TestApp;
let browser: Browser;
let page: Page;
let problems: string[];
const clock = new ManualClock(T0);

beforeAll(async () => {
  db = await testDatabase();
  const sql = db.sql;
  await seedWorld(sql);
  await provisionPools(sql, [{ numbers: ["5125550101", "5125550102", "5125550103"] }]);
  // Thirty callers, each a lead whose first touch (src/dni/attribution.ts) is its call's visitor.
  await sql`
    with l as (
      insert into leads (list_id, phone, first_name, last_name, attribution)
      select 101, '51255510' || lpad(i::text, 2, '0'), 'Ann', 'Acme ' || i,
             jsonb_build_object('pool', 'acme-site', 'visitor', 'v' || i, 'source', case when i % 2 = 0 then 'google' else 'facebook' end,
                                'medium', 'cpc', 'campaign', 'spring-roofs', 'landing', 'https://acme.example/roofs/repair?utm_source=google&utm_medium=cpc')
      from generate_series(1, 30) i
      returning id, phone, attribution, substr(phone, 9)::int as i
    )
    insert into calls (lead_id, phone, to_number, status, secs, agent, occurred_at, dni_pool, utm_source, utm_medium, utm_campaign, landing, attribution)
    select l.id, l.phone, '5125550101', case when i % 4 = 0 then 'NO ANSWER' else 'ANSWERED' end, 30 * i, 'agent7',
           ${new Date(T0)}::timestamptz - i * interval '5 hours', 'acme-site', l.attribution->>'source',
           'cpc', 'spring-roofs', l.attribution->>'landing', l.attribution
    from l`;
  // Thirty days of holds (a few a day, more mid-month) and one exhausted hour.
  await sql`
    insert into dni_hold_history (pool_key, number, visitor_id, started_at, expires_at)
    select 'acme-site', '512555010' || (1 + n % 3), 0, d + (n * interval '40 minutes'), d + (n * interval '40 minutes') + interval '90 minutes'
    from generate_series(${new Date(T0 - 29 * 86_400_000)}::timestamptz, ${new Date(T0)}::timestamptz, interval '1 day') d,
         generate_series(0, (extract(day from d)::int % 5)) n`;
  await sql`insert into dni_fallbacks (pool_key, hour, visitor, served) values
    ('acme-site', '2026-11-18T15:00:00Z', 'v1', 2), ('acme-site', '2026-11-18T15:00:00Z', 'v2', 1)`;
  await sql`insert into dni_visitors (pool_key, visitor, utm_source, utm_medium, utm_campaign, first_visit_at, last_visit_at)
    select 'acme-site', 'v' || i, case when i % 2 = 0 then 'google' else 'facebook' end, 'cpc', 'spring-roofs', ${new Date(T0 - 86_400_000)}, ${new Date(T0 - 86_400_000)}
    from generate_series(1, 40) i`;
  await sql`insert into kpi_metrics (key, label) values ('leads.new', 'New leads')`;
  await sql`insert into kpi_points (org_id, metric_key, day, dim_key, value)
    select 1, 'leads.new', to_char(${new Date(T0)}::timestamptz - i * interval '1 day', 'YYYY-MM-DD'), dim, (i * 7 + length(dim)) % 23
    from generate_series(0, 29) i, unnest(array['google', 'facebook']) dim`;
  await sql`insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost) values (1, 'active', 'active', 24.37, 0.01, 0.001)`;
  await sql`insert into credit_ledger (org_id, kind, amount, balance, created_at)
    select 1, 'charge', -0.01, 25 - i * 0.01, ${new Date(T0)}::timestamptz - (61 - i) * interval '1 hour' from generate_series(1, 60) i`;
  app = await startApp(db.url, { BASE_URL: "https://leads.example" }, { clock });
  const manager = await makeUser(sql, { role: "manager", orgId: 1 });
  browser = await launchBrowser();
  const context = await browser.newContext({ bypassCSP: true, permissions: ["clipboard-read", "clipboard-write"] });
  page = await context.newPage();
  problems = pageProblems(page);
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
  });
  // Straight to Calls: the inbox is another helper's page.
  await browserSignIn(page, app.base, manager.email, manager.password, "/console/calls");
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await db?.drop();
});

async function visit(path: string, name: string): Promise<void> {
  const r = await page.goto(app.base + path);
  expect(r?.status()).toBe(200);
  expect(await axeProblems(page)).toEqual([]);
  // Narrow, too: tables and charts then scroll sideways in regions the keyboard can reach.
  await page.setViewportSize({ width: 375, height: 800 });
  expect(await axeProblems(page)).toEqual([]);
  await page.setViewportSize({ width: 1280, height: 800 });
  await shoot(page, name);
}

describe("the pages in Chromium", () => {
  test("Calls: filters by keyboard, axe-clean, screenshots", async () => {
    await visit("/console/calls", "calls");
    expect(await page.locator("table.data tbody tr").count()).toBe(30);
    await page.getByLabel("Source").fill("google");
    await page.getByLabel("Status").focus();
    await page.keyboard.type("ANSWERED");
    await page.keyboard.press("Enter");
    await page.waitForURL(/source=google/);
    // i even (google) and not a multiple of 4: 2, 6, 10, … 30.
    expect(await page.locator("table.data tbody tr").count()).toBe(8);
  }, 60_000);

  test("Number insertion: the chart, the warning, the script tag, the report", async () => {
    await visit("/console/dni", "dni");
    expect(await page.locator("figure.chart svg[role=img]").count()).toBe(1);
    expect(await page.locator("figure.chart svg title").first().textContent()).toContain("peak numbers held and fallbacks served per day");
    expect(await page.getByText("would have sufficed").count()).toBe(1);
    expect(await page.locator("code.snippet").textContent()).toBe('<script src="https://leads.example/dni.js" data-pool="acme-site" async></script>');
    await page.getByRole("button", { name: "Copy the tag" }).click();
    await page.getByText("Copied.").waitFor();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe('<script src="https://leads.example/dni.js" data-pool="acme-site" async></script>');
    await page.locator("figure.chart summary").first().click();
    expect(await page.locator("figure.chart table tbody tr").count()).toBe(31);
  }, 60_000);

  test("KPIs: the chart by day", async () => {
    await visit("/console/kpi", "kpi");
    expect(await page.locator("figure.chart rect").count()).toBeGreaterThan(20);
    await page.getByLabel("Dimension").selectOption("google");
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/dim=google/);
    expect(await axeProblems(page)).toEqual([]);
  }, 60_000);

  test("Billing: credits and the ledger", async () => {
    await visit("/console/billing", "billing");
    expect(await page.getByText("24.37").count()).toBeGreaterThan(0);
    expect(await page.locator("table.data tbody tr").count()).toBe(50);
    await page.getByRole("link", { name: "Older entries" }).click();
    expect(await page.locator("table.data tbody tr").count()).toBe(10);
  }, 60_000);

  test("nothing went wrong in the page", () => {
    // A navigation cancels what the page was still loading (the icon): not a failure of the page.
    expect(problems).toEqual([]);
  });
});
