// The booking page names the business behind the link (written into the page by the server,
// escaped) and offers the visitor's own time zone beside the calendar's, in real headless Chromium
// with the browser's zone set per context. axe-core checks the page in both zone views.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { call, startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems, SHOTS_DIR } from "./harness/browser";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

let db: TestDatabase;
let browser: Browser;
let app: TestApp;
const T0 = Date.parse("2026-11-23T12:00:00Z"); // Monday 06:00 in Chicago, 13:00 in Berlin
const clock = new ManualClock(T0);

const PHONE = { width: 375, height: 812 };
const DESKTOP = { width: 1280, height: 860 };
// Operator data that would be markup, an attribute's end or a replacement pattern if not escaped.
const EVIL = `<script>alert("x")</script> & 'Sons' $& $' <img src=x onerror=alert(1)>`;

/** Monday 5:00 PM in Chicago: Tuesday 12:00 AM in Berlin. */
const MON_5PM_CHICAGO = Date.parse("2026-11-23T23:00:00Z") / 1000;

beforeAll(async () => {
  mkdirSync(SHOTS_DIR, { recursive: true });
  db = await testDatabase();
  await seedWorld(db.sql); // org 1: name Acme, company "Acme Roofing LLC"
  await db.sql`insert into orgs (id, name, company) values (3, 'Cedar Gutters', ''), (4, 'Evil', ${EVIL}), (5, 'Spaced', '   ')`;
  // Hours to 19:00 in Chicago: the last slots of a Chicago day fall on the next day in Berlin.
  const hours = { mon: [["09:00", "19:00"]], tue: [["09:00", "19:00"]], wed: [["09:00", "19:00"]] };
  await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours)
               values (1, 1, 'Free roof estimate', 'America/Chicago', 60, 1, 60, 3, ${db.sql.json(hours)}),
                      (3, 3, 'Gutter check', 'America/Chicago', 60, 1, 60, 3, ${db.sql.json(hours)}),
                      (4, 4, 'Evil visit', 'America/Chicago', 60, 1, 60, 3, ${db.sql.json(hours)}),
                      (5, null, 'House call', 'America/Chicago', 60, 1, 60, 3, ${db.sql.json(hours)}),
                      (6, 5, 'Spaced visit', 'America/Chicago', 60, 1, 60, 3, ${db.sql.json(hours)})`;
  await db.sql`insert into calendar_links (slug, calendar_id)
               values ('acme', 1), ('cedar', 3), ('evil', 4), ('house', 5), ('spaced', 6)`;
  app = await startApp(db.url, { BASE_URL: "http://placeholder.invalid", COMMS_INBOUND_LIST_ID: "900" }, { clock });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await db?.drop();
});

async function open(
  timezoneId: string,
  path = "/book/acme",
  viewport = PHONE,
  bypassCSP = false,
): Promise<{ ctx: BrowserContext; page: Page; problems: string[] }> {
  // bypassCSP only to inject axe-core (an inline script tag, which the page's CSP rightly refuses).
  const ctx = await browser.newContext({ viewport, deviceScaleFactor: 1, locale: "en-US", timezoneId, bypassCSP });
  const page = await ctx.newPage();
  const problems = pageProblems(page);
  await page.goto(app.base + path);
  await page.locator("button.time").first().waitFor();
  return { ctx, page, problems };
}

const js = <T = unknown>(page: Page, expr: string) => page.evaluate(expr) as Promise<T>;

/** The day headings, each with its times, as shown. */
const daysShown = (page: Page) =>
  js<{ day: string; times: string[] }[]>(page, `[...document.querySelectorAll(".day")].map((d) => ({
    day: d.querySelector("h3").firstChild.textContent,
    times: [...d.querySelectorAll("button.time")].map((b) => b.firstChild.textContent),
  }))`);

async function shot(page: Page, name: string) {
  await page.screenshot({ path: join(SHOTS_DIR, `${name}.png`), fullPage: true });
}

describe("booking page: the business behind the link", () => {
  test("the company beside the calendar's name, else the org's name; nothing for a calendar of no org", async () => {
    for (const [slug, calendar, business] of [
      ["acme", "Free roof estimate", "Acme Roofing LLC"],
      ["cedar", "Gutter check", "Cedar Gutters"],
      ["spaced", "Spaced visit", "Spaced"],
      ["house", "House call", ""],
    ]) {
      const raw = await call(app.base, `/book/${slug}`);
      expect(raw.status).toBe(200);
      expect(raw.body).toContain(`<p class="business" id="business">${business}</p>`);
      const { ctx, page, problems } = await open("America/Chicago", `/book/${slug}`);
      expect(await page.locator("h1").textContent()).toBe(calendar);
      expect(await page.locator("#business").textContent()).toBe(business);
      expect(await page.locator("#business").isVisible()).toBe(business !== "");
      expect(await page.title()).toBe([calendar, business, "Book a time"].filter(Boolean).join(" · "));
      expect(problems).toEqual([]);
      await ctx.close();
    }
  }, 60_000);

  test("markup, quotes and replacement patterns in the company are shown as text, the CSP as strict as before", async () => {
    const raw = await call(app.base, "/book/evil");
    expect(raw.status).toBe(200);
    expect(raw.headers.get("content-security-policy")).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
    );
    expect(raw.body).toContain(
      `<p class="business" id="business">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;Sons&#39; $&amp; $&#39; &lt;img src=x onerror=alert(1)&gt;</p>`,
    );
    expect(raw.body).not.toContain("<script>alert");
    expect(raw.body).not.toContain("<img");
    expect(raw.body.match(/<script/g)).toHaveLength(1); // the page's own script tag, nothing else
    expect(raw.body).toEndWith("</html>\n");

    const { ctx, page, problems } = await open("America/Chicago", "/book/evil");
    expect(await page.locator("#business").textContent()).toBe(EVIL);
    expect(await js(page, "document.querySelectorAll('script').length")).toBe(1);
    expect(await js(page, "document.querySelectorAll('img').length")).toBe(0);
    await shot(page, "business-escaped-375");
    // The business is named on the confirmation too, as text.
    await page.locator("button.time").first().click();
    await page.getByLabel("Full name").fill("Pat Escape");
    await page.getByLabel("Mobile phone").fill("5125550401");
    await page.getByRole("button", { name: "Confirm booking" }).click();
    await page.getByRole("heading", { name: "You're booked" }).waitFor();
    expect(await page.locator("#done-with").textContent()).toBe(`Evil visit with ${EVIL}`);
    expect(problems).toEqual([]);
    await ctx.close();
  }, 30_000);

  test("the slots answer without a token keeps exactly its fields (the name is not added to it)", async () => {
    const r = await call(app.base, "/book/api.php?action=slots&s=acme");
    expect(Object.keys(r.body).sort()).toEqual(["name", "ok", "slots", "tz"]);
  });

  test("an unknown link is still a 404, and a known one is never cached as unknown", async () => {
    expect((await call(app.base, "/book/no-such-link")).status).toBe(404);
    expect((await call(app.base, "/book/acme")).status).toBe(200);
  });
});

