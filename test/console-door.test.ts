// The console's door in real Chromium: signing in through the page, the layout by keyboard at
// 1280 and 375 px (axe-core finds nothing serious), a revoked session signed out at its next
// click, a form on another site refused; an invite link opened (the address bar ends without its
// token) and the password set; two-step sign-in turned on, then off, with the password and a code
// (screenshots at 1280 and 390 px).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser } from "playwright-core";
import { usersCommand } from "../src/console/command";
import { codeAt, stepOf } from "../src/console/totp";
import { startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems, serveSite, type Site } from "./harness/browser";
import { browserSignIn, makeUser, shoot, type MadeUser } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

setDefaultTimeout(90_000);

let db: TestDatabase;
let app: TestApp;
let browser: Browser;
let site: Site;
let manager: MadeUser;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url);
  manager = await makeUser(db.sql, { role: "manager", orgId: 1, name: "Mona Manager" });
  browser = await launchBrowser();
  site = serveSite();
});
afterAll(async () => {
  await browser?.close();
  site?.stop();
  await app?.stop();
  await db?.drop();
}, 30_000);

const quietIo = () => ({ out: () => {}, err: () => {}, readInput: async () => "", flush: async () => {} });

describe("the console's door in Chromium", () => {
  test("sign-in page and the account page: labelled, keyboard-usable, no serious axe finding, screenshots", async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, bypassCSP: true });
    const page = await ctx.newPage();
    const problems = pageProblems(page);
    await page.goto(`${app.base}/console/account`);
    expect(new URL(page.url()).pathname).toBe("/console/login");
    expect(await axeProblems(page)).toEqual([]);
    await shoot(page, "sign-in");
    // By keyboard: the email field has focus, Tab to the password, Enter submits.
    await page.keyboard.type(manager.email);
    await page.keyboard.press("Tab");
    await page.keyboard.type(manager.password);
    await Promise.all([page.waitForURL(/\/console\/account$/), page.keyboard.press("Enter")]);
    expect(await page.locator("h1").textContent()).toBe("Your account");
    expect(await page.locator("nav[aria-label=Console] a").allTextContents()).toContain("API keys");
    expect(await axeProblems(page)).toEqual([]);
    await shoot(page, "account");
    // The skip link is the first stop, and visible when focused.
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement.textContent")).toBe("Skip to content");
    expect(problems.filter((p) => !p.includes("favicon"))).toEqual([]);
    await ctx.close();
  });

  test("an agent's navigation has no managers' pages", async () => {
    const agent = await makeUser(db.sql, { role: "agent", orgId: 1, id: "agent7" });
    const ctx = await browser.newContext({ viewport: { width: 375, height: 800 } });
    const page = await ctx.newPage();
    await browserSignIn(page, app.base, agent.email, agent.password, "/console/account");
    const items = await page.locator("nav[aria-label=Console] a").allTextContents();
    expect(items.map((t) => t.replace(/\d+/, "").trim())).toEqual(["Inbox", "My work", "Leads", "Calls", "Appointments"]);
    await ctx.close();
  });

  test("a revoked session is signed out at its next request", async () => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await browserSignIn(page, app.base, manager.email, manager.password, "/console/account");
    expect(await page.locator("h1").textContent()).toBe("Your account");
    await usersCommand(db.sql, ["revoke-sessions", "--email", manager.email], { baseUrl: app.base }, quietIo());
    await page.reload();
    expect(new URL(page.url()).pathname).toBe("/console/login");
    expect(await page.locator("h1").textContent()).toBe("Sign in");
    await ctx.close();
  });

  test("a form on another site posting to the console is refused, and signs nobody out", async () => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await browserSignIn(page, app.base, manager.email, manager.password, "/console/account");
    site.put(
      "/attack.html",
      `<!doctype html><form id="f" method="post" action="${app.base}/console/account/sign-out-everywhere"><input name="_csrf" value="guess"></form>`,
    );
    await page.goto(`${site.base}/attack.html`);
    const [answer] = await Promise.all([page.waitForResponse((r) => r.url().includes("/sign-out-everywhere")), page.evaluate("document.getElementById('f').submit()")]);
    expect(answer.status()).toBe(403);
    await page.waitForURL(/sign-out-everywhere/);
    expect(await page.locator("h1").textContent()).toBe("This form has expired");
    await page.goto(`${app.base}/console/account`);
    expect(await page.locator("h1").textContent()).toBe("Your account");
    const [{ n }] = await db.sql`select count(*)::int as n from audit_log where action = 'session.revoke_all'`;
    expect(n).toBe(0);
    // The real button, from the console's own page, works.
    page.once("dialog", (d) => void d.accept());
    await Promise.all([page.waitForURL(/\/console\/login/), page.getByRole("button", { name: "Sign out everywhere" }).click()]);
    const [{ m }] = await db.sql`select count(*)::int as m from audit_log where action = 'session.revoke_all'`;
    expect(m).toBe(1);
    await ctx.close();
  });

  test("an invite link: opened, the address bar holds no token; the form sets the password; axe finds nothing serious", async () => {
    const newcomer = await makeUser(db.sql, { role: "agent", orgId: 1, name: "Nia Newcomer" });
    let link = "";
    await usersCommand(db.sql, ["invite", "--email", newcomer.email], { baseUrl: app.base }, { ...quietIo(), out: (t: string) => void (link += t) });
    const token = link.trim().split("/").pop()!;
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, bypassCSP: true });
    const page = await ctx.newPage();
    const problems = pageProblems(page);
    await page.goto(link.trim());
    expect(page.url()).toBe(`${app.base}/console/invite`);
    expect(await page.content()).not.toContain(token);
    expect(await page.locator("h1").textContent()).toBe("Set your password");
    expect(await axeProblems(page)).toEqual([]);
    await shoot(page, "invite", [1280, 390]);
    await page.getByLabel("New password").fill("a fresh pass phrase");
    await page.getByLabel("The same again").fill("a fresh pass phrase");
    await Promise.all([page.waitForURL(/\/console\/login\?done=password$/), page.getByRole("button", { name: "Set password" }).click()]);
    expect(await page.locator("[role=status]").textContent()).toContain("Your password is set");
    // The link again (from the mail, or from a log): spent.
    await page.goto(link.trim());
    expect(await page.locator("h1").textContent()).toBe("This link does not work");
    expect(problems.filter((p) => !p.includes("favicon") && !p.includes("404"))).toEqual([]);
    await ctx.close();
  });

  test("two-step sign-in on and off from the account page, with the password and codes; axe finds nothing serious", async () => {
    const u = await makeUser(db.sql, { role: "agent", orgId: 1, name: "Tess Twostep" });
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, bypassCSP: true });
    const page = await ctx.newPage();
    await browserSignIn(page, app.base, u.email, u.password, "/console/account");
    await Promise.all([page.waitForURL(/\/console\/account\/two-step$/), page.getByRole("button", { name: "Set up two-step sign-in" }).click()]);
    expect(await axeProblems(page)).toEqual([]);
    await shoot(page, "two-step-setup", [1280, 390]);
    const secret = /secret=([A-Z2-7]+)&/.exec((await page.locator("code.secret").textContent()) ?? "")![1]!;
    await page.getByLabel("Code from the new app").fill(codeAt(secret, stepOf(Date.now())));
    await page.getByLabel("Your password").fill(u.password);
    await Promise.all([page.waitForURL(/done=two-step-on$/), page.getByRole("button", { name: "Turn on" }).click()]);
    expect(await page.locator("[role=status]").textContent()).toContain("Two-step sign-in is on");
    expect(await axeProblems(page)).toEqual([]);
    await shoot(page, "account-two-step-on", [1280, 390]);
    // A wrong code: still on, the form again with the reason.
    // The account page holds other password fields (the own-password form, moving the device): the off form's.
    const off = page.locator("form", { has: page.getByRole("button", { name: "Turn off" }) });
    await off.getByLabel("Your password").fill(u.password);
    await off.getByLabel("A current code from your app").fill("000000" === codeAt(secret, stepOf(Date.now())) ? "111111" : "000000");
    await off.getByRole("button", { name: "Turn off" }).click();
    await page.waitForURL(/two-step\/off$/);
    expect(await page.locator("[role=alert]").textContent()).toContain("still on");
    expect(await axeProblems(page)).toEqual([]);
    await ctx.close();
  });
});
