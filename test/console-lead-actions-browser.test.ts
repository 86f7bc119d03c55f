// In Chromium, an agent's walk through acting on a lead (issue 29): schedule a callback from the
// lead page → My work shows it → book an appointment on the lead's behalf → it shows on the lead,
// with the reschedule link ready in the composer. axe-core on every page; screenshots at 1280 and
// 390 px (SHOTS_DIR/console-lead-actions-*.png).
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems } from "./harness/browser";
import { ManualClock } from "./harness/clock";
import { browserSignIn, makeUser, shoot, type MadeUser } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

setDefaultTimeout(240_000);

/** Monday 2 March 2026, 9:00 in Chicago. */
const clock = new ManualClock(Date.UTC(2026, 2, 2, 15));
let db: TestDatabase;
let app: TestApp;
let user: MadeUser;
let leadId: number;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await db.sql`update orgs set timezone = 'America/Chicago' where id = 1`;
  const hours = { mon: [["09:00", "17:00"]], tue: [["09:00", "17:00"]], wed: [["09:00", "17:00"]] };
  await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, horizon_days, hours)
    values (50, 1, 'Roof estimates', 'America/Chicago', 60, 1, 3, ${db.sql.json(hours)})`;
  await db.sql`insert into calendar_links (slug, calendar_id) values ('acme-roof', 50)`;
  [{ id: leadId }] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, last_name, email, state) values (101, '5125590001', 'Rita', 'Reyes', 'rita@example.com', 'TX') returning id`;
  await db.sql`insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, body, status)
    values (${leadId}, 1, 'sms', 'in', 'provider', 'twilio', 'Can someone call me about the roof?', 'received')`;
  app = await startApp(db.url, { BASE_URL: "https://leadline.example" }, { clock });
  user = await makeUser(db.sql, { role: "agent", orgId: 1, name: "Dana Diaz", id: "agent7" });
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

test("schedule a callback → My work shows it → book on the lead's behalf → the appointment shows on the lead; axe-clean at 1280 and 390 px", async () => {
  const browser = await launchBrowser();
  try {
    const page = await (await browser.newContext({ bypassCSP: true })).newPage();
    const problems = pageProblems(page);
    await browserSignIn(page, app.base, user.email, user.password, `/console/leads/${leadId}`);
    // Collapsed: the forms are a click away, the conversation stays the page's main thing.
    expect(await page.locator("#callback-form").getAttribute("open")).toBeNull();
    await page.locator("#callback-form > summary").click();
    await page.getByLabel("Date and time (America/Chicago)").fill("2026-03-02T15:30");
    await page.getByLabel("Note (optional)").fill("Quote for the roof");
    await page.getByLabel("Also queue a dial at that time for the person it is for").check();
    expect(await axeProblems(page)).toEqual([]);
    await shoot(page, "lead-actions-form", [1280, 390]);
    await Promise.all([page.waitForURL((u) => u.search.includes("done=callback_scheduled")), page.getByRole("button", { name: "Schedule" }).click()]);
    expect(await page.locator(".notice").first().textContent()).toContain("Callback scheduled.");
    expect(await page.locator("#callbacks").textContent()).toContain("Mar 2, 2026, 3:30 PM");
    expect(await axeProblems(page)).toEqual([]);
    await shoot(page, "lead-actions-scheduled", [1280, 390]);

    await Promise.all([page.waitForURL((u) => u.pathname === "/console/my-work"), page.locator("#nav-work").click()]);
    expect(await page.locator("#work-today").textContent()).toContain("Rita Reyes");
    expect(await page.locator("#work-counts").textContent()).toContain("0 callbacks due · 1 more today");
    expect(await axeProblems(page)).toEqual([]);
    await shoot(page, "lead-actions-my-work", [1280, 390]);

    await Promise.all([page.waitForURL((u) => u.pathname === `/console/leads/${leadId}`), page.locator("#work-today a", { hasText: "Rita Reyes" }).click()]);
    await page.locator("#book-form > summary").click();
    await page.getByLabel("Calendar").selectOption("50");
    await Promise.all([page.waitForURL((u) => u.pathname.endsWith("/book")), page.getByRole("button", { name: "See open times" }).click()]);
    expect(await axeProblems(page)).toEqual([]);
    await shoot(page, "lead-actions-slots", [1280, 390]);
    await page.locator('input[name="epoch"]').nth(1).check();
    await Promise.all([page.waitForLoadState("load"), page.getByRole("button", { name: "Book for Rita Reyes" }).click()]);
    await page.waitForSelector("text=Appointment booked");
    expect(await page.locator("#h-appts + *").textContent()).toContain("Roof estimates");
    expect(await page.locator("#body").inputValue()).toContain("https://leadline.example/book/acme-roof?r=");
    expect(await axeProblems(page)).toEqual([]);
    await shoot(page, "lead-actions-booked", [1280, 390]);
    expect(problems).toEqual([]);
    expect((await db.sql`select count(*)::int as n from appointments where lead_id = ${leadId}`)[0].n).toBe(1);
  } finally {
    await browser.close();
  }
});
