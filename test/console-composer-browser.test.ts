// The lead's conversation and composer in real headless Chromium (issue 29): older timeline entries
// load upward in place on the lead page and in the inbox's reading pane (the entry in view stays
// in view, no entry twice, the start says so); the `/` saved-reply picker; message-text search
// ("jose" finds José); the inbox's optional browser notifications. axe-core on each, screenshots
// at 1280 and 390 px.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems } from "./harness/browser";
import { ManualClock } from "./harness/clock";
import { browserSignIn, makeUser, shoot, type MadeUser } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { acmeTexting, seedWorld } from "./harness/factory";
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
let busy: number;
let jose: number;
let lark: number;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  twilio = await startFakeTwilio();
  await acmeTexting(db.sql, twilio.url);
  [{ id: busy }] = await db.sql<{ id: number }[]>`insert into leads (list_id, phone, first_name, last_name, state) values (101, '5125550188', 'Busy', 'Bee', 'TX') returning id`;
  // 120 texts, one every 7 minutes, the newest an inbound one (its conversation is open).
  await db.sql`insert into messages (lead_id, org_id, channel, direction, body, status, created_at)
    select ${busy}, 1, 'sms', case when g % 2 = 0 then 'in' else 'out' end, 'Text number ' || g || '.', 'delivered', ${new Date(DAY)}::timestamptz - (120 - g) * interval '7 minutes'
    from generate_series(1, 120) g`;
  // Another 120, the newest but one a text sent (Twilio's status callback moves it to delivered).
  [{ id: lark }] = await db.sql<{ id: number }[]>`insert into leads (list_id, phone, first_name, last_name, state) values (101, '5125550166', 'Lark', 'Live', 'TX') returning id`;
  await db.sql`insert into messages (lead_id, org_id, channel, direction, body, status, provider_id, created_at)
    select ${lark}, 1, 'sms', case when g % 2 = 0 then 'in' else 'out' end, 'Lark text ' || g || '.', case when g = 119 then 'sent' else 'delivered' end,
           case when g = 119 then 'SMlark119' end, ${new Date(DAY)}::timestamptz - (120 - g) * interval '7 minutes'
    from generate_series(1, 120) g`;
  [{ id: jose }] = await db.sql<{ id: number }[]>`insert into leads (list_id, phone, first_name, last_name, state, email) values (101, '5125550177', 'José', 'Núñez', 'TX', 'jose@example.com') returning id`;
  await db.sql`insert into messages (lead_id, org_id, channel, direction, body, status, created_at) values (${jose}, 1, 'sms', 'in', 'Is the roof estimate still on for Friday?', 'received', ${new Date(DAY - 60_000)})`;
  await db.sql`insert into saved_replies (org_id, name, body, subject, channels) values
    (1, 'Opening hours', 'Hi {first_name}, we are open 8–6.', 'Our hours, {first_name}', '{sms,email,note}'),
    (1, 'Quote follow-up', 'Hello {first_name}, any questions about the quote?', 'Your quote', '{email}'),
    (1, 'Directions', 'Take exit 12, {first_name}; we are the blue door.', '', '{sms}'),
    (2, 'Bolt only', 'Not for Acme', '', '{sms,email,note}')`;
  app = await startApp(db.url, { BASE_URL: PUBLIC }, { clock });
  agent = await makeUser(db.sql, { role: "agent", orgId: 1, id: "agent7", name: "Ana Agent" });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await twilio?.stop();
  await db?.drop();
});

async function signedIn(user: MadeUser, o: { js?: boolean; width?: number; height?: number } = {}): Promise<{ ctx: BrowserContext; page: Page; problems: string[] }> {
  const ctx = await browser.newContext({
    viewport: { width: o.width ?? 1280, height: o.height ?? 900 },
    locale: "en-US",
    timezoneId: "America/Chicago",
    bypassCSP: true,
    javaScriptEnabled: o.js ?? true,
  });
  const page = await ctx.newPage();
  const problems = pageProblems(page);
  await browserSignIn(page, app.base, user.email, user.password);
  return { ctx, page, problems };
}

/** The texts of the timeline's entries, in page order. */
const entryTexts = (page: Page, list: string) => page.locator(`${list} > li .tl-body`).allTextContents();

