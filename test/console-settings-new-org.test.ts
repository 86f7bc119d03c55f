// An admin creates an organization in the console (the owner's first day on an empty installation):
// written create-only through the provisioning service and audited org.create by the admin; First
// steps then ticks "organization"; a manager gets the 404 page for the form and the post; two admins
// racing for one id get one organization and one refusal on the form; every bad input is the form
// again with its values and the reason in words, never a 500, and nothing is written.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems } from "./harness/browser";
import { browserSignIn, makeUser, shoot, signIn, type ConsoleClient, type MadeUser } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";

setDefaultTimeout(60_000);

let db: TestDatabase;
let app: TestApp;
let admin: ConsoleClient;
let admin2: ConsoleClient;
let adminId = "";
let adminUser: MadeUser;

const text = (r: { body: unknown }) => String(r.body);
const ticks = (page: string) => [...page.matchAll(/<li class="(done|todo)">.*?<a href="([^"]+)">([^<]+)<\/a>/g)].map((m) => `${m[3]} ${m[2]}: ${m[1]}`);
const orgCount = async () => (await db.sql<{ n: number }[]>`select count(*)::int as n from orgs`)[0]!.n;

const form = (changes: Record<string, string> = {}) => ({
  id: "",
  name: "Acme",
  company: "Acme Roofing LLC",
  timezone: "America/Chicago",
  quiet_start: "21:00",
  quiet_end: "08:00",
  consent: "explicit",
  billing_status: "",
  billing_subscription: "none",
  ...changes,
});

