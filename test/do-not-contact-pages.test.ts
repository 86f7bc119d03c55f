// The pages people see of issue 31's do-not-contact work, in headless Chromium: an email's
// unsubscribe page (confirm, then done, by its button) and the console's lead page with the
// do-not-contact card and the dial outside calling hours. axe-core finds nothing serious or
// critical; screenshots at 1280 and 390 px go to SHOTS_DIR (dnc-*.png) to be looked at.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { unsubscribeToken } from "../src/messages/unsubscribe";
import { startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems, SHOTS_DIR } from "./harness/browser";
import { ManualClock } from "./harness/clock";
import { browserSignIn, makeUser } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

let db: TestDatabase;
let app: TestApp;
let browser: Browser;
// 06:30 in Chicago on 2026-01-15: outside calling hours for a Texas lead.
const clock = new ManualClock(Date.parse("2026-01-15T12:30:00Z"));

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await db.sql`update orgs set company = 'Acme Roofing LLC' where id = 1`;
  app = await startApp(db.url, {}, { clock });
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await db?.drop();
});

async function shots(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS_DIR, { recursive: true });
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 800 });
    await page.screenshot({ path: join(SHOTS_DIR, `dnc-${name}-${width}.png`), fullPage: true });
  }
}

async function lead(phone: string, email: string): Promise<number> {
  const [row] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, last_name, email, state) values (101, ${phone}, 'Rita', 'Moreno', ${email}, 'TX') returning id`;
  return row.id;
}

describe("the unsubscribe page", () => {
  test("confirm, then done by its button: no script, accessible, at both widths; the address is opted out", async () => {
    const id = await lead("5125560001", "rita@example.com");
    const [m] = await db.sql<{ id: number }[]>`
      insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, subject, body, status, meta)
      values (${id}, 1, 'email', 'out', 'api_key', '1', 'News', '<p>Hi</p>', 'sent', ${db.sql.json({ to: "rita@example.com" })}) returning id`;
    const path = `/unsubscribe/${unsubscribeToken(app.running.deps.unsubscribeKey, m.id)}`;
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: "en-US", bypassCSP: true });
    const page = await ctx.newPage();
    const problems = pageProblems(page);
    await page.goto(app.base + path);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Unsubscribe");
    expect(await axeProblems(page)).toEqual([]);
    await shots(page, "unsubscribe-confirm");
    expect([...(await db.sql`select consent from lead_channels where lead_id = ${id} and channel = 'email'`)]).toEqual([]);
    await Promise.all([page.waitForURL(app.base + path), page.getByRole("button", { name: "Unsubscribe" }).click()]);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("You are unsubscribed");
    expect(await axeProblems(page)).toEqual([]);
    await shots(page, "unsubscribe-done");
    expect([...(await db.sql`select consent, consent_source from lead_channels where lead_id = ${id} and channel = 'email'`)]).toEqual([
      { consent: "out", consent_source: "unsubscribe_link" },
    ]);
    expect(problems).toEqual([]);
    await ctx.close();
  });
});

describe("the console's lead page", () => {
  test("the do-not-contact card and the dial outside calling hours, keyboard-reachable and accessible at both widths", async () => {
    const id = await lead("5125560002", "rita2@example.com");
    await db.sql`insert into do_not_contact (org_id, kind, address, source, note, added_at) values (1, 'phone', '5125560002', 'cli', 'asked on a call', ${new Date(clock.now())})`;
    const user = await makeUser(db.sql, { role: "agent", orgId: 1, id: "agent7" });
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "en-US", timezoneId: "America/Chicago", bypassCSP: true });
    const page = await ctx.newPage();
    const problems = pageProblems(page);
    await browserSignIn(page, app.base, user.email, user.password, `/console/leads/${id}`);
    await expect(page.locator("#dnc-status").textContent()).resolves.toContain("Do not contact");
    await expect(page.locator("#lead-local-time").textContent()).resolves.toContain("Outside calling hours");
    // The confirmation is a real, labelled, required checkbox: the browser will not send the form without it.
    const confirm = page.getByLabel(/Call outside the lead's calling hours/);
    expect(await confirm.getAttribute("required")).not.toBeNull();
    expect(await axeProblems(page)).toEqual([]);
    await shots(page, "lead");
    await confirm.check();
    await Promise.all([page.waitForURL(/done=dial_queued/), page.getByRole("button", { name: "Queue dial" }).click()]);
    expect((await db.sql`select count(*)::int as n from dials where lead_id = ${id}`)[0].n).toBe(1);
    expect(problems).toEqual([]);
    await ctx.close();
  });
});
