// The booking page in real headless Chromium: book by clicking, the slot gone for the next visitor,
// reschedule through the link, the calendar file, a friendly 404; no console errors, no horizontal
// scroll at 375 px; screenshots at phone and desktop widths (SHOTS_DIR) for a person to look at.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";
import { axeProblems, launchBrowser, pageProblems, serveSite, SHOTS_DIR } from "./harness/browser";

let db: TestDatabase;
let browser: Browser;
let app: TestApp;
let base: string;
const T0 = Date.parse("2026-11-23T12:00:00Z"); // Monday 06:00 in Chicago
const clock = new ManualClock(T0);

const PHONE = { width: 375, height: 812 };
const DESKTOP = { width: 1280, height: 860 };

beforeAll(async () => {
  mkdirSync(SHOTS_DIR, { recursive: true });
  db = await testDatabase();
  await seedWorld(db.sql);
  const hours = { mon: [["09:00", "17:00"]], tue: [["09:00", "12:00"], ["13:00", "17:00"]], wed: [["09:00", "17:00"]], thu: [["09:00", "17:00"]], fri: [["09:00", "15:00"]] };
  await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours)
               values (1, 1, 'Free roof estimate', 'America/Chicago', 30, 1, 60, 14, ${db.sql.json(hours)}),
                      (2, 1, 'Crew visit', 'America/Chicago', 60, 2, 60, 5, ${db.sql.json(hours)})`;
  await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours,
                                      buffer_after_minutes, min_cancel_notice_minutes)
               values (3, 1, 'Site visit', 'America/Chicago', 30, 1, 0, 14, ${db.sql.json(hours)}, 30, 120)`;
  await db.sql`insert into calendar_links (slug, calendar_id) values ('acme-estimate', 1), ('acme-crew', 2), ('acme-visit', 3)`;
  // BASE_URL as an operator would set it behind a proxy: links in answers use it, the page does not.
  app = await startApp(db.url, { BASE_URL: "http://placeholder.invalid", COMMS_INBOUND_LIST_ID: "900" }, { clock });
  base = app.base;
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await db?.drop();
});

async function open(viewport = PHONE, path = "/book/acme-estimate", bypassCSP = false): Promise<{ ctx: BrowserContext; page: Page; problems: string[] }> {
  // bypassCSP only to inject axe-core (an inline script tag, which the page's CSP rightly refuses).
  const ctx = await browser.newContext({ viewport, deviceScaleFactor: 1, locale: "en-US", timezoneId: "America/New_York", acceptDownloads: true, bypassCSP });
  const page = await ctx.newPage();
  const problems = pageProblems(page);
  await page.goto(base + path);
  return { ctx, page, problems };
}

/** Evaluates an expression in the page (as text: the test is not compiled against the DOM's types). */
const js = <T = unknown>(page: Page, expr: string) => page.evaluate(expr) as Promise<T>;

/** What a person sees first (the viewport), and the whole page beside it. */
async function shot(page: Page, name: string) {
  await page.screenshot({ path: join(SHOTS_DIR, `${name}.png`) });
  await page.screenshot({ path: join(SHOTS_DIR, `full-${name}.png`), fullPage: true });
}

async function noHorizontalScroll(page: Page) {
  const { scroll, client } = await js<{ scroll: number; client: number }>(page, "({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })");
  expect(scroll).toBeLessThanOrEqual(client);
}

