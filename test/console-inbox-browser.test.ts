// An agent's shift in the inbox, in real headless Chromium (issue 29): sign in → Mine → Unassigned
// → open a conversation (beside the list) → reply (the composer under the newest message) → it
// moves out of Unassigned into Mine → a new inbound arrives live in the list, the counts and the
// tab title → snooze → close; by keyboard only; with JavaScript off (plain forms). axe-core on
// every state, screenshots at 1280 and 390 px.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, BrowserContext, Page, Request } from "playwright-core";
import { startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems } from "./harness/browser";
import { ManualClock } from "./harness/clock";
import { browserSignIn, makeUser, shoot, type MadeUser } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { acmeTexting, makeLead, seedWorld } from "./harness/factory";
import { postCallback, startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";

setDefaultTimeout(90_000);
const PUBLIC = "https://leadline.example";
const DAY = Date.UTC(2026, 0, 16, 2); // 20:00 in Chicago: outside quiet hours

let db: TestDatabase;
let app: TestApp;
let twilio: FakeTwilio;
let browser: Browser;
const clock = new ManualClock(DAY);
let agent: MadeUser;
let phones = 0;

async function inbound(body: string, first: string): Promise<string> {
  const phone = `51255${String(80000 + ++phones)}`;
  await db.sql`insert into leads (list_id, phone, first_name, last_name, state) values (101, ${phone}, ${first}, 'Nuñez', 'TX')`;
  const r = await postCallback(app.base, PUBLIC, "/hooks/sms_inbound.php", "acme-token", { From: `+1${phone}`, To: "+15125550100", Body: body, MessageSid: `SMb${phone}`, AccountSid: "ACacme" });
  expect(r.status).toBe(200);
  return phone;
}

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  twilio = await startFakeTwilio();
  await acmeTexting(db.sql, twilio.url);
  app = await startApp(db.url, { BASE_URL: PUBLIC }, { clock });
  agent = await makeUser(db.sql, { role: "agent", orgId: 1, id: "agent7" });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await twilio?.stop();
  await db?.drop();
});

async function signedIn(user: MadeUser, javaScriptEnabled = true, width = 1280): Promise<{ ctx: BrowserContext; page: Page; problems: string[] }> {
  const ctx = await browser.newContext({ viewport: { width, height: 900 }, locale: "en-US", timezoneId: "America/Chicago", bypassCSP: false, javaScriptEnabled });
  const page = await ctx.newPage();
  const problems = pageProblems(page);
  await browserSignIn(page, app.base, user.email, user.password);
  return { ctx, page, problems };
}

/** axe-core needs its script in the page: a second context that allows it (the console's CSP refuses inline scripts). */
async function axeOf(url: string, cookieFrom: BrowserContext): Promise<string[]> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
  await ctx.addCookies(await cookieFrom.cookies());
  const page = await ctx.newPage();
  await page.goto(url);
  const out = await axeProblems(page);
  await ctx.close();
  return out;
}

const countOf = (page: Page, view: string) => page.locator(`[data-count="${view}"]`).textContent();