/** Where the entry holding `text` is from the top of the window. */
const topOf = (page: Page, text: string) =>
  page.evaluate(`[...document.querySelectorAll(".timeline > li")].find((el) => el.textContent.includes(${JSON.stringify(text)})).getBoundingClientRect().top`) as Promise<number>;

/** Whether the entry holding `text` is wholly inside the visible part of `scroller` (null: the window). */
async function inView(page: Page, text: string, scroller: string | null): Promise<boolean> {
  return page.evaluate(`(() => {
    const li = [...document.querySelectorAll(".timeline > li")].find((el) => el.textContent.includes(${JSON.stringify(text)}));
    if (!li) return false;
    const r = li.getBoundingClientRect();
    const box = ${scroller === null ? "{ top: 0, bottom: innerHeight }" : `document.querySelector(${JSON.stringify(scroller)}).getBoundingClientRect()`};
    return r.top >= box.top - 1 && r.bottom <= box.bottom + 1;
  })()`) as Promise<boolean>;
}

/** Resolves once the timeline holds `n` entries. */
const entries = (page: Page, n: number) => page.waitForFunction(`document.querySelectorAll("#timeline > li").length === ${n}`);

/**
 * "Show older entries" clicked, until the list holds `n`. Playwright scrolls the link into view
 * before clicking, and in view the link asks by itself (`intersect once`): on a loaded machine that
 * answer can land first and take the link away, and a click waiting for it would wait for ever.
 */
async function clickOlder(page: Page, n: number): Promise<void> {
  const click = page.locator("#tl-older a").click();
  await Promise.race([click, entries(page, n)]);
  // Whichever came first, the entries must arrive; a click still waiting gives up when the context closes.
  click.catch(() => {});
  await entries(page, n);
}

