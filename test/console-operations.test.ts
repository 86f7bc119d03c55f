// The console's appointments, webhooks, keys and audit-log pages in real headless Chromium: cancel
// an appointment and see its seat offered again on the booking page, replay a failed delivery to
// a real receiver, create a key and see its plaintext once; axe on every page, no horizontal
// scroll at 375 px, screenshots at 1280 and 375 px (SHOTS_DIR/console-*.png) for a person to look at.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { call, startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems } from "./harness/browser";
import { ManualClock } from "./harness/clock";
import { browserSignIn, makeUser, shoot, type MadeUser } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, makeLead, seedWorld } from "./harness/factory";
import { WebhookReceiver } from "./harness/webhook-receiver";

setDefaultTimeout(120_000);

let db: TestDatabase;
let app: TestApp;
let browser: Browser;
let rx: WebhookReceiver;
let manager: MadeUser;
const T0 = Date.parse("2026-11-23T12:00:00Z"); // Monday 06:00 in Chicago
const clock = new ManualClock(T0);
const secret = "whsec_" + Buffer.from("0123456789abcdef0123456789abcdef").toString("base64");
let failed = { delivery: 0, event: 0 };

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await db.sql`update orgs set timezone = 'America/Chicago' where id = 1`;
  const hours = { mon: [["09:00", "17:00"]], tue: [["09:00", "17:00"]], wed: [["09:00", "17:00"]], thu: [["09:00", "17:00"]], fri: [["09:00", "17:00"]] };
  await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours)
               values (1, 1, 'Free roof estimate', 'America/Chicago', 30, 1, 60, 7, ${db.sql.json(hours)})`;
  await db.sql`insert into calendar_links (slug, calendar_id) values ('acme-estimate', 1)`;
  rx = await WebhookReceiver.start();
  rx.respond({ status: 200, body: "thanks" });
  await db.sql`insert into webhooks (id, org_id, url, secret, events) values (1, 1, ${rx.url("/acme")}, ${secret}, '{lead.created}'),
                                                                             (2, 1, ${rx.url("/gone")}, ${secret}, '{*}')`;
  await db.sql`update webhooks set disabled_at = now(), disabled_reason = 'HTTP 410 Gone from delivery 1' where id = 2`;
  // A delivery whose attempts all failed (the endpoint was down), left for an operator.
  const payload = { type: "lead.created", timestamp: "2026-11-23T11:00:00.000Z", data: { lead_id: 1, list_id: 101, campaign: "ACME", org_id: 1, phone: "5125550100", source: "web", created_at: "2026-11-23T11:00:00.000Z" } };
  const [e] = await db.sql`insert into outbox_events (org_id, type, payload, dispatched_at) values (1, 'lead.created', ${db.sql.json(payload)}, now()) returning id`;
  const [d] = await db.sql`insert into webhook_deliveries (event_id, webhook_id, status, attempts, last_status, last_error, updated_at)
                           values (${e.id}, 1, 'failed', 3, 503, 'HTTP 503', now()) returning id`;
  await db.sql`insert into webhook_attempts (delivery_id, trigger, started_at, finished_at, duration_ms, address, status, error, response)
               select ${d.id}, 'schedule', now(), now(), 40 + i, '127.0.0.1', 503, 'HTTP 503', 'Service Unavailable: upstream maintenance window'
               from generate_series(1, 3) i`;
  failed = { delivery: d.id, event: e.id };
  await makeKey(db.sql, { scopes: ["leads:read", "leads:write"], org: 1, name: "Website forms" });
  app = await startApp(db.url, { BASE_URL: "http://placeholder.invalid", COMMS_INBOUND_LIST_ID: "101", WEBHOOK_ALLOW_PRIVATE: "true" }, { clock });
  manager = await makeUser(db.sql, { role: "manager", orgId: 1, name: "Maria Manager" });
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await rx?.stop();
  await db?.drop();
});

async function context(): Promise<BrowserContext> {
  return browser.newContext({ viewport: { width: 1280, height: 860 }, deviceScaleFactor: 1, locale: "en-US", timezoneId: "America/New_York" });
}

/** A signed-in manager's page at `path`, with everything it reports as going wrong collected. */
async function consolePage(path: string): Promise<{ ctx: BrowserContext; page: Page; problems: string[] }> {
  // axe is injected as a script tag, which the console's CSP would refuse.
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 }, deviceScaleFactor: 1, locale: "en-US", timezoneId: "America/New_York", bypassCSP: true });
  const page = await ctx.newPage();
  const problems = pageProblems(page);
  // The confirmations (data-confirm) a person would accept.
  page.on("dialog", (d) => void d.accept());
  await browserSignIn(page, app.base, manager.email, manager.password, path);
  return { ctx, page, problems };
}

/** axe finds nothing serious, nothing overflows the page at 375 px, and the screenshots are taken. */
async function check(page: Page, name: string) {
  expect(await axeProblems(page)).toEqual([]);
  await page.setViewportSize({ width: 375, height: 812 });
  const { scroll, client } = (await page.evaluate("({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })")) as { scroll: number; client: number };
  expect(scroll).toBeLessThanOrEqual(client);
  expect(await axeProblems(page)).toEqual([]);
  await page.setViewportSize({ width: 1280, height: 860 });
  await shoot(page, name);
}

describe("appointments", () => {
  test("book on the booking page, cancel in the console, and the seat is offered again on the booking page", async () => {
    const visitor = await context();
    const booking = await visitor.newPage();
    await booking.goto(`${app.base}/book/acme-estimate`);
    const first = booking.locator("button.time").first();
    await first.waitFor();
    const epoch = Number(await first.getAttribute("data-epoch"));
    expect(await first.textContent()).toBe("9:00 AM");
    await first.click();
    await booking.getByLabel("Full name").fill("Jane Public");
    await booking.getByLabel("Mobile phone").fill("(512) 555-0142");
    await booking.getByRole("button", { name: "Confirm booking" }).click();
    await booking.getByRole("heading", { name: "You're booked" }).waitFor();
    await visitor.close();

    const next = await context();
    const taken = await next.newPage();
    await taken.goto(`${app.base}/book/acme-estimate`);
    await taken.locator("button.time").first().waitFor();
    expect(await taken.locator(`button.time[data-epoch="${epoch}"]`).count()).toBe(0);
    await next.close();

    const { ctx, page, problems } = await consolePage("/console/appointments");
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Appointments");
    const row = page.locator("tr", { hasText: "Jane Public" });
    expect(await row.locator(".badge").textContent()).toBe("Pending");
    await check(page, "appointments");
    await Promise.all([page.waitForURL(/done=cancel/), row.getByRole("button", { name: /^Cancel: Jane Public/ }).click()]);
    expect(await page.getByRole("status").first().textContent()).toContain("Appointment cancelled");
    expect(await page.locator("tr", { hasText: "Jane Public" }).locator(".badge").textContent()).toBe("Cancelled");
    await check(page, "appointments-cancelled");
    expect(problems).toEqual([]);
    await ctx.close();

    const later = await context();
    const again = await later.newPage();
    await again.goto(`${app.base}/book/acme-estimate`);
    await again.locator("button.time").first().waitFor();
    expect(await again.locator("button.time").first().getAttribute("data-epoch")).toBe(String(epoch));
    expect(await again.locator("button.time").first().textContent()).toBe("9:00 AM");
    await later.close();
  });
});

describe("webhooks", () => {
  test("a failed delivery, its attempts, and a replay delivered to the receiver", async () => {
    const { ctx, page, problems } = await consolePage("/console/webhooks");
    expect(await page.locator("tr", { hasText: rx.url("/gone") }).locator(".badge").first().textContent()).toBe("Disabled");
    await check(page, "webhooks");
    await Promise.all([page.waitForURL(/\/console\/webhooks\/1$/), page.getByRole("link", { name: rx.url("/acme") }).click()]);
    const row = page.locator("tr", { hasText: `evt_${failed.event}` });
    expect(await row.locator(".badge").textContent()).toBe("failed");
    await Promise.all([page.waitForURL(/delivery=/), row.getByRole("link", { name: `Attempts of delivery ${failed.delivery}` }).click()]);
    expect(await page.locator("#attempts tbody tr").count()).toBe(3);
    await check(page, "webhook-attempts");
    rx.clear();
    await Promise.all([page.waitForURL(/done=replayed/), page.getByRole("button", { name: `Replay delivery ${failed.delivery}` }).click()]);
    expect(rx.at("/acme")).toHaveLength(1);
    expect(rx.at("/acme")[0].headers["webhook-id"]).toBe(`evt_${failed.event}`);
    expect(await page.getByRole("status").first().textContent()).toContain("Delivery replayed");
    expect(await page.locator("tr", { hasText: `evt_${failed.event}` }).locator(".badge").textContent()).toBe("delivered");
    const attempts = page.locator("#attempts tbody tr");
    expect(await attempts.count()).toBe(4);
    expect(await attempts.last().textContent()).toContain("replay");
    expect(await attempts.last().textContent()).toContain("HTTP 200");
    await check(page, "webhook-replayed");
    expect(problems).toEqual([]);
    await ctx.close();
  });
});

describe("keys", () => {
  test("create a key: its plaintext shown once, and it works", async () => {
    const { ctx, page, problems } = await consolePage("/console/keys");
    await check(page, "keys");
    await page.getByLabel("Name").fill("Zapier");
    await page.getByRole("checkbox", { name: /leads:read/ }).check();
    await Promise.all([page.waitForLoadState("load"), page.getByRole("button", { name: "Create key" }).click()]);
    const key = (await page.locator("pre.secret code").textContent())!;
    expect(key).toMatch(/^lk_[A-Za-z0-9_-]{43}$/);
    expect(await page.getByRole("heading", { level: 2, name: /^Key \d+ created$/ }).count()).toBe(1);
    await check(page, "keys-created");
    const lead = await makeLead(db.sql, { phone: "5125550177" });
    expect((await call(app.base, `/hooks/api_v1.php?r=leads/${lead}`, { key })).status).toBe(200);
    // Never again: the list shows its prefix only, and going back does not show it either.
    await page.goto(`${app.base}/console/keys`);
    expect(await page.content()).not.toContain(key);
    expect(await page.locator("tr", { hasText: "Zapier" }).textContent()).toContain(key.slice(0, 7));
    expect(problems).toEqual([]);
    // Back to the answer of the POST: not kept (no-store), so not shown again.
    await page.goBack().catch(() => null);
    expect(await page.content()).not.toContain(key);
    await ctx.close();
  });
});

describe("audit log", () => {
  test("the changes above, newest first", async () => {
    const { ctx, page, problems } = await consolePage("/console/audit");
    const actions = await page.locator("tbody tr td:nth-child(3) code").allTextContents();
    expect(actions.filter((a) => !a.startsWith("session."))).toEqual(["key.create", "webhook.replay", "appointment.cancel"]);
    await check(page, "audit");
    expect(problems).toEqual([]);
    await ctx.close();
  });
});
