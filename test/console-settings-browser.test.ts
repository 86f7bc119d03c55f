// An owner's first day in Chromium: the installer link makes the first admin, who lands on the
// first steps, sets up the organization (with its SMTP sender), adds a calendar with buffers and a
// booking link, a number pool, a webhook endpoint with a test event, invites a manager and an
// agent (the agent's link emailed); the manager sets a password, signs in and reads Today after
// some traffic. Each
// settings page: no serious or critical axe finding, no console error; screenshots at 1280 and
// 390 px (SHOTS_DIR/console-settings-*).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { issueInstallerLink } from "../src/console/installer";
import { startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems } from "./harness/browser";
import { browserSignIn, shoot } from "./harness/console";
import { startFakeSmtp, type FakeSmtp } from "./harness/fake-smtp";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeLead, seedWorld } from "./harness/factory";
import { WebhookReceiver } from "./harness/webhook-receiver";

setDefaultTimeout(120_000);

let db: TestDatabase;
let app: TestApp;
let rx: WebhookReceiver;
let smtp: FakeSmtp;
const WIDTHS = [1280, 390] as const;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  rx = await WebhookReceiver.start();
  smtp = await startFakeSmtp();
  app = await startApp(db.url, { WEBHOOK_ALLOW_PRIVATE: "true" });
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await rx?.stop();
  await smtp?.stop();
  await db?.drop();
});