describe("the inbox in Chromium", () => {
  test("an agent's shift: open, reply, a new inbound arrives live, snooze, close", async () => {
    await inbound("Can you come Thursday?", "Ana");
    const { ctx, page, problems } = await signedIn(agent);
    expect(new URL(page.url()).pathname).toBe("/console/inbox");
    await page.getByText("Nothing is waiting for you.").waitFor();
    await page.getByRole("link", { name: /^Unassigned/ }).click();
    await page.getByText("Can you come Thursday?").waitFor();
    await page.getByRole("link", { name: "Ana Nuñez" }).click();
    // Opened beside the list (htmx swapped the pane; the address follows).
    await page.locator("#h-pane", { hasText: "Ana Nuñez" }).waitFor();
    expect(page.url()).toContain("open=");
    expect(await page.locator(".inbox-list .conv").count()).toBe(1);
    expect(await axeOf(page.url(), ctx)).toEqual([]);
    await shoot(page, "inbox-open", [1280, 390]);
    // The composer is under the newest message; the counter counts.
    const box = page.getByLabel("Message", { exact: true });
    await box.fill("Thursday at 10 works, {first_name}.");
    expect(await page.locator("#composer-count").textContent()).toMatch(/^\d+\/160 characters \(GSM-7\) · 1 segment · 0.01 credits per text$/);
    await box.fill("Thursday 👍");
    expect(await page.locator("#composer-count").textContent()).toContain("(UCS-2)");
    await box.fill("Thursday at 10 works, {first_name}.");
    const tl = await page.locator("#timeline").boundingBox();
    const composer = await page.locator("#composer").boundingBox();
    expect(composer!.y).toBeGreaterThan(tl!.y);
    await Promise.all([page.waitForURL(/sent=ok/), box.press("Control+Enter")]);
    expect(twilio.requests.map((r) => r.form.Body)).toEqual(["Thursday at 10 works, Ana."]);
    // It moved out of Unassigned into Mine.
    expect(await page.locator(".inbox-list .conv").count()).toBe(0);
    expect(await countOf(page, "mine")).toBe("1");
    const titleBefore = await page.title();

    // A new inbound arrives live: in the list, the counts and the title, without a reload.
    await inbound("Is Friday possible instead?", "Beto");
    await page.locator(".inbox-list .conv", { hasText: "Is Friday possible instead?" }).waitFor({ timeout: 20_000 });
    await page.waitForFunction(`document.querySelector('[data-count="unassigned"]')?.textContent === "1"`);
    await page.waitForFunction(`document.title !== ${JSON.stringify(titleBefore)}`);
    expect(await page.title()).toContain("(1) Inbox · Unassigned");
    // And into the open conversation's timeline when its lead writes again.
    await page.goto(`${app.base}/console/inbox?view=mine`);
    await page.getByRole("link", { name: "Ana Nuñez" }).click();
    await page.locator("#h-pane", { hasText: "Ana Nuñez" }).waitFor();
    const ana = (await db.sql`select phone from leads where first_name = 'Ana'`)[0]!.phone as string;
    await postCallback(app.base, PUBLIC, "/hooks/sms_inbound.php", "acme-token", { From: `+1${ana}`, To: "+15125550100", Body: "See you then!", MessageSid: "SMana2", AccountSid: "ACacme" });
    await page.locator("#timeline li", { hasText: "See you then!" }).waitFor({ timeout: 20_000 });

    // Snooze (1 hour), then close, from the pane.
    await page.locator("#snooze summary").click();
    await Promise.all([page.waitForURL(/done=snoozed/), page.getByRole("button", { name: "1 hour" }).click()]);
    expect(await page.locator("#inbox-live > .notice").textContent()).toBe("Snoozed.");
    await page.goto(`${app.base}/console/inbox?view=snoozed`);
    await page.getByRole("link", { name: "Ana Nuñez" }).click();
    await page.locator("#h-pane", { hasText: "Ana Nuñez" }).waitFor();
    await Promise.all([page.waitForURL(/done=closed/), page.locator("#pane").getByRole("button", { name: "Close", exact: true }).click()]);
    expect(await page.locator("#inbox-live > .notice").textContent()).toBe("Closed.");
    expect((await db.sql`select c.status from conversations c join leads l on l.id = c.lead_id where l.first_name = 'Ana'`)[0]!.status).toBe("closed");
    expect(problems).toEqual([]);
    await ctx.close();
  });

  test("keyboard only: j/k move, Enter opens, ? shows the keys, a assigns to me, s snoozes, e closes", async () => {
    await inbound("keyboard one", "Cora");
    await inbound("keyboard two", "Dario");
    const { ctx, page, problems } = await signedIn(agent);
    await page.goto(`${app.base}/console/inbox?view=unassigned`);
    await page.keyboard.press("j");
    const first = page.locator(".conv.kb-current .conv-link");
    expect(await page.evaluate("document.activeElement?.closest('.conv')?.classList.contains('kb-current') ?? false")).toBe(true);
    expect(await first.count()).toBe(1);
    await page.keyboard.press("j");
    await page.keyboard.press("k");
    const name = await page.locator(".conv.kb-current .conv-link").textContent();
    await page.keyboard.press("Enter");
    await page.locator("#h-pane", { hasText: name!.replace(" •", "") }).waitFor();
    await page.keyboard.press("?");
    await page.getByRole("dialog", { name: "Keyboard shortcuts" }).waitFor();
    expect(await axeOf(page.url(), ctx)).toEqual([]);
    await shoot(page, "inbox-keys", [1280]);
    await page.keyboard.press("Escape");
    expect(await page.getByRole("dialog").count()).toBe(0);
    await Promise.all([page.waitForURL(/done=assigned/), page.keyboard.press("a")]);
    // Back with the conversation open; it left Unassigned, so the keyboard is on the list's next conversation.
    expect(await page.evaluate("document.activeElement?.classList.contains('conv-link') ?? false")).toBe(true);
    expect(await page.locator("#pane-status").textContent()).toContain("Assigned to Dana Diaz");
    await page.keyboard.press("s");
    await Promise.all([page.waitForURL(/done=snoozed/), page.keyboard.press("Enter")]);
    await page.goto(`${app.base}/console/inbox?view=snoozed`);
    await page.keyboard.press("j");
    await page.keyboard.press("Enter");
    await page.locator("#h-pane").waitFor();
    await page.keyboard.press("r");
    expect(await page.evaluate("document.activeElement?.getAttribute('name')")).toBe("body");
    await page.keyboard.press("Escape");
    await Promise.all([page.waitForURL(/done=closed/), page.keyboard.press("e")]);
    expect(problems).toEqual([]);
    await ctx.close();
  });

  test("JavaScript off: the list, the pane and every action still work as plain forms", async () => {
    await inbound("no script here", "Elsa");
    const { ctx, page } = await signedIn(agent, false, 390);
    await page.goto(`${app.base}/console/inbox?view=unassigned`);
    await shoot(page, "inbox-list-nojs", [390]);
    await Promise.all([page.waitForURL(/open=/), page.getByRole("link", { name: "Elsa Nuñez" }).click()]);
    // At 390 px the conversation is full screen, with a way back.
    expect(await page.locator(".inbox-list").isVisible()).toBe(false);
    await page.getByRole("link", { name: "← Conversations" }).waitFor();
    await shoot(page, "inbox-pane-nojs", [390]);
    await Promise.all([page.waitForURL(/done=assigned/), page.getByRole("button", { name: "Assign to me" }).click()]);
    await page.getByLabel("Message", { exact: true }).fill("Replying without scripts");
    await Promise.all([page.waitForURL(/sent=ok/), page.getByRole("button", { name: "Send" }).click()]);
    expect(twilio.requests.at(-1)?.form.Body).toBe("Replying without scripts");
    await Promise.all([page.waitForURL(/done=closed/), page.locator("#pane").getByRole("button", { name: "Close", exact: true }).click()]);
    // Bulk, with checkboxes.
    await inbound("bulk a", "Fito");
    await inbound("bulk b", "Gala");
    await page.goto(`${app.base}/console/inbox?view=unassigned`);
    await page.getByLabel("Select Fito Nuñez").check();
    await page.getByLabel("Select Gala Nuñez").check();
    await Promise.all([page.waitForURL(/done=bulk_closed/), page.locator("#bulk").getByRole("button", { name: "Close" }).click()]);
    expect(await page.locator("#inbox-live > .notice").textContent()).toBe("Closed: 2 conversations.");
    await ctx.close();
  });
});

