// A manager's saved replies and tags screens in Chromium: the replies list, a reply's edit page
// with its merge-field help and a preview for a lead, and the tags list. Each page: no serious or
// critical axe finding, no console error; screenshots at 1280 and 390 px
// (SHOTS_DIR/console-settings-replies-*, console-settings-tags-*).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems } from "./harness/browser";
import { browserSignIn, makeUser, shoot } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeLead, seedWorld } from "./harness/factory";

setDefaultTimeout(120_000);

let db: TestDatabase;
let app: TestApp;
const WIDTHS = [1280, 390] as const;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  const lead = await makeLead(db.sql, { phone: "5125550131", first: "Ana", last: "Ruiz" });
  for (const t of ["VIP", "Roofing", "Call back Monday"]) await db.sql`insert into lead_tags (lead_id, org_id, tag, tag_key) values (${lead}, 1, ${t}, ${t.toLowerCase()})`;
  await db.sql`insert into saved_replies (org_id, name, body, channels) values (1, 'Follow-up', 'Hi {first_name}, this is {company} following up on your roofing estimate. Reply STOP to opt out.', '{sms,email}')`;
  app = await startApp(db.url);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("saved replies and tags in the browser", () => {
  test("replies list → add → edit with a preview → tags list", async () => {
    const m = await makeUser(db.sql, { role: "manager", orgId: 1 });
    const browser = await launchBrowser();
    try {
      const context = await browser.newContext({ bypassCSP: true });
      const page = await context.newPage();
      const problems = pageProblems(page);
      const check = async (name: string) => {
        expect(await axeProblems(page)).toEqual([]);
        await shoot(page, `settings-${name}`, WIDTHS);
      };
      await browserSignIn(page, app.base, m.email, m.password, "/console/settings/replies");
      await page.getByRole("link", { name: "Follow-up" }).first().waitFor();
      await page.getByLabel("Name", { exact: true }).fill("Thanks");
      await page.getByLabel("Body").fill("Thanks {first_name}!");
      await Promise.all([page.waitForURL((u) => u.searchParams.get("done") === "added"), page.getByRole("button", { name: "Add saved reply" }).click()]);
      await check("replies-list");
      await page.getByRole("link", { name: "Edit Follow-up" }).click();
      await page.getByLabel("Recent lead").selectOption({ index: 1 });
      await Promise.all([page.waitForURL((u) => u.searchParams.has("pick")), page.getByRole("button", { name: "Preview" }).click()]);
      expect(await page.locator("pre.message-body").textContent()).toContain("Hi Ana, this is Acme Roofing LLC following up");
      await check("replies-edit");
      await page.getByRole("link", { name: "Tags", exact: true }).click();
      await page.getByRole("cell", { name: "Call back Monday", exact: true }).waitFor();
      await check("tags-list");
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