describe("an owner's first day", () => {
  test("installer link → first admin → first steps → organization → a calendar with buffers and a booking link → a pool → a webhook with a test event → invite a manager and an agent (by email) → the manager reads Today", async () => {
    const token = (await issueInstallerLink(db.sql, Date.now()))!;
    const browser = await launchBrowser();
    try {
      // axe is injected as a script: the test's own context allows it.
      const context = await browser.newContext({ bypassCSP: true });
      await context.grantPermissions(["clipboard-read", "clipboard-write"]);
      const page = await context.newPage();
      const problems = pageProblems(page);
      const check = async (name: string) => {
        expect(await axeProblems(page)).toEqual([]);
        await shoot(page, `settings-${name}`, WIDTHS);
        // At a phone's width nothing pushes the page sideways (tables scroll in their own box).
        const size = page.viewportSize()!;
        await page.setViewportSize({ width: 390, height: 800 });
        expect(`${name}: ${await page.evaluate("document.documentElement.scrollWidth")}`).toBe(`${name}: 390`);
        await page.setViewportSize(size);
      };

      await page.goto(`${app.base}/console/install/${token}`);
      await page.getByLabel("Email").fill("owner@example.test");
      await page.getByLabel("Name").fill("Olive Owner");
      await page.getByLabel("Password", { exact: true }).fill("a long pass phrase");
      await page.getByLabel("The same again").fill("a long pass phrase");
      await Promise.all([page.waitForURL((u) => u.pathname === "/console/settings/first-steps"), page.getByRole("button", { name: "Create the admin and sign in" }).click()]);
      await check("first-steps");

      // The organization: from the first steps.
      await Promise.all([page.waitForURL((u) => u.pathname === "/console/settings/org"), page.locator(".first-steps").getByRole("link", { name: "Organization" }).click()]);
      await check("org");
      await page.getByLabel("Company").fill("Acme Roofing of Springfield LLC");
      await page.getByLabel("Time zone").fill("America/Chicago");
      await page.getByLabel("Quiet hours from").fill("21:00");
      await page.getByLabel("Quiet hours until").fill("08:00");
      await page.getByLabel("API base URL").fill("https://api.twilio.example");
      await page.getByLabel("Account SID").fill("AC0001");
      await page.getByLabel(/Auth token/).fill("tok-browser-1");
      await page.getByLabel("From number").fill("5550001111");
      await page.getByLabel(/SMTP URL/).fill(smtp.url("acme", "smtp-browser-pass-1"));
      await page.getByLabel("From address").fill("team@acme.example");
      await page.getByLabel("Billing status").selectOption("active");
      await Promise.all([page.waitForURL((u) => u.searchParams.get("done") === "saved"), page.getByRole("button", { name: "Save organization" }).click()]);
      expect(await page.getByRole("status").textContent()).toContain("Organization saved.");
      expect(await page.content()).not.toContain("tok-browser-1");
      await check("org-saved");
      const [org] = await db.sql`select timezone, quiet_start, sms->>'auth_token' as token from orgs where id = 1`;
      expect(org).toEqual({ timezone: "America/Chicago", quiet_start: "21:00", token: "tok-browser-1" });

      // A calendar with buffers, then its booking link (typed in capitals: stored lowercased).
      await page.goto(`${app.base}/console/settings/calendars`);
      await check("calendars");
      await page.getByLabel("Organization").selectOption("1");
      await page.getByLabel("Name").fill("Roof estimates");
      await page.getByLabel("Time zone").fill("America/Chicago");
      await page.getByLabel("Buffer before minutes").fill("15");
      await page.getByLabel("Buffer after minutes").fill("30");
      await page.getByLabel("Monday").fill("09:00-12:00, 13:00-17:00");
      await Promise.all([page.waitForURL((u) => u.searchParams.get("done") === "added"), page.getByRole("button", { name: "Add calendar" }).click()]);
      await page.getByLabel("New link name").fill("Acme-Estimate");
      await Promise.all([page.waitForURL((u) => u.searchParams.get("done") === "link-added"), page.getByRole("button", { name: "Add link" }).click()]);
      expect(await page.locator("#link-0").textContent()).toMatch(/^https?:\/\/\S+\/book\/acme-estimate$/);
      await page.locator('button[data-copy="link-0"]').click();
      await page.locator('button[data-copy="link-0"]', { hasText: "Copied" }).waitFor();
      await check("calendar-link");
      const [cal] = await db.sql`select c.buffer_before_minutes as before, c.buffer_after_minutes as after from calendars c join calendar_links l on l.calendar_id = c.id where l.slug = 'acme-estimate'`;
      expect(cal).toEqual({ before: 15, after: 30 });

      // A number pool.
      await page.goto(`${app.base}/console/settings/pools`);
      await page.getByLabel("Key").fill("acme-web");
      await page.getByLabel("Organization").selectOption("1");
      await page.getByLabel("Name").fill("Website");
      await page.getByLabel("Fallback number").fill("(512) 555-0100");
      await Promise.all([page.waitForURL((u) => u.searchParams.get("done") === "created"), page.getByRole("button", { name: "Add pool" }).click()]);
      await page.getByLabel("Add a number").fill("512-555-0111");
      await Promise.all([page.waitForURL((u) => u.searchParams.get("done") === "added"), page.getByRole("button", { name: "Add number" }).click()]);
      await check("pool");

      // A webhook endpoint with a test event.
      await page.goto(`${app.base}/console/webhooks`);
      await Promise.all([page.waitForURL((u) => u.pathname === "/console/settings/webhooks"), page.getByRole("link", { name: "Add an endpoint" }).click()]);
      await check("webhook-add");
      await page.getByLabel("URL").fill(rx.url("/owner"));
      await page.getByLabel("Organization").selectOption("1");
      await page.getByLabel("lead.created").check();
      await page.getByRole("button", { name: "Add endpoint" }).click();
      await page.locator("#webhook-secret").waitFor();
      const secret = await page.locator("#webhook-secret").textContent();
      expect(secret).toStartWith("whsec_");
      await page.getByRole("button", { name: "Copy" }).click();
      await page.getByRole("button", { name: "Copied" }).waitFor();
      await check("webhook-added");
      await page.getByRole("button", { name: "Send a test event" }).click();
      await page.getByText("Test event sent: the endpoint answered HTTP 200.").waitFor();
      expect(JSON.parse(rx.at("/owner")[0]!.body).type).toBe("webhook.test");
      await check("webhook-tested");
      await page.getByRole("link", { name: "Rotate the secret…" }).click();
      await check("webhook-rotate-confirm");

      // Invite a manager.
      await page.goto(`${app.base}/console/settings/users`);
      await check("users");
      await page.getByLabel("Email", { exact: true }).fill("manager@acme.example");
      await page.getByLabel("Name").fill("Mia Manager");
      await page.getByLabel("Role").selectOption("manager");
      await page.getByLabel("Organization (not for an admin)").selectOption("1");
      await page.getByRole("button", { name: "Invite" }).click();
      await page.locator("#invite-link").waitFor();
      expect(await page.locator("#invite-link").textContent()).toContain("/console/invite/");
      await check("users-invited");
      const managerLink = (await page.locator("#invite-link").textContent())!;

      // An agent, the link emailed through the organization's SMTP sender.
      await page.getByLabel("Email", { exact: true }).fill("agent@acme.example");
      await page.getByLabel("Name", { exact: true }).fill("Ari Agent");
      await page.getByLabel("Role", { exact: true }).selectOption("agent");
      await page.getByLabel("Organization (not for an admin)").selectOption("1");
      await page.getByLabel("Also email the link to them").check();
      await page.getByRole("button", { name: "Invite" }).click();
      await page.getByText("Emailed to agent@acme.example.").waitFor();
      await smtp.waitFor(1);
      expect(smtp.mails[0]!.parsed.text).toContain((await page.locator("#invite-link").textContent())!);
      await check("users-emailed");
      await page.goto(`${app.base}/console/settings/first-steps`);
      expect(await page.locator(".first-steps li.todo").count()).toBe(0);
      await check("first-steps-done");
      expect(problems).toEqual([]);

      // The manager sets a password through the link, and after some traffic reads Today.
      for (let i = 0; i < 3; i++) await makeLead(db.sql, { phone: `51255502${i}0`, first: `Lead${i}` });
      const managerContext = await browser.newContext({ bypassCSP: true });
      const mpage = await managerContext.newPage();
      const mproblems = pageProblems(mpage);
      await mpage.goto(managerLink.replace(/^https?:\/\/[^/]+/, app.base));
      await mpage.getByLabel("New password").fill("manager pass phrase");
      await mpage.getByLabel("The same again").fill("manager pass phrase");
      await Promise.all([mpage.waitForURL((u) => u.pathname === "/console/login"), mpage.getByRole("button", { name: "Set password" }).click()]);
      // Loaded whole before leaving it: an icon still loading would be aborted by the next page.
      await mpage.waitForLoadState("load");
      await browserSignIn(mpage, app.base, "manager@acme.example", "manager pass phrase", "/console/today");
      expect(new URL(mpage.url()).pathname).toBe("/console/today");
      expect(await mpage.locator("h1").first().textContent()).toContain("Today");
      expect(await axeProblems(mpage)).toEqual([]);
      await shoot(mpage, "settings-manager-today", WIDTHS);
      expect(mproblems).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