describe("the inbox's refreshes", () => {
  test("every change is followed by a refresh asked after it: one within 300 ms of the last refresh gets one at the gap's end, never dropped", async () => {
    const { ctx, page, problems } = await signedIn(agent);
    // The burst's 50 ms and the refresher's 300 ms gap are the page's own timers, on Playwright's
    // clock: on the real one a loaded renderer once ran the 50 ms after more than 300 ms, and the
    // third change then rightly asked a third refresh. And only this test's changes: the real
    // stream is held, never answered, so that no change from the database asks one of its own.
    await page.clock.install();
    await page.route((url) => url.pathname === "/console/inbox/stream", () => {});
    await page.goto(`${app.base}/console/inbox?view=open`);
    await page.locator("#inbox-changes").waitFor({ state: "attached" });
    await page.waitForFunction(() => typeof (globalThis as unknown as { htmx?: unknown }).htmx === "object");
    // Each refresh asked, and by what (the 10 s one has no triggering event).
    await page.evaluate(`window.__asked = [];
      document.body.addEventListener("htmx:beforeRequest", (e) => {
        const t = e.detail.requestConfig && e.detail.requestConfig.triggeringEvent;
        if (e.detail.elt.id === "inbox-refresh" && t && t.type === "inbox:refresh") window.__asked.push(Date.now());
      });`);
    const change = (n: number) =>
      page.evaluate(`(() => {
        const c = document.getElementById("inbox-changes");
        for (let i = 0; i < ${n}; i++) c.dispatchEvent(new CustomEvent("sse:change", { bubbles: true }));
        return Date.now();
      })()`) as Promise<number>;
    const asked = () => page.evaluate("window.__asked") as Promise<number[]>;
    /** Until `n` refreshes were asked (polled from here: the page's timers stand still). */
    const askedAtLeast = async (n: number) => {
      for (const t = performance.now(); (await asked()).length < n; await Bun.sleep(20)) {
        if (performance.now() - t > 20_000) throw new Error(`fewer than ${n} refreshes asked in 20 s: ${JSON.stringify(await asked())}`);
      }
    };
    // The page's time stands still from here but for runFor.
    await page.clock.pauseAt((await page.evaluate("Date.now()")) as number + 1000);
    // A burst as the stream delivers one: a change, then two more 50 ms later (htmx's own throttle
    // dropped those: the refresh the first asked may have read the page before them).
    const first = await change(1);
    await page.clock.runFor(50);
    const second = await change(2);
    // The first at once; those within the gap wait for its end.
    await askedAtLeast(1);
    expect(await asked()).toEqual([first]);
    await page.clock.runFor(300);
    await askedAtLeast(2);
    // One more after the second and third changes, at the gap's end: not one per change.
    await page.clock.runFor(1000);
    await Bun.sleep(300);
    const all = await asked();
    expect(all.length).toBe(2);
    expect(all[1]!).toBeGreaterThanOrEqual(second);
    expect(all[1]! - first).toBeGreaterThanOrEqual(300);
    expect(problems).toEqual([]);
    await ctx.close();
  });

  test("a live refresh that replaces the list leaves the keyboard's focus on the conversation it was on", async () => {
    for (const [i, name] of ["Hana", "Ivo", "Juno"].entries()) await inbound(`focus ${i}`, name);
    const { ctx, page, problems } = await signedIn(agent);
    await page.goto(`${app.base}/console/inbox?view=unassigned`);
    await page.waitForFunction(() => typeof (globalThis as unknown as { htmx?: unknown }).htmx === "object");
    expect(await page.locator(".convs > .conv").count()).toBeGreaterThanOrEqual(3);
    await page.keyboard.press("j");
    await page.keyboard.press("j");
    const focused = () => page.evaluate(`(() => { const a = document.activeElement; return a && a.classList.contains("conv-link") ? a.closest(".conv").id : a ? a.tagName : null; })()`);
    const on = await focused();
    expect(on).toMatch(/^conv-\d+$/);
    const list = await page.evaluateHandle(`document.getElementById("conv-list")`);
    const swapped = page.waitForResponse((r) => new URL(r.url()).pathname === "/console/inbox" && r.request().headers()["x-leadline-poll"] === "1");
    await page.evaluate(`htmx.trigger(document.getElementById("inbox-refresh"), "inbox:refresh")`);
    await swapped;
    // The list is a new element (the refresh replaced it), and the focus is on the same conversation.
    type Doc = { document: { getElementById(id: string): unknown } };
    await page.waitForFunction((old) => (globalThis as unknown as Doc).document.getElementById("conv-list") !== old, list);
    expect(await focused()).toBe(on);
    await page.keyboard.press("j");
    expect(await focused()).not.toBe(on);
    expect(problems).toEqual([]);
    await ctx.close();
  });

  test("a burst of real inbound texts: the last one reaches the list without the 10 s refresh", async () => {
    const { ctx, page, problems } = await signedIn(agent);
    await page.goto(`${app.base}/console/inbox?view=unassigned`);
    // Only the stream may refresh the page here.
    await page.evaluate(`(() => { const r = document.getElementById("inbox-refresh"); r.setAttribute("hx-trigger", "inbox:refresh"); htmx.process(r); })()`);
    const bodies = ["burst one", "burst two", "burst three", "burst four"];
    for (const [i, b] of bodies.entries()) await inbound(b, `Burst${i}`);
    await page.locator(".inbox-list .conv", { hasText: "burst four" }).waitFor({ timeout: 20_000 });
    for (const b of bodies) await page.locator(".inbox-list .conv", { hasText: b }).waitFor({ timeout: 20_000 });
    expect(problems).toEqual([]);
    await ctx.close();
  });
});