describe("older entries load upward in place", () => {
  test("the lead page: scrolled to the top, the older entries appear above, the entry in view stays in view, none twice, the start says so", async () => {
    const { ctx, page, problems } = await signedIn(agent);
    await page.goto(`${app.base}/console/leads/${busy}`);
    expect(await page.locator("#timeline > li").count()).toBe(50);
    expect((await entryTexts(page, "#timeline"))[0]).toBe("Text number 71.");
    // The page opens at the newest entry; the reader scrolls to the top.
    await page.evaluate("window.scrollTo(0, 0)");
    const was = await topOf(page, "Text number 71.");
    await entries(page, 100);
    // Inserted above: the entry that was in view is where it was, not pushed down out of view.
    expect(await inView(page, "Text number 71.", null)).toBe(true);
    expect(Math.abs((await topOf(page, "Text number 71.")) - was)).toBeLessThan(2);
    expect(await page.evaluate("window.scrollY")).toBeGreaterThan(0);
    await page.evaluate("window.scrollTo(0, 0)");
    await entries(page, 120);
    await page.locator("#tl-older.tl-start").waitFor();
    expect(await page.locator("#tl-older").textContent()).toContain("The start of the conversation.");
    const texts = await entryTexts(page, "#timeline");
    expect(texts).toEqual(Array.from({ length: 120 }, (_, i) => `Text number ${i + 1}.`));
    expect(await axeProblems(page)).toEqual([]);
    await shoot(page, "lead-older-in-place", [1280, 390]);
    expect(problems).toEqual([]);
    await ctx.close();
  });

  test("the inbox's reading pane: the pane scrolled to its top loads the older entries above, the reader's entry kept in view", async () => {
    const [{ id: conv }] = await db.sql<{ id: number }[]>`select id from conversations where lead_id = ${busy}`;
    const { ctx, page, problems } = await signedIn(agent, { height: 800 });
    await page.goto(`${app.base}/console/inbox?view=open&open=${conv}`);
    expect(await page.locator("#timeline > li").count()).toBe(50);
    // The live refresh answered while the older entries are on their way must not replace the
    // timeline they are meant for: the first older request is held until a refresh has landed.
    let hold: () => void = () => {};
    const held = new Promise<void>((resolve) => (hold = resolve));
    let asked = 0;
    await page.route("**/timeline/older**", async (route) => {
      if (asked++ === 0) await held;
      await route.continue();
    });
    const older = page.waitForRequest((r) => r.url().includes("/timeline/older"));
    await page.evaluate(`document.getElementById("pane-timeline").scrollTop = 0`);
    const was = await topOf(page, "Text number 71.");
    await older;
    const refreshed = page.waitForResponse((r) => r.url().includes("/console/inbox?") && r.request().method() === "GET");
    await page.evaluate(`htmx.trigger(document.getElementById("inbox-refresh"), "inbox:refresh")`);
    await refreshed;
    await page.waitForTimeout(100); // the refresh's answer is swapped in once read
    hold();
    await entries(page, 100);
    expect(await inView(page, "Text number 71.", "#pane-timeline")).toBe(true);
    expect(Math.abs((await topOf(page, "Text number 71.")) - was)).toBeLessThan(2);
    // The live refresh (every 10 s, or a change) merges into the list: the older entries just read stay.
    await page.evaluate(`htmx.trigger(document.getElementById("inbox-refresh"), "inbox:refresh")`);
    await page.waitForResponse((r) => r.url().includes("/console/inbox?") && r.request().method() === "GET");
    await page.waitForTimeout(100);
    expect(await page.locator("#timeline > li").count()).toBe(100);
    await clickOlder(page, 120);
    expect(await entryTexts(page, "#timeline")).toEqual(Array.from({ length: 120 }, (_, i) => `Text number ${i + 1}.`));
    await page.locator("#tl-older.tl-start").waitFor();
    expect(await axeProblems(page)).toEqual([]);
    expect(problems).toEqual([]);
    await ctx.close();
  });

  test("the inbox's reading pane after older entries: a new inbound arrives live at the bottom, a status changes in place, the older entries stay, none twice, the reader stays put", async () => {
    const [{ id: conv }] = await db.sql<{ id: number }[]>`select id from conversations where lead_id = ${lark}`;
    const { ctx, page, problems } = await signedIn(agent, { height: 800 });
    await page.goto(`${app.base}/console/inbox?view=open&open=${conv}`);
    expect(await page.locator("#timeline > li").count()).toBe(50);
    await page.evaluate(`document.getElementById("pane-timeline").scrollTop = 0`);
    await entries(page, 100);
    await clickOlder(page, 120);
    await page.locator("#tl-older.tl-start").waitFor();
    const ids = () => page.locator("#timeline > li").evaluateAll((els) => els.map((el) => el.id));
    const before = await ids();
    expect(before.every((id) => /^msg-\d+$/.test(id))).toBe(true);
    // The reader is reading an old entry.
    await page.evaluate(`(() => {
      const li = [...document.querySelectorAll("#timeline > li")].find((el) => el.textContent.includes("Lark text 30."));
      const pane = document.getElementById("pane-timeline");
      pane.scrollTop += li.getBoundingClientRect().top - pane.getBoundingClientRect().top - 40;
      pane.dispatchEvent(new Event("scroll"));
    })()`);
    const was = await topOf(page, "Lark text 30.");
    expect(await inView(page, "Lark text 30.", "#pane-timeline")).toBe(true);
    // Twilio says the text sent is delivered (no feed change: the next refresh shows it), then the
    // lead writes (a change: the stream makes the page refresh at once).
    const status = await postCallback(app.base, PUBLIC, "/hooks/sms_status.php", "acme-token", { MessageSid: "SMlark119", MessageStatus: "delivered", AccountSid: "ACacme" });
    expect(status.status).toBe(200);
    const r = await postCallback(app.base, PUBLIC, "/hooks/sms_inbound.php", "acme-token", { From: "+15125550166", To: "+15125550100", Body: "Lark text after the older ones.", MessageSid: "SMlarkin1", AccountSid: "ACacme" });
    expect(r.status).toBe(200);
    await entries(page, 121);
    const texts = await entryTexts(page, "#timeline");
    expect(texts).toEqual([...Array.from({ length: 120 }, (_, i) => `Lark text ${i + 1}.`), "Lark text after the older ones."]);
    const after = await ids();
    expect(new Set(after).size).toBe(121);
    expect(after.slice(0, 120)).toEqual(before);
    // Updated in place: the entry sent is now delivered.
    const sent = page.locator("#timeline > li").filter({ hasText: "Lark text 119." });
    await expect(sent.locator(".badge").last().textContent()).resolves.toBe("delivered");
    // The reader was not moved.
    expect(await inView(page, "Lark text 30.", "#pane-timeline")).toBe(true);
    expect(Math.abs((await topOf(page, "Lark text 30.")) - was)).toBeLessThan(2);
    // At the bottom, the next one arrives in view.
    await page.evaluate(`(() => { const pane = document.getElementById("pane-timeline"); pane.scrollTop = pane.scrollHeight; pane.dispatchEvent(new Event("scroll")); })()`);
    await postCallback(app.base, PUBLIC, "/hooks/sms_inbound.php", "acme-token", { From: "+15125550166", To: "+15125550100", Body: "Lark text at the bottom.", MessageSid: "SMlarkin2", AccountSid: "ACacme" });
    await entries(page, 122);
    await page.waitForFunction(`(() => { const p = document.getElementById("pane-timeline"); return p.scrollTop + p.clientHeight >= p.scrollHeight - 2; })()`);
    expect(await inView(page, "Lark text at the bottom.", "#pane-timeline")).toBe(true);
    expect(new Set(await ids()).size).toBe(122);
    expect(await axeProblems(page)).toEqual([]);
    await shoot(page, "inbox-live-after-older", [1280, 390]);
    expect(problems).toEqual([]);
    await ctx.close();
  });

  test("without JavaScript the link opens the older entries as a page", async () => {
    const { ctx, page } = await signedIn(agent, { js: false });
    await page.goto(`${app.base}/console/leads/${busy}`);
    await Promise.all([page.waitForURL(/before=/), page.getByRole("link", { name: "Show older entries" }).click()]);
    expect(await entryTexts(page, "ol.timeline")).toEqual(Array.from({ length: 50 }, (_, i) => `Text number ${i + 21}.`));
    await ctx.close();
  });
});

