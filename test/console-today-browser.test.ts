// The Today page in Chromium: a manager signing in lands on it, it has no serious or critical
// axe-core violation, and it reads at 1280 and 390 px (screenshots in SHOTS_DIR: console-today-*.png).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems } from "./harness/browser";
import { ManualClock } from "./harness/clock";
import { browserSignIn, makeUser, shoot } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);
let db: TestDatabase;
let app: TestApp;
let browser: Browser;
let page: Page;
let problems: string[];
const clock = new ManualClock(Date.UTC(2026, 10, 23, 20));

beforeAll(async () => {
  db = await testDatabase();
  const sql = db.sql;
  await seedWorld(sql);
  await sql`update orgs set timezone = 'America/New_York'`;
  // Three days of leads, calls and replies for organization 1.
  for (const [day, n] of [["2026-11-16", 9], ["2026-11-22", 5], ["2026-11-23", 12]] as const) {
    const leads = await sql<{ id: number }[]>`
      insert into leads (list_id, phone, source, created_at)
      select 101, '512' || lpad((${Number(day.slice(8))} * 1000 + i)::text, 7, '0'), (array['google', 'facebook', ''])[1 + i % 3],
             ${`${day}T14:00:00Z`}::timestamptz + i * interval '7 minutes'
      from generate_series(1, ${n}) i returning id`;
    for (const [i, l] of leads.entries()) {
      await sql`insert into calls (lead_id, phone, status, secs, agent, occurred_at)
        values (${l.id}, '5125550000', ${i % 3 ? "ANSWERED" : "NO ANSWER"}, ${i % 3 ? 60 + i * 30 : 0}, 'agent7', ${`${day}T15:00:00Z`}::timestamptz + ${i} * interval '9 minutes')`;
    }
  }
  app = await startApp(db.url, { BASE_URL: "https://leads.example" }, { clock });
  const manager = await makeUser(sql, { role: "manager", orgId: 1, name: "Mia Manager" });
  await makeUser(sql, { role: "agent", orgId: 1, id: "agent7", name: "Ada Agent" });
  browser = await launchBrowser();
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "en-US", timezoneId: "America/New_York", bypassCSP: true });
  page = await ctx.newPage();
  problems = pageProblems(page);
  await browserSignIn(page, app.base, manager.email, manager.password, "/console");
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await db?.drop();
});

describe("Today in Chromium", () => {
  test("a manager lands on Today; the figures, chart and people; no serious axe problem at either width", async () => {
    expect(new URL(page.url()).pathname).toBe("/console/today");
    expect(await page.getByRole("heading", { name: "Today", level: 1 }).count()).toBe(1);
    expect(await page.locator("#today-figures tbody tr").first().locator("td").allTextContents()).toEqual(["12", "5", "9"]);
    expect(await page.locator("figure.chart svg[role=img]").count()).toBe(1);
    expect(await page.locator("#today-agents").getByText("Ada Agent").count()).toBe(1);
    await shoot(page, "today", [1280, 390]);
    expect(await axeProblems(page)).toEqual([]);
    await page.setViewportSize({ width: 390, height: 800 });
    expect(await axeProblems(page)).toEqual([]);
    expect(problems).toEqual([]);
  });

  test("the organization's today refreshes its figures every minute, as polls, not while the focus is in them; another day does not", async () => {
    // The page's own timers on Playwright's clock (time flows; runFor fires a minute's at once),
    // under the console's real CSP.
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "en-US", timezoneId: "America/New_York" });
    await ctx.addCookies(await page.context().cookies());
    const p = await ctx.newPage();
    const seen = pageProblems(p);
    await p.clock.install();
    await p.goto(`${app.base}/console/today`);
    await p.waitForFunction(() => typeof (globalThis as unknown as { htmx?: unknown }).htmx === "object");
    const newLeads = () => p.locator("#today-figures tbody tr").first().locator("td").first().textContent();
    expect(await newLeads()).toBe("12");
    expect(await p.locator("#today-as-of").textContent()).toBe("As of 3:00 PM; the figures refresh every minute.");
    await db.sql`insert into leads (list_id, phone, source, created_at) values (101, '5125559001', 'google', ${new Date(clock.now())})`;
    clock.advance(60_000);
    const polled = p.waitForResponse((r) => new URL(r.url()).pathname === "/console/today" && r.request().headers()["x-leadline-poll"] === "1");
    await p.clock.runFor(60_000);
    expect((await polled).status()).toBe(200);
    // A function, not a string: the console's CSP refuses eval.
    type Doc = { document: { querySelector(s: string): { textContent: string | null } | null } };
    await p.waitForFunction(() => (globalThis as unknown as Doc).document.querySelector("#today-figures tbody td")?.textContent === "13");
    expect(await p.locator("#today-as-of").textContent()).toBe("As of 3:01 PM; the figures refresh every minute.");
    // A keyboard user in the figures' table: the next minute asks nothing.
    let asked = 0;
    p.on("request", (r) => void (new URL(r.url()).pathname === "/console/today" && asked++));
    await p.getByRole("region", { name: "The day's figures" }).focus();
    await p.clock.runFor(60_000);
    await p.waitForTimeout(500);
    expect(asked).toBe(0);
    await shoot(p, "today-live", [1280, 390]);
    // Another day is settled: no refresher, no script.
    await p.goto(`${app.base}/console/today?day=2026-11-22`);
    expect(await p.locator("#today-refresh").count()).toBe(0);
    expect(await p.locator("#today-as-of").count()).toBe(0);
    await p.clock.runFor(120_000);
    await p.waitForTimeout(500);
    expect(asked).toBe(1);
    expect(seen).toEqual([]);
    await ctx.close();
  });
});
