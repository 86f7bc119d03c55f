// The KPI page's stacked chart and the leads list's Source column and filter in real Chromium:
// axe finds no serious or critical problem at 1280 and 390 px, the choices work from the keyboard,
// and each is screenshotted at both widths (console-kpi-stacked-*.png, console-leads-source-*.png).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems } from "./harness/browser";
import { ManualClock } from "./harness/clock";
import { browserSignIn, makeUser, shoot } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);
const WIDTHS = [1280, 390] as const;
let db: TestDatabase;
let app: TestApp;
let browser: Browser;
let page: Page;
let problems: string[];
const clock = new ManualClock(Date.UTC(2026, 10, 23, 17));

beforeAll(async () => {
  db = await testDatabase();
  const sql = db.sql;
  await seedWorld(sql);
  await sql`insert into kpi_metrics (key, label) values ('leads.new', 'New leads')`;
  // 30 days of five dimensions (six: the seventh-and-later rule is proven over HTTP).
  await sql`insert into kpi_points (org_id, metric_key, day, dim_key, value)
    select 1, 'leads.new', to_char(timestamptz '2026-11-23T12:00:00Z' - i * interval '1 day', 'YYYY-MM-DD'), dim, 1 + (i * 7 + length(dim) * 3) % 13
    from generate_series(0, 29) i, unnest(array['google', 'facebook', 'bing', 'referral', 'walk-in']) dim`;
  await sql`insert into leads (list_id, phone, first_name, last_name, source, attribution, created_at)
    select 101, '51255560' || lpad(i::text, 2, '0'), 'Ann', 'Lead ' || i, (array['web', 'vendor-a', 'console', ''])[1 + i % 4],
           case when i % 3 = 0 then jsonb_build_object('pool', 'acme-site', 'visitor', 'v' || i, 'source', 'google', 'medium', 'cpc') end,
           timestamptz '2026-11-23T12:00:00Z' - i * interval '1 hour'
    from generate_series(1, 40) i`;
  app = await startApp(db.url, { BASE_URL: "https://leads.example" }, { clock });
  const manager = await makeUser(sql, { role: "manager", orgId: 1 });
  browser = await launchBrowser();
  page = await (await browser.newContext({ bypassCSP: true })).newPage();
  problems = pageProblems(page);
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
  });
  await browserSignIn(page, app.base, manager.email, manager.password, "/console/leads");
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await db?.drop();
});

async function axeAtBothWidths(): Promise<void> {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 800 });
    expect(await axeProblems(page)).toEqual([]);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}

describe("in Chromium", () => {
  test("KPIs stacked by dimension, chosen from the keyboard: parts, legend in words, the numbers", async () => {
    expect((await page.goto(`${app.base}/console/kpi?metric=leads.new`))?.status()).toBe(200);
    await page.getByLabel("Bars").focus();
    await page.keyboard.press("ArrowDown");
    await page.getByRole("button", { name: "Show" }).focus();
    await page.keyboard.press("Enter");
    await page.waitForURL(/stack=dim/);
    expect(await page.locator("figure.chart svg[role=img]").count()).toBe(1);
    expect(await page.locator("#kpi-chart-title").textContent()).toContain("by day and dimension");
    // Five dimensions' parts over 30 days (each a rect with its title), and the legend names them.
    expect(await page.locator("figure.chart svg rect").count()).toBe(150);
    expect(await page.locator(".chart-legend li").allTextContents()).toContain("walk-in");
    await page.locator("figure.chart summary").click();
    expect(await page.locator("figure.chart table thead th").allTextContents()).toContain("Total");
    await axeAtBothWidths();
    await shoot(page, "kpi-stacked", WIDTHS);
  }, 60_000);

  test("the leads list's Source column and filter", async () => {
    expect((await page.goto(`${app.base}/console/leads`))?.status()).toBe(200);
    expect(await page.locator("table.leads-table thead th").allTextContents()).toContain("Source");
    expect(await page.getByText("first touch: google / cpc").count()).toBeGreaterThan(0);
    await page.getByLabel("Source").selectOption("vendor-a");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/source=vendor-a/);
    expect(await page.locator("table.leads-table tbody tr").count()).toBe(10);
    await axeAtBothWidths();
    await shoot(page, "leads-source", WIDTHS);
  }, 60_000);

  test("nothing went wrong in the page", () => {
    expect(problems).toEqual([]);
  });
});