describe("search from the header", () => {
  test('"jose" typed in the header\'s box finds José Núñez; a word of a message finds it highlighted and opens it in the conversation', async () => {
    const { ctx, page, problems } = await signedIn(agent);
    await page.getByRole("searchbox", { name: "Find anything" }).fill("jose");
    await Promise.all([page.waitForURL(/\/console\/search\?q=jose/), page.keyboard.press("Enter")]);
    await expect(page.locator("#found-leads").getByRole("link", { name: "José Núñez" }).count()).resolves.toBe(1);
    expect(await axeProblems(page)).toEqual([]);
    await shoot(page, "search-jose", [1280, 390]);
    await page.getByRole("searchbox", { name: "Find anything" }).fill("estimate friday");
    await Promise.all([page.waitForURL(/q=estimate/), page.keyboard.press("Enter")]);
    expect(await page.locator("#found-messages mark").allTextContents()).toEqual(["estimate", "Friday"]);
    expect(await axeProblems(page)).toEqual([]);
    await shoot(page, "search-message", [1280, 390]);
    await Promise.all([page.waitForURL(/#msg-\d+$/), page.locator("#found-messages a").first().click()]);
    const target = new URL(page.url()).hash;
    expect(await page.locator(`${target}`).textContent()).toContain("Is the roof estimate still on for Friday?");
    expect(problems).toEqual([]);
    await ctx.close();
  });
});

describe("the composer's saved replies", () => {
  const options = (page: Page) => page.locator("#replies-list [role=option]").allTextContents();

  test("`/` in the empty composer opens the list for the channel; typing filters; arrows and Enter fill in the merged reply; Escape closes", async () => {
    const { ctx, page, problems } = await signedIn(agent);
    await page.goto(`${app.base}/console/leads/${jose}`);
    const body = page.locator("#composer textarea[name=body]");
    await body.focus();
    await page.keyboard.press("/");
    const filter = page.getByRole("combobox", { name: "Find a saved reply" });
    await expect(filter.evaluate((el) => el === el.ownerDocument.activeElement)).resolves.toBe(true);
    expect(await options(page)).toEqual(["Directions", "Opening hours"]);
    expect(await body.inputValue()).toBe("");
    expect(await axeProblems(page)).toEqual([]);
    await shoot(page, "composer-replies", [1280, 390]);
    await page.keyboard.type("hou");
    expect(await options(page)).toEqual(["Opening hours"]);
    await page.keyboard.press("Backspace");
    await page.keyboard.press("Backspace");
    await page.keyboard.press("Backspace");
    await page.keyboard.press("ArrowDown");
    expect(await page.locator("#replies-list [aria-selected=true]").textContent()).toBe("Opening hours");
    expect(await filter.getAttribute("aria-activedescendant")).toMatch(/^reply-opt-\d+$/);
    await page.keyboard.press("Enter");
    // The merged text comes from the server; once it is in, the focus is back on the message (the
    // same step of composer.js), not before.
    await page.waitForFunction(`document.querySelector("#composer textarea[name=body]").value !== ""`);
    await expect(body.evaluate((el) => el === el.ownerDocument.activeElement)).resolves.toBe(true);
    expect(await body.inputValue()).toBe("Hi José, we are open 8–6.");
    expect(await page.locator("#composer-replies").getAttribute("open")).toBeNull();
    // The counter follows the filled text.
    expect(await page.locator("#composer-count").textContent()).toContain("segment");
    // Escape closes the list and goes back to the message, which keeps its text.
    await page.getByText("Saved replies", { exact: true }).click();
    await filter.waitFor();
    // The toggle event moves the focus to the filter a task after the click.
    await expect(filter.evaluate((el) => el === el.ownerDocument.activeElement)).resolves.toBe(true);
    await page.keyboard.press("Escape");
    expect(await page.locator("#composer-replies").getAttribute("open")).toBeNull();
    expect(await body.inputValue()).toBe("Hi José, we are open 8–6.");
    // Email: the replies for email, the subject filled too.
    await body.fill("");
    await page.locator("#channel").selectOption("email");
    await page.getByText("Saved replies", { exact: true }).click();
    expect(await options(page)).toEqual(["Opening hours", "Quote follow-up"]);
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("Enter");
    await page.waitForFunction(`document.querySelector("#composer textarea[name=body]").value !== ""`);
    expect(await body.inputValue()).toContain("Hello José, any questions about the quote?");
    expect(await page.locator("#subject").inputValue()).toBe("Your quote");
    expect(problems).toEqual([]);
    await ctx.close();
  });

  test("in the inbox: `/` opens the pane's saved replies, and the ? sheet lists it", async () => {
    const [{ id: conv }] = await db.sql<{ id: number }[]>`select id from conversations where lead_id = ${jose}`;
    const { ctx, page, problems } = await signedIn(agent);
    await page.goto(`${app.base}/console/inbox?view=open&open=${conv}`);
    await page.locator("h1").click();
    await page.keyboard.press("?");
    expect(await page.locator(".keys-help").textContent()).toContain("saved replies");
    await page.keyboard.press("Escape");
    await page.keyboard.press("/");
    const filter = page.getByRole("combobox", { name: "Find a saved reply" });
    await expect(filter.evaluate((el) => el === el.ownerDocument.activeElement)).resolves.toBe(true);
    await page.keyboard.type("dir");
    await shoot(page, "inbox-replies", [1280, 390]);
    await page.keyboard.press("Enter");
    await page.waitForFunction(`document.querySelector("#composer textarea[name=body]").value !== ""`);
    expect(await page.locator("#composer textarea[name=body]").inputValue()).toBe("Take exit 12, José; we are the blue door.");
    expect(await axeProblems(page)).toEqual([]);
    expect(problems).toEqual([]);
    await ctx.close();
  });

  test("without JavaScript the menu is a list of links that fill the composer", async () => {
    const { ctx, page } = await signedIn(agent, { js: false });
    await page.goto(`${app.base}/console/leads/${jose}`);
    await page.getByText("Saved replies", { exact: true }).click();
    await Promise.all([page.waitForURL(/reply=/), page.getByRole("link", { name: "Directions" }).click()]);
    expect(await page.locator("#composer textarea[name=body]").inputValue()).toBe("Take exit 12, José; we are the blue door.");
    await ctx.close();
  });
});

describe("browser notifications of new messages", () => {
  /** Before the page's scripts: Notification wrapped so the test reads what was shown; the tab's visibility set by the test. */
  const WRAP = `
    window.__notes = [];
    window.__hidden = false;
    const Real = window.Notification;
    function Wrapped(title, options) {
      window.__notes.push({ title, body: options && options.body });
      try { return new Real(title, options); } catch (e) { return {}; }
    }
    Wrapped.requestPermission = (...a) => Real.requestPermission(...a);
    Object.defineProperty(Wrapped, "permission", { get: () => Real.permission });
    window.Notification = Wrapped;
    Object.defineProperty(Document.prototype, "visibilityState", { get() { return window.__hidden ? "hidden" : "visible"; }, configurable: true });
  `;
  let phones = 0;
  async function inbound(first: string, assignee: string | null = null): Promise<void> {
    const phone = `51255${String(70000 + ++phones)}`;
    if (assignee !== null) {
      const [{ id }] = await db.sql<{ id: number }[]>`insert into leads (list_id, phone, first_name, last_name, state) values (101, ${phone}, ${first}, 'Lane', 'TX') returning id`;
      await db.sql`insert into messages (lead_id, org_id, channel, direction, body, status) values (${id}, 1, 'note', 'out', 'earlier', 'stored')`;
      await db.sql`update conversations set assignee = ${assignee}, status = 'open' where lead_id = ${id}`;
    } else {
      await db.sql`insert into leads (list_id, phone, first_name, last_name, state) values (101, ${phone}, ${first}, 'Lane', 'TX')`;
    }
    const r = await postCallback(app.base, PUBLIC, "/hooks/sms_inbound.php", "acme-token", { From: `+1${phone}`, To: "+15125550100", Body: `hello from ${first}`, MessageSid: `SMn${phone}`, AccountSid: "ACacme" });
    expect(r.status).toBe(200);
  }
  const notes = (page: Page) => page.evaluate("window.__notes") as Promise<{ title: string; body: string }[]>;

  test("off by default; on asks permission and is remembered; a new inbound in Unassigned or Mine notifies only while the tab is hidden", async () => {
    const other = await makeUser(db.sql, { role: "agent", orgId: 1, id: "agent8", name: "Otto Other" });
    void other;
    const { ctx, page, problems } = await signedIn(agent);
    await ctx.grantPermissions(["notifications"], { origin: app.base });
    await page.addInitScript(WRAP);
    await page.goto(`${app.base}/console/inbox?view=unassigned`);
    const toggle = page.getByRole("checkbox", { name: "Notify me of new messages" });
    expect(await toggle.isChecked()).toBe(false);
    expect(await axeProblems(page)).toEqual([]);
    await shoot(page, "inbox-notify", [1280, 390]);
    // Off: nothing, even hidden.
    await page.evaluate("window.__hidden = true");
    await inbound("Quiet");
    await page.waitForSelector("text=hello from Quiet");
    expect(await notes(page)).toEqual([]);
    await toggle.check();
    await page.waitForFunction("localStorage.getItem('leadline.notify') === 'on'");
    // Visible: the list shows it, no notification.
    await page.evaluate("window.__hidden = false");
    await inbound("Seen");
    await page.waitForSelector("text=hello from Seen");
    // Hidden: another user's conversation says nothing; an unassigned one notifies.
    await page.evaluate("window.__hidden = true");
    await inbound("Others", "agent8");
    await inbound("Newbie");
    await page.waitForFunction("window.__notes.length > 0");
    await page.waitForSelector("text=hello from Newbie");
    expect(await notes(page)).toEqual([{ title: expect.stringMatching(/^New text from /), body: "Unassigned" }]);
    // Mine: a conversation assigned to me notifies.
    await inbound("Mine", "agent7");
    await page.waitForFunction("window.__notes.length > 1");
    expect((await notes(page))[1]).toEqual({ title: expect.stringMatching(/^New text from /), body: "Assigned to you" });
    // Remembered across a reload; turned off, it stays off.
    await page.reload();
    expect(await toggle.isChecked()).toBe(true);
    await toggle.uncheck();
    expect(await page.evaluate("localStorage.getItem('leadline.notify')")).toBe("off");
    await page.evaluate("window.__hidden = true");
    await inbound("After");
    await page.waitForSelector("text=hello from After");
    expect(await notes(page)).toEqual([]);
    expect(problems).toEqual([]);
    await ctx.close();
  });
});