describe("booking page", () => {
  test("shows the calendar, its zone and open times grouped by day; books a slot by clicking", async () => {
    const { ctx, page, problems } = await open();
    await page.locator("button.time").first().waitFor();
    expect(await page.locator("h1").textContent()).toBe("Free roof estimate");
    expect(await page.locator("#business").textContent()).toBe("Acme Roofing LLC");
    // The device (New York) differs from the calendar: both zones offered, the calendar's chosen.
    expect(await page.getByRole("radio", { name: /^Central Time/ }).isChecked()).toBe(true);
    expect(await page.getByRole("radio", { name: /^Eastern Time/ }).isChecked()).toBe(false);
    expect(await page.locator("#length").textContent()).toBe("30 minutes");
    const days = await page.locator(".day h3").allTextContents();
    expect(days[0]).toContain("Monday, November 23");
    expect(days).toHaveLength(10);
    await noHorizontalScroll(page);
    await shot(page, "phone-1-times");

    const first = page.locator("button.time").first();
    const epoch = Number(await first.getAttribute("data-epoch"));
    expect(await first.textContent()).toBe("9:00 AM");
    await first.click();
    await page.getByRole("heading", { name: "Your details" }).waitFor();
    expect(await page.locator("#chosen-time").textContent()).toBe("Monday, November 23, 2026 at 9:00 AM CST");
    // Focus moved to the form's heading; the fields have labels and the right keyboards.
    expect(await js(page, "document.activeElement?.id")).toBe("form-title");
    expect(await page.getByLabel("Full name").getAttribute("autocomplete")).toBe("name");
    expect(await page.getByLabel("Mobile phone").getAttribute("inputmode")).toBe("tel");
    expect(await page.getByLabel("Email (optional)").getAttribute("type")).toBe("email");

    // Client-side checks first: nothing is sent without a name and a 10-digit phone.
    await page.getByRole("button", { name: "Confirm booking" }).click();
    expect(await page.locator("#e-name").textContent()).toBe("Please enter your name.");
    expect(await js(page, "document.activeElement?.id")).toBe("f-name");
    await noHorizontalScroll(page);
    await shot(page, "phone-2-form-errors");

    await page.getByLabel("Full name").fill("Jane Public");
    await page.getByLabel("Mobile phone").fill("(512) 555-0142");
    await page.getByLabel("Email (optional)").fill("jane@example.com");
    await page.getByRole("button", { name: "Confirm booking" }).click();
    await page.getByRole("heading", { name: "You're booked" }).waitFor();
    expect(await page.locator("#done-time").textContent()).toBe("Monday, November 23, 2026 at 9:00 AM CST");
    await noHorizontalScroll(page);
    await shot(page, "phone-3-confirmed");

    const [row] = await db.sql`select id, slot_epoch, name, phone, email from appointments order by id desc limit 1`;
    expect(row).toMatchObject({ slot_epoch: epoch, name: "Jane Public", phone: "5125550142", email: "jane@example.com" });

    // The calendar file: a download with the time in UTC and the reschedule link.
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Add to calendar" }).click()]);
    expect(download.suggestedFilename()).toBe("appointment.ics");
    // Saved rather than read where it landed: a browser connected to (test/run.ts's shared one) has no local path.
    const dir = mkdtempSync(join(tmpdir(), "leadline-ics-"));
    await download.saveAs(join(dir, "appointment.ics"));
    const ics = readFileSync(join(dir, "appointment.ics"), "utf8");
    rmSync(dir, { recursive: true });
    expect(ics).toContain("BEGIN:VCALENDAR\r\n");
    expect(ics).toContain("DTSTART:20261123T150000Z\r\n");
    expect(ics).toContain("DTEND:20261123T153000Z\r\n");
    expect(ics).toContain("SUMMARY:Free roof estimate\r\n");
    expect(ics.replace(/\r\n /g, "")).toMatch(/URL:http:\/\/placeholder\.invalid\/book\/acme-estimate\?r=[A-Za-z0-9_-]{43}/);

    const link = await page.locator("#resched-url").inputValue();
    expect(link).toMatch(/^http:\/\/placeholder\.invalid\/book\/acme-estimate\?r=[A-Za-z0-9_-]{43}$/);
    expect(problems).toEqual([]);

    // The next visitor does not see the slot.
    const next = await open();
    await next.page.locator("button.time").first().waitFor();
    expect(await next.page.locator(`button.time[data-epoch="${epoch}"]`).count()).toBe(0);
    expect(await next.page.locator("button.time").first().textContent()).toBe("9:30 AM");
    expect(next.problems).toEqual([]);
    await next.ctx.close();

    // Reschedule through the link on the confirmation.
    await page.getByRole("link", { name: "Change the time now" }).click();
    await page.getByRole("heading", { name: "Pick a new time" }).waitFor();
    expect(await page.locator("#current-time").textContent()).toBe("Monday, November 23, 2026 at 9:00 AM CST");
    await noHorizontalScroll(page);
    await shot(page, "phone-4-reschedule");
    const target = page.locator("button.time", { hasText: "11:30 AM" }).first();
    const targetEpoch = Number(await target.getAttribute("data-epoch"));
    await target.click();
    expect(await page.locator("#move-from").textContent()).toBe("Monday, November 23, 2026 at 9:00 AM CST");
    expect(await page.locator("#move-to").textContent()).toBe("Monday, November 23, 2026 at 11:30 AM CST");
    await shot(page, "phone-5-move");
    await page.getByRole("button", { name: "Confirm new time" }).click();
    await page.getByRole("heading", { name: "Your appointment has been moved" }).waitFor();
    expect(await page.locator("#done-time").textContent()).toBe("Monday, November 23, 2026 at 11:30 AM CST");
    await shot(page, "phone-6-moved");
    const [moved] = await db.sql`select slot_epoch from appointments where id = ${row.id}`;
    expect(moved.slot_epoch).toBe(targetEpoch);
    expect(problems).toEqual([]);
    await ctx.close();
  }, 60_000);

  test("a slot taken while the form is open: a clear message and fresh times", async () => {
    const { ctx, page, problems } = await open(PHONE, "/book/acme-crew");
    const button = page.locator("button.time").nth(2);
    await button.waitFor();
    const epoch = Number(await button.getAttribute("data-epoch"));
    await button.click();
    // Two seats: both go to others meanwhile.
    for (const phone of ["5125550201", "5125550202"]) {
      const r = await fetch(`${base}/book/api.php?action=book`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ slug: "acme-crew", epoch, name: "Other", phone }),
      }).then((x) => x.json() as Promise<{ ok: boolean }>);
      expect(r.ok).toBe(true);
    }
    await page.getByLabel("Full name").fill("Late Comer");
    await page.getByLabel("Mobile phone").fill("512 555 0203");
    await page.getByRole("button", { name: "Confirm booking" }).click();
    await page.locator("#notice", { hasText: "just taken" }).waitFor();
    await page.getByRole("heading", { name: "Pick a time" }).waitFor();
    expect(await page.locator(`button.time[data-epoch="${epoch}"]`).count()).toBe(0);
    await shot(page, "phone-7-taken");
    expect(problems).toEqual([]);
    await ctx.close();
  }, 30_000);

  test("a reschedule link that is not valid says so and offers a new booking", async () => {
    const { ctx, page, problems } = await open(PHONE, `/book/acme-estimate?r=${"A".repeat(43)}`);
    await page.getByRole("heading", { name: "This link can't be used to change an appointment" }).waitFor();
    await page.getByRole("button", { name: "Book a new time" }).click();
    await page.getByRole("heading", { name: "Pick a time" }).waitFor();
    expect(problems).toEqual([]);
    await ctx.close();
  }, 30_000);

  test("a move refused within the calendar's notice to reschedule says why in words (phone and desktop, axe-core)", async () => {
    // Wed Nov 25 2026 at 13:00 CST; the calendar's notice is two hours.
    const start = Date.UTC(2026, 10, 25, 19, 0) / 1000;
    for (const [viewport, width] of [[{ width: 390, height: 844 }, 390], [DESKTOP, 1280]] as const) {
      clock.set(T0);
      const booked = await fetch(`${base}/book/api.php?action=book`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": `198.51.100.${width % 250}` },
        body: JSON.stringify({ slug: "acme-visit", epoch: start + (width === 390 ? 0 : 86400), name: "Near Soon", phone: `512555${width}0`.slice(0, 10) }),
      }).then((x) => x.json() as Promise<{ ok: boolean; token: string }>);
      expect(booked.ok).toBe(true);
      const { ctx, page, problems } = await open(viewport, `/book/acme-visit?r=${booked.token}`, true);
      await page.getByRole("heading", { name: "Pick a new time" }).waitFor();
      await page.locator("button.time", { hasText: "4:00 PM" }).first().click();
      // The person lingers: the notice begins before they confirm.
      clock.set((start + (width === 390 ? 0 : 86400)) * 1000 - 119 * 60_000);
      await page.getByRole("button", { name: "Confirm new time" }).click();
      await page.getByRole("heading", { name: "It's too close to your appointment to change it online" }).waitFor();
      expect(await page.locator("#message-text").textContent()).toBe("Please contact Acme Roofing LLC directly to change it.");
      expect(await axeProblems(page)).toEqual([]);
      await noHorizontalScroll(page);
      await shot(page, `notice-${width}-too-late`);
      expect(problems).toEqual([]);
      await ctx.close();
      // Opened again now, the link says so at once, before any time is picked.
      const again = await open(viewport, `/book/acme-visit?r=${booked.token}`);
      await again.page.getByRole("heading", { name: "It's too close to your appointment to change it online" }).waitFor();
      expect(await again.page.locator("button.time").count()).toBe(0);
      expect(again.problems).toEqual([]);
      await again.ctx.close();
    }
    clock.set(T0);
  }, 60_000);

  test("an unknown link gets a friendly 404 page", async () => {
    const { ctx, page } = await open(PHONE, "/book/no-such-link");
    const res = await page.request.get(base + "/book/no-such-link");
    expect(res.status()).toBe(404);
    expect(await page.locator("h1").textContent()).toBe("We couldn't find that booking page");
    await noHorizontalScroll(page);
    await shot(page, "phone-8-not-found");
    await ctx.close();
  }, 30_000);

  test("no other site can frame the page, its reschedule view or its 404 (frame-ancestors 'none', X-Frame-Options: DENY)", async () => {
    const reschedule = `/book/acme-estimate?r=${"A".repeat(43)}`;
    for (const path of ["/book/acme-estimate", reschedule, "/book/no-such-link"]) {
      const res = await fetch(base + path);
      await res.text();
      expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(res.headers.get("x-frame-options")).toBe("DENY");
    }
    // A page of another origin framing both views: Chromium shows neither.
    const site = serveSite({
      "/embed": `<!doctype html><html lang="en"><title>Embed</title><iframe title="booking" src="${base}/book/acme-estimate"></iframe><iframe title="reschedule" src="${base}${reschedule}"></iframe></html>`,
    });
    const ctx = await browser.newContext({ viewport: DESKTOP });
    try {
      const page = await ctx.newPage();
      const said: string[] = [];
      page.on("console", (m) => said.push(m.text()));
      await page.goto(`${site.base}/embed`, { waitUntil: "load" });
      const framed = page.frames().filter((f) => f !== page.mainFrame());
      expect(framed).toHaveLength(2);
      for (const f of framed) {
        // A refused frame holds the browser's error page, never the booking page's document.
        expect(f.url()).not.toStartWith(base);
        expect(await f.locator("button.time, #business").count()).toBe(0);
      }
      expect(said.filter((t) => t.includes("frame-ancestors")).length).toBe(2);
    } finally {
      await ctx.close();
      site.stop();
    }
  }, 30_000);

  test("keyboard only: times are real buttons in order, Enter picks one", async () => {
    const { ctx, page, problems } = await open();
    await page.locator("button.time").first().waitFor();
    await page.keyboard.press("Tab"); // skip link
    expect(await js(page, "document.activeElement?.textContent")).toBe("Skip to content");
    await page.keyboard.press("Tab"); // the zone choice (the device is in New York)
    expect(await js(page, "document.activeElement?.id")).toBe("zone-calendar");
    await page.keyboard.press("Tab");
    const firstFocused = await js<{ tag: string }>(page, "({ tag: document.activeElement?.tagName })");
    expect(firstFocused.tag).toBe("BUTTON");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Your details" }).waitFor();
    await page.keyboard.press("Tab");
    expect(await js(page, "document.activeElement?.id")).toBe("f-name");
    expect(problems).toEqual([]);
    await ctx.close();
  }, 30_000);

  test("text meets WCAG AA contrast on its background (4.5:1; 3:1 for large text)", async () => {
    const { ctx, page } = await open();
    await page.locator("button.time").first().waitFor();
    await page.locator("button.time").first().click();
    await page.getByRole("button", { name: "Confirm booking" }).click(); // shows the error texts
    const ratios = await js<{ sel: string; ratio: number; large: boolean }[]>(page, `(() => {
      const rgb = (c) => (c.match(/[0-9.]+/g) || ["0", "0", "0", "0"]).slice(0, 4).map(Number);
      const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
        .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
      const bgOf = (el) => { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor); if (c.length < 4 || c[3] > 0) return c; } return [255, 255, 255]; };
      const out = [];
      for (const sel of [".eyebrow", "h1", ".business", ".facts li", ".zones legend", ".zone-main", ".zone-sub", ".time", ".chosen-label", ".field label", ".optional", ".help", ".error", ".primary", ".back", ".foot"]) {
        for (const el of document.querySelectorAll(sel)) {
          if (!el.offsetParent && sel !== ".foot") continue;
          const s = getComputedStyle(el);
          const [a, b] = [lum(rgb(s.color)), lum(bgOf(el))];
          const large = parseFloat(s.fontSize) >= 24 || (parseFloat(s.fontSize) >= 18.66 && Number(s.fontWeight) >= 700);
          out.push({ sel, ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05), large });
          break;
        }
      }
      return out;
    })()`);
    expect(ratios.length).toBeGreaterThanOrEqual(14);
    for (const r of ratios) expect([r.sel, r.ratio >= (r.large ? 3 : 4.5)]).toEqual([r.sel, true]);
    await ctx.close();
  }, 30_000);

  test("desktop screenshots", async () => {
    const { ctx, page, problems } = await open(DESKTOP);
    await page.locator("button.time").first().waitFor();
    await shot(page, "desktop-1-times");
    await page.locator("button.time").nth(3).click();
    await shot(page, "desktop-2-form");
    await page.getByLabel("Full name").fill("Sam Desk");
    await page.getByLabel("Mobile phone").fill("5125550300");
    await page.getByRole("button", { name: "Confirm booking" }).click();
    await page.getByRole("heading", { name: "You're booked" }).waitFor();
    await shot(page, "desktop-3-confirmed");
    const nf = await ctx.newPage();
    await nf.goto(base + "/book/nope");
    await shot(nf, "desktop-4-not-found");
    expect(problems).toEqual([]);
    await ctx.close();
  }, 30_000);
});
