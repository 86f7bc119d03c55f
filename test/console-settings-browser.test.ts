// An owner's first day in Chromium: the installer link makes the first admin, who sets up the
// organization, adds a webhook endpoint and sends it a test event, and invites a manager. Each
// settings page: no serious or critical axe finding, no console error; screenshots at 1280 and
// 390 px (SHOTS_DIR/console-settings-*).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { issueInstallerLink } from "../src/console/installer";
import { startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems } from "./harness/browser";
import { shoot } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";
import { WebhookReceiver } from "./harness/webhook-receiver";

setDefaultTimeout(120_000);

let db: TestDatabase;
let app: TestApp;
let rx: WebhookReceiver;
const WIDTHS = [1280, 390] as const;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  rx = await WebhookReceiver.start();
  app = await startApp(db.url, { WEBHOOK_ALLOW_PRIVATE: "true" });
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await rx?.stop();
  await db?.drop();
});

describe("an owner's first day", () => {
  test("installer link → first admin → organization settings → a webhook with a test event → invite a manager", async () => {
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
      };

      await page.goto(`${app.base}/console/install/${token}`);
      await page.getByLabel("Email").fill("owner@example.test");
      await page.getByLabel("Name").fill("Olive Owner");
      await page.getByLabel("Password", { exact: true }).fill("a long pass phrase");
      await page.getByLabel("The same again").fill("a long pass phrase");
      await Promise.all([page.waitForURL((u) => u.pathname === "/console/inbox"), page.getByRole("button", { name: "Create the admin and sign in" }).click()]);

      // The organization: from the navigation.
      await Promise.all([page.waitForURL((u) => u.pathname === "/console/settings/org"), page.getByRole("link", { name: "Settings" }).click()]);
      await check("org");
      await page.getByLabel("Company").fill("Acme Roofing of Springfield LLC");
      await page.getByLabel("Time zone").fill("America/Chicago");
      await page.getByLabel("Quiet hours from").fill("21:00");
      await page.getByLabel("Quiet hours until").fill("08:00");
      await page.getByLabel("API base URL").fill("https://api.twilio.example");
      await page.getByLabel("Account SID").fill("AC0001");
      await page.getByLabel(/Auth token/).fill("tok-browser-1");
      await page.getByLabel("From number").fill("5550001111");
      await page.getByLabel("Billing status").selectOption("active");
      await Promise.all([page.waitForURL((u) => u.searchParams.get("done") === "saved"), page.getByRole("button", { name: "Save organization" }).click()]);
      expect(await page.getByRole("status").textContent()).toContain("Organization saved.");
      expect(await page.content()).not.toContain("tok-browser-1");
      await check("org-saved");
      const [org] = await db.sql`select timezone, quiet_start, sms->>'auth_token' as token from orgs where id = 1`;
      expect(org).toEqual({ timezone: "America/Chicago", quiet_start: "21:00", token: "tok-browser-1" });

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
      await page.getByLabel("Email").fill("manager@acme.example");
      await page.getByLabel("Name").fill("Mia Manager");
      await page.getByLabel("Role").selectOption("manager");
      await page.getByLabel("Organization (not for an admin)").selectOption("1");
      await page.getByRole("button", { name: "Invite" }).click();
      await page.locator("#invite-link").waitFor();
      expect(await page.locator("#invite-link").textContent()).toContain("/console/invite/");
      await check("users-invited");
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
