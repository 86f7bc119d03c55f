// A manager's number pools in Chromium: the list with the exhaustion warning, the pool's form,
// adding a number and deactivating one through its confirmation page. Each page: no serious or
// critical axe finding, no console error; screenshots at 1280 and 390 px
// (SHOTS_DIR/console-settings-pools-*).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems } from "./harness/browser";
import { browserSignIn, makeUser, shoot } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { provisionPools, testClock } from "./harness/dni";
import { seedWorld } from "./harness/factory";

setDefaultTimeout(120_000);

let db: TestDatabase;
let app: TestApp;
const WIDTHS = [1280, 390] as const;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await provisionPools(db.sql, [{ key: "acme-site", org_id: 1, numbers: ["5125550101", "5125550102"] }]);
  await db.sql`insert into dni_hold_history (pool_key, number, visitor_id, started_at, expires_at)
    values ('acme-site', '5125550101', 0, '2026-11-20T10:10:00Z', '2026-11-20T10:40:00Z')`;
  await db.sql`insert into dni_fallbacks (pool_key, hour, visitor, served) values ('acme-site', '2026-11-20T10:00:00Z', 'v1', 3)`;
  app = await startApp(db.url, {}, { clock: testClock() });
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("number pools in the browser", () => {
  test("list → pool form → add a number → deactivate one with its confirmation", async () => {
    const m = await makeUser(db.sql, { role: "manager", orgId: 1 });
    const browser = await launchBrowser();
    try {
      const context = await browser.newContext({ bypassCSP: true });
      const page = await context.newPage();
      const problems = pageProblems(page);
      const check = async (name: string) => {
        expect(await axeProblems(page)).toEqual([]);
        await shoot(page, `settings-pools-${name}`, WIDTHS);
      };
      await browserSignIn(page, app.base, m.email, m.password, "/console/settings/pools");
      await page.getByText("A pool of 2 numbers would have sufficed").waitFor();
      await check("list");
      await Promise.all([page.waitForURL((u) => u.pathname === "/console/settings/pools/acme-site"), page.getByRole("link", { name: "acme-site" }).click()]);
      await page.getByLabel("Hold (seconds)").fill("900");
      await Promise.all([page.waitForURL((u) => u.searchParams.get("done") === "saved"), page.getByRole("button", { name: "Save pool" }).click()]);
      await page.getByLabel("Add a number").fill("(512) 555-0103");
      await Promise.all([page.waitForURL((u) => u.searchParams.get("done") === "added"), page.getByRole("button", { name: "Add number" }).click()]);
      expect(await page.getByRole("status").textContent()).toContain("Number added.");
      await check("pool");
      await page.getByRole("link", { name: "Deactivate 5125550102" }).click();
      await check("deactivate-confirm");
      await page.getByLabel("Yes, deactivate the number").check();
      await Promise.all([page.waitForURL((u) => u.searchParams.get("done") === "deactivated"), page.getByRole("button", { name: "Deactivate the number" }).click()]);
      const numbers = (await db.sql<{ number: string }[]>`select number from dni_numbers where pool_key = 'acme-site' and active order by number`).map((r) => r.number);
      expect(numbers).toEqual(["5125550101", "5125550103"]);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