beforeAll(async () => {
  db = await testDatabase();
  app = await startApp(db.url);
  const [a, b] = await Promise.all([makeUser(db.sql, { role: "admin", orgId: null }), makeUser(db.sql, { role: "admin", orgId: null })]);
  adminId = a.id;
  adminUser = a;
  [admin, admin2] = await Promise.all([signIn(app.base, a.email, a.password), signIn(app.base, b.email, b.password)]);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("new organization", () => {
  test("on an empty installation an admin creates the first: org row, audited org.create by the admin, the settings page with a flash, First steps ticked", async () => {
    expect(await orgCount()).toBe(0);
    const before = text(await admin.get("/console/settings/first-steps"));
    expect(ticks(before)[0]).toBe("Organization /console/settings/orgs/new: todo");
    expect(text(await admin.get("/console/settings/org"))).toContain('href="/console/settings/orgs/new"');

    const blank = await admin.get("/console/settings/orgs/new");
    expect(blank.status).toBe(200);
    expect(text(blank)).toContain('name="id" type="text" value="1"');

    const res = await admin.post("/console/settings/orgs/new", form({ id: "1" }));
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/console/settings/org?org=1&done=created");

    const [row] = await db.sql`select id, name, company, timezone, quiet_start, quiet_end, consent from orgs`;
    expect(row).toEqual({ id: 1, name: "Acme", company: "Acme Roofing LLC", timezone: "America/Chicago", quiet_start: "21:00", quiet_end: "08:00", consent: "explicit" } as never);
    // Provisioning's default for a new organization: no billing (its sends are refused until set).
    expect(await db.sql`select * from org_billing where org_id = 1`).toHaveLength(0);

    const audit = await db.sql<{ action: string; actor_type: string; actor_id: string; org_id: number }[]>`select action, actor_type, actor_id, org_id from audit_log where target = 'org:1'`;
    expect(audit).toEqual([{ action: "org.create", actor_type: "user", actor_id: adminId, org_id: 1 }] as never);

    const page = text(await admin.get(res.headers.get("location")!));
    expect(page).toContain("Organization created.");
    expect(page).toContain('value="Acme"');
    expect(ticks(text(await admin.get("/console/settings/first-steps")))[0]).toBe("Organization /console/settings/org: done");
  });

  test("an empty id takes the next free one; billing chosen by the admin is written", async () => {
    expect(text(await admin.get("/console/settings/orgs/new"))).toContain('name="id" type="text" value="2"');
    const res = await admin.post("/console/settings/orgs/new", form({ name: "Bolt", billing_status: "active", billing_subscription: "active" }));
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/console/settings/org?org=2&done=created");
    expect(await db.sql`select status, subscription from org_billing where org_id = 2`).toEqual([{ status: "active", subscription: "active" }] as never);
  });

  test("a manager gets the 404 page for the form and the post; nothing is created", async () => {
    const m = await makeUser(db.sql, { role: "manager", orgId: 1 });
    const manager = await signIn(app.base, m.email, m.password);
    const n = await orgCount();
    expect((await manager.get("/console/settings/orgs/new")).status).toBe(404);
    expect((await manager.post("/console/settings/orgs/new", form({ id: "50", name: "Manager's own" }))).status).toBe(404);
    expect(await orgCount()).toBe(n);
    expect(text(await manager.get("/console/settings/org"))).not.toContain("/console/settings/orgs/new");
  });

  test("the post needs the session's CSRF token", async () => {
    const n = await orgCount();
    expect((await admin.post("/console/settings/orgs/new", { ...form({ id: "60" }), _csrf: "forged" })).status).toBe(403);
    expect(await orgCount()).toBe(n);
  });

  test("two admins creating the same id at once: one created, the other refused on the form, nothing overwritten", async () => {
    const [a, b] = await Promise.all([
      admin.post("/console/settings/orgs/new", form({ id: "7", name: "First of two" })),
      admin2.post("/console/settings/orgs/new", form({ id: "7", name: "Second of two" })),
    ]);
    expect([a.status, b.status].sort()).toEqual([303, 422]);
    const refused = a.status === 422 ? a : b;
    const won = a.status === 303 ? "First of two" : "Second of two";
    expect(text(refused)).toContain("Organization 7 exists already: choose another id");
    expect((await db.sql`select name from orgs where id = 7`)[0]!.name).toBe(won);
    expect(await db.sql`select action from audit_log where target = 'org:7'`).toEqual([{ action: "org.create" }] as never);
    // Taken before the form was sent: refused the same way, the stored organization untouched.
    const again = await admin.post("/console/settings/orgs/new", form({ id: "1", name: "Overwrite?" }));
    expect(again.status).toBe(422);
    expect(text(again)).toContain("Organization 1 exists already");
    expect(text(again)).toContain('value="Overwrite?"');
    expect((await db.sql`select name from orgs where id = 1`)[0]!.name).toBe("Acme");
  });

  const refusals: [string, Record<string, string>, string][] = [
    ["empty name", { name: "  " }, "name"],
    ["unknown zone", { timezone: "Mars/Olympus_Mons" }, 'unknown time zone "Mars/Olympus_Mons"'],
    ["malformed quiet hours", { quiet_start: "7pm" }, "quiet_hours.start"],
    ["quiet hours half given", { quiet_end: "" }, "quiet_hours.end"],
    ["id not a number", { id: "abc" }, "id: a whole number"],
    ["id zero", { id: "0" }, "id: a whole number"],
    ["id negative", { id: "-3" }, "id: a whole number"],
    ["id too large", { id: "99999999999999999999" }, "id: a whole number"],
    ["id with a fraction", { id: "4.5" }, "id: a whole number"],
    ["consent unknown", { consent: "maybe" }, "consent"],
    ["billing status unknown", { billing_status: "gratis" }, "billing.status"],
    ["subscription unknown", { billing_status: "active", billing_subscription: "lifetime" }, "billing.subscription"],
  ];
  for (const [what, changes, reason] of refusals) {
    test(`refused (${what}): the form again with its values and the reason, 422, nothing written`, async () => {
      const n = await orgCount();
      const sent = form({ id: "40", name: "Kept name", ...changes });
      const res = await admin.post("/console/settings/orgs/new", sent);
      expect(res.status).toBe(422);
      const page = text(res);
      expect(page).toContain("Nothing was saved");
      expect(page).toContain(reason.replaceAll('"', "&quot;"));
      if (sent.name.trim() !== "") expect(page).toContain(`value="${sent.name}"`);
      expect(page).toContain(`value="${sent.timezone}"`);
      expect(await orgCount()).toBe(n);
      expect(await db.sql`select 1 from audit_log where target = 'org:40'`).toHaveLength(0);
    });
  }

  test("fields of the wrong shape or unknown fields are never a 500", async () => {
    const res = await admin.post("/console/settings/orgs/new", { ...form({ id: "41" }), extra: "x", "name[]": "y" });
    expect(res.status).toBeLessThan(500);
    const empty = await admin.post("/console/settings/orgs/new", {});
    expect(empty.status).toBe(422);
  });

  test("in Chromium: the form, a refusal with its values kept, then the new organization's page with the flash; axe clean at 1280 and 390 px", async () => {
    const browser = await launchBrowser();
    try {
      // axe is injected as a script: the test's own context allows it.
      const context = await browser.newContext({ bypassCSP: true });
      const page = await context.newPage();
      const problems = pageProblems(page);
      const check = async (name: string) => {
        expect(await axeProblems(page)).toEqual([]);
        await shoot(page, `settings-new-org-${name}`, [1280, 390]);
      };
      await browserSignIn(page, app.base, adminUser.email, adminUser.password, "/console/settings/org");
      await Promise.all([page.waitForURL((u) => u.pathname === "/console/settings/orgs/new"), page.getByRole("link", { name: "New organization" }).click()]);
      await check("form");
      const id = await page.getByLabel("Id").inputValue();
      await page.getByLabel("Name").fill("Cedar Plumbing");
      await page.getByLabel("Time zone").fill("Europe/Atlantis");
      await page.getByLabel("Quiet hours from").fill("20:00");
      await page.getByLabel("Quiet hours until").fill("07:30");
      await page.getByRole("button", { name: "Create the organization" }).click();
      await page.getByRole("alert").waitFor();
      expect(await page.getByRole("alert").textContent()).toContain('unknown time zone "Europe/Atlantis"');
      expect(await page.getByLabel("Name").inputValue()).toBe("Cedar Plumbing");
      await check("refused");
      await page.getByLabel("Time zone").fill("Europe/Dublin");
      await Promise.all([page.waitForURL((u) => u.searchParams.get("done") === "created"), page.getByRole("button", { name: "Create the organization" }).click()]);
      expect(new URL(page.url()).searchParams.get("org")).toBe(id);
      expect(await page.getByRole("status").textContent()).toContain("Organization created.");
      await check("created");
      expect(await db.sql`select name, timezone, quiet_start, quiet_end from orgs where id = ${Number(id)}`).toEqual([{ name: "Cedar Plumbing", timezone: "Europe/Dublin", quiet_start: "20:00", quiet_end: "07:30" }] as never);
      // The refusal is answered 422 on purpose (the form again): Chromium logs that status.
      expect(problems.filter((p) => !p.includes("status of 422 (Unprocessable Entity)"))).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