describe("the console's refreshes and the session's idle time", () => {
  test("the inbox's refresh and the lead page's timeline say they are polls and leave the idle time alone; an ended session takes the lead page to sign-in", async () => {
    const user = await makeUser(db.sql, { role: "agent", orgId: 1, id: "agent23" });
    const lead = await makeLead(db.sql, { phone: "5125550143", first: "Inés" });
    const { ctx, page, problems } = await signedIn(user);
    const seen = async () => {
      const [r] = await db.sql<{ at: Date }[]>`select seen_at as at from console_sessions where user_id = ${user.id} and revoked_at is null`;
      return r!.at.getTime();
    };
    const isPoll = (r: Request) => r.headers()["x-leadline-poll"] === "1";
    await page.goto(`${app.base}/console/inbox?view=open`);
    await page.waitForFunction(() => typeof (globalThis as unknown as { htmx?: unknown }).htmx === "object");
    const start = await seen();
    // Five minutes on (past the minute a request's refresh of the idle time waits for).
    clock.advance(5 * 60_000);
    const refreshed = page.waitForResponse((r) => new URL(r.url()).pathname === "/console/inbox" && isPoll(r.request()));
    await page.evaluate(`htmx.trigger(document.getElementById("inbox-refresh"), "inbox:refresh")`);
    expect((await refreshed).status()).toBe(200);
    expect(await seen()).toBe(start);
    // Opening a page is the person's: it does refresh it.
    await page.goto(`${app.base}/console/leads/${lead}`);
    const opened = await seen();
    expect(opened).toBeGreaterThan(start);
    clock.advance(5 * 60_000);
    const polled = await page.waitForResponse((r) => new URL(r.url()).pathname === `/console/api/leads/${lead}/timeline` && isPoll(r.request()));
    expect(polled.status()).toBe(200);
    expect(await seen()).toBe(opened);
    // Ended while the page is open: its next poll takes it to sign-in, back to the lead.
    await db.sql`update console_sessions set revoked_at = now() where user_id = ${user.id}`;
    await page.waitForURL((u) => u.pathname === "/console/login", { timeout: 30_000 });
    expect(new URL(page.url()).searchParams.get("next")).toBe(`/console/leads/${lead}`);
    // Chromium logs the ended session's 401, which is what sent the page to sign-in.
    expect(problems.filter((p) => !p.includes("status of 401"))).toEqual([]);
    await ctx.close();
  });
});