describe("booking page: the visitor's own time zone", () => {
  test("Berlin visitor, Chicago calendar: both offered; Berlin times grouped by Berlin days; booking and moving keep the same instants", async () => {
    const { ctx, page, problems } = await open("Europe/Berlin", "/book/acme", DESKTOP);
    const calendarZone = page.getByRole("radio", { name: /^Central Time/ });
    const berlin = page.getByRole("radio", { name: /^Central European Time/ });
    expect(await page.locator("#zones legend").textContent()).toBe("Times shown in");
    expect(await calendarZone.isChecked()).toBe(true);
    expect(await berlin.isChecked()).toBe(false);
    expect(await page.locator("label.zone-option").allTextContents()).toEqual([
      expect.stringMatching(/^\s*Central Time Calendar's time zone \(America\/Chicago\)\s*$/),
      expect.stringMatching(/^\s*Central European Time Your time zone \(Europe\/Berlin\)\s*$/),
    ]);
    expect(await page.locator("#fact-zone").isVisible()).toBe(false);
    const chicagoDays = await daysShown(page);
    expect(chicagoDays[0]).toEqual({
      day: "Monday, November 23",
      times: ["9:00 AM", "10:00 AM", "11:00 AM", "12:00 PM", "1:00 PM", "2:00 PM", "3:00 PM", "4:00 PM", "5:00 PM", "6:00 PM"],
    });
    await shot(page, "zones-desktop-calendar");

    await berlin.check();
    expect(await page.locator("#zones input:checked").getAttribute("value")).toBe("visitor");
    const berlinDays = await daysShown(page);
    expect(berlinDays[0]).toEqual({
      day: "Monday, November 23",
      times: ["4:00 PM", "5:00 PM", "6:00 PM", "7:00 PM", "8:00 PM", "9:00 PM", "10:00 PM", "11:00 PM"],
    });
    expect(berlinDays[1].day).toBe("Tuesday, November 24");
    expect(berlinDays[1].times.slice(0, 3)).toEqual(["12:00 AM", "1:00 AM", "4:00 PM"]);
    expect(berlinDays.flatMap((d) => d.times)).toHaveLength(chicagoDays.flatMap((d) => d.times).length);
    await shot(page, "zones-desktop-visitor");

    const midnight = page.locator("section.day").nth(1).locator("button.time").first();
    expect(Number(await midnight.getAttribute("data-epoch"))).toBe(MON_5PM_CHICAGO);
    await midnight.click();
    await page.getByRole("heading", { name: "Your details" }).waitFor();
    expect(await page.locator("#chosen-time").textContent()).toBe("Tuesday, November 24, 2026 at 12:00 AM GMT+1");
    // Switching on the form rewords the chosen time; the instant stays.
    await calendarZone.check();
    expect(await page.locator("#chosen-time").textContent()).toBe("Monday, November 23, 2026 at 5:00 PM CST");
    await berlin.check();
    expect(await page.locator("#chosen-time").textContent()).toBe("Tuesday, November 24, 2026 at 12:00 AM GMT+1");
    await page.getByLabel("Full name").fill("Greta Berlin");
    await page.getByLabel("Mobile phone").fill("5125550411");
    await page.getByRole("button", { name: "Confirm booking" }).click();
    await page.getByRole("heading", { name: "You're booked" }).waitFor();
    expect(await page.locator("#done-time").textContent()).toBe("Tuesday, November 24, 2026 at 12:00 AM GMT+1");
    expect(await page.locator("#done-with").textContent()).toBe("Free roof estimate with Acme Roofing LLC");
    const [booked] = await db.sql`select id, slot_epoch from appointments where phone = '5125550411'`;
    expect(booked.slot_epoch).toBe(MON_5PM_CHICAGO);
    await shot(page, "zones-desktop-confirmed");

    // The reschedule view (a new page) keeps the choice.
    await page.getByRole("link", { name: "Change the time now" }).click();
    await page.getByRole("heading", { name: "Pick a new time" }).waitFor();
    expect(await berlin.isChecked()).toBe(true);
    expect(await page.locator("#current-time").textContent()).toBe("Tuesday, November 24, 2026 at 12:00 AM GMT+1");
    // Its own slot is full (one seat), so not offered; Tuesday in Berlin starts at 1:00 AM.
    expect(await page.locator(`button.time[data-epoch="${MON_5PM_CHICAGO}"]`).count()).toBe(0);
    const target = page.locator("section.day").nth(1).locator("button.time").nth(1); // Tuesday 4:00 PM Berlin
    expect(await target.textContent()).toBe("4:00 PM");
    const targetEpoch = Number(await target.getAttribute("data-epoch"));
    expect(targetEpoch).toBe(Date.parse("2026-11-24T15:00:00Z") / 1000);
    await target.click();
    expect(await page.locator("#move-from").textContent()).toBe("Tuesday, November 24, 2026 at 12:00 AM GMT+1");
    expect(await page.locator("#move-to").textContent()).toBe("Tuesday, November 24, 2026 at 4:00 PM GMT+1");
    await calendarZone.check();
    expect(await page.locator("#move-from").textContent()).toBe("Monday, November 23, 2026 at 5:00 PM CST");
    expect(await page.locator("#move-to").textContent()).toBe("Tuesday, November 24, 2026 at 9:00 AM CST");
    await berlin.check();
    await page.getByRole("button", { name: "Confirm new time" }).click();
    await page.getByRole("heading", { name: "Your appointment has been moved" }).waitFor();
    expect(await page.locator("#done-time").textContent()).toBe("Tuesday, November 24, 2026 at 4:00 PM GMT+1");
    await calendarZone.check();
    expect(await page.locator("#done-time").textContent()).toBe("Tuesday, November 24, 2026 at 9:00 AM CST");
    const [moved] = await db.sql`select slot_epoch from appointments where id = ${booked.id}`;
    expect(moved.slot_epoch).toBe(targetEpoch);
    expect(problems).toEqual([]);
    await ctx.close();
  }, 60_000);

  test("a visitor in the calendar's own zone (by any of its names) sees one zone and no choice", async () => {
    for (const zone of ["America/Chicago", "US/Central"]) {
      const { ctx, page, problems } = await open(zone);
      expect(await page.locator("#zones").isVisible()).toBe(false);
      expect(await page.getByRole("radio").count()).toBe(0);
      expect(await page.locator("#fact-zone").isVisible()).toBe(true);
      expect(await page.locator("#zone").textContent()).toBe("Times are in Central Time (America/Chicago)");
      expect((await daysShown(page))[0].times[0]).toBe("9:00 AM");
      if (zone === "America/Chicago") await shot(page, "zones-375-one");
      expect(problems).toEqual([]);
      await ctx.close();
    }
  }, 30_000);

  test("a choice of the visitor's zone kept from before shows the calendar's zone alone when they now agree", async () => {
    const ctx = await browser.newContext({ viewport: PHONE, locale: "en-US", timezoneId: "America/Chicago" });
    await ctx.addInitScript("localStorage.setItem('leadline.book.zone', 'visitor')");
    const page = await ctx.newPage();
    await page.goto(app.base + "/book/acme");
    await page.locator("button.time").first().waitFor();
    expect(await page.locator("#zones").isVisible()).toBe(false);
    expect((await daysShown(page))[0].times[0]).toBe("9:00 AM");
    await ctx.close();
  }, 30_000);

  test("keyboard: the zone choice is one tab stop before the times, arrows switch it, focus is visible", async () => {
    const { ctx, page, problems } = await open("Europe/Berlin");
    await page.keyboard.press("Tab"); // skip link
    await page.keyboard.press("Tab");
    expect(await js(page, "document.activeElement?.id")).toBe("zone-calendar");
    expect(await js(page, "getComputedStyle(document.activeElement).outlineStyle")).toBe("solid");
    await page.keyboard.press("ArrowDown");
    expect(await js(page, "document.activeElement?.id")).toBe("zone-visitor");
    expect(await js(page, "document.getElementById('zone-visitor').checked")).toBe(true);
    expect((await daysShown(page))[0].times[0]).toBe("4:00 PM");
    await page.keyboard.press("Tab");
    expect(await js(page, "document.activeElement?.className")).toBe("time");
    expect(await js(page, "document.activeElement?.textContent")).toBe("4:00 PM");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Your details" }).waitFor();
    expect(await page.locator("#chosen-time").textContent()).toBe("Monday, November 23, 2026 at 4:00 PM GMT+1");
    expect(problems).toEqual([]);
    await ctx.close();
  }, 30_000);

  test("axe-core: no serious or critical violation in either zone view, at phone and desktop widths", async () => {
    for (const [viewport, width] of [[PHONE, 375], [DESKTOP, 1280]] as const) {
      const { ctx, page, problems } = await open("Europe/Berlin", "/book/acme", viewport, true);
      expect(await axeProblems(page)).toEqual([]);
      await shot(page, `zones-${width}-calendar`);
      await page.getByRole("radio", { name: /^Central European Time/ }).check();
      expect(await axeProblems(page)).toEqual([]);
      const { scroll, client } = await js<{ scroll: number; client: number }>(page, "({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })");
      expect(scroll).toBeLessThanOrEqual(client);
      await shot(page, `zones-${width}-visitor`);
      await page.locator("button.time").first().click();
      await page.getByRole("heading", { name: "Your details" }).waitFor();
      expect(await axeProblems(page)).toEqual([]);
      await shot(page, `zones-${width}-form`);
      expect(problems).toEqual([]);
      await ctx.close();
    }
  }, 60_000);
});