describe("the inbox after its session ends", () => {
  /** The inbox open with its stream connected, the stream requests counted from then on. */
  async function openInbox(user: MadeUser): Promise<{ ctx: BrowserContext; page: Page; problems: string[]; streams: string[] }> {
    const s = await signedIn(user);
    const streams: string[] = [];
    s.page.on("request", (r) => {
      if (new URL(r.url()).pathname === "/console/inbox/stream") streams.push(r.url());
    });
    const connected = s.page.waitForResponse((r) => new URL(r.url()).pathname === "/console/inbox/stream" && r.status() === 200);
    await s.page.goto(`${app.base}/console/inbox?view=open`);
    await connected;
    await s.page.waitForFunction(() => typeof (globalThis as unknown as { htmx?: unknown }).htmx === "object");
    // Only the stream may take the tab to sign-in here: the 10 s refresh (whose 401 would
    // redirect too) is taken out of the page.
    await s.page.evaluate(`document.getElementById("inbox-refresh").remove()`);
    streams.length = 0;
    return { ...s, streams };
  }

  /** The sign-in page, back to the inbox as it was shown; signing in there returns to it. */
  async function landsOnSignIn(page: Page, user: MadeUser): Promise<void> {
    await page.waitForURL((u) => u.pathname === "/console/login", { timeout: 30_000 });
    expect(new URL(page.url()).searchParams.get("next")).toBe("/console/inbox?view=open");
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(user.password);
    await Promise.all([page.waitForURL((u) => u.pathname === "/console/inbox"), page.getByRole("button", { name: "Sign in" }).click()]);
    expect(new URL(page.url()).search).toBe("?view=open");
  }

  test("signed out in another tab: the open stream says so, the tab lands on sign-in with the inbox as next, and no stream request follows", async () => {
    const user = await makeUser(db.sql, { role: "agent", orgId: 1, id: "agent21" });
    const { ctx, page, problems, streams } = await openInbox(user);
    const other = await ctx.newPage();
    await other.goto(`${app.base}/console/account`);
    await Promise.all([other.waitForURL(/\/console\/login/), other.getByRole("button", { name: "Sign out", exact: true }).click()]);
    await other.close();
    await page.waitForURL((u) => u.pathname === "/console/login", { timeout: 30_000 });
    // A while on the sign-in page: nothing asks for the stream again.
    await page.waitForTimeout(3_000);
    expect(streams).toEqual([]);
    await landsOnSignIn(page, user);
    expect(problems).toEqual([]);
    await ctx.close();
  });

  test("expired in SQL while the stream was away: its reconnection is told signed-out once, not refused again and again", async () => {
    const user = await makeUser(db.sql, { role: "agent", orgId: 1, id: "agent22" });
    const { ctx, page } = await signedIn(user);
    const streams: string[] = [];
    page.on("request", (r) => {
      if (new URL(r.url()).pathname === "/console/inbox/stream") streams.push(r.url());
    });
    // The page's first stream is lost (a proxy's 502) just as the session expires; the extension
    // then reconnects. The first is held until the test has taken the 10 s refresh out of the page.
    let ready: () => void = () => {};
    const refreshGone = new Promise<void>((resolve) => (ready = resolve));
    let first = true;
    await page.route("**/console/inbox/stream**", async (route) => {
      if (!first) return route.continue();
      first = false;
      await refreshGone;
      await db.sql`update console_sessions set seen_at = seen_at - interval '3 hours' where user_id = ${user.id}`;
      return route.fulfill({ status: 502, contentType: "text/plain", body: "bad gateway" });
    });
    await page.goto(`${app.base}/console/inbox?view=open`);
    await page.evaluate(`document.getElementById("inbox-refresh").remove()`);
    ready();
    await page.waitForURL((u) => u.pathname === "/console/login", { timeout: 30_000 });
    await page.waitForTimeout(3_000);
    // The lost one and the one told signed-out; never a loop.
    expect(streams.length).toBe(2);
    await page.unroute("**/console/inbox/stream**");
    await landsOnSignIn(page, user);
    await ctx.close();
  });
});
