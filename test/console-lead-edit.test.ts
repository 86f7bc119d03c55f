// Editing a lead from the console (/console/leads/{id}/edit): the form goes through updateLead
// (intake's field rules, audited, lead.updated in the outbox), confined to the viewer's organization.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { axeProblems, launchBrowser, pageProblems } from "./harness/browser";
import { browserSignIn, makeUser, shoot, signIn, type ConsoleClient, type MadeUser } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";

let db: TestDatabase;
let app: TestApp;
let agent: ConsoleClient;
let boltAgent: ConsoleClient;
let agentUser: MadeUser;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url);
  const a = (agentUser = await makeUser(db.sql, { role: "agent", orgId: 1 }));
  agent = await signIn(app.base, a.email, a.password);
  const b = await makeUser(db.sql, { role: "agent", orgId: 2 });
  boltAgent = await signIn(app.base, b.email, b.password);
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

let seq = 0;
async function lead(list = 101): Promise<number> {
  const phone = `512558${String(++seq).padStart(4, "0")}`;
  const [row] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, last_name, email) values (${list}, ${phone}, 'Jose', 'Perez', ${`jose${seq}@example.com`}) returning id`;
  return row.id;
}
const stored = async (id: number) =>
  (await db.sql<{ first_name: string; phone: string; status: string }[]>`select first_name, phone, status from leads where id = ${id}`)[0];
const tags = async (id: number) => (await db.sql<{ tag: string }[]>`select tag from lead_tags where lead_id = ${id} order by lower(tag)`).map((r) => r.tag);
const events = (id: number) => db.sql<{ payload: any }[]>`select payload from outbox_events where type = 'lead.updated' and (payload->'data'->>'lead_id')::bigint = ${id} order by id`;

describe("the edit form", () => {
  test("shows the lead's fields, the organization's statuses and its tags; the lead page links to it", async () => {
    const id = await lead();
    const page = await agent.get(`/console/leads/${id}/edit`);
    expect(page.status).toBe(200);
    expect(page.body).toContain(`action="/console/leads/${id}/edit"`);
    expect(page.body).toContain('name="first_name" value="Jose"');
    expect(page.body).toContain('<option value="NEW" selected>New</option>');
    expect(page.body).toContain('<option value="WRONG_NUMBER">Wrong number</option>');
    expect((await agent.get(`/console/leads/${id}`)).body).toContain(`href="/console/leads/${id}/edit"`);
  });

  test("saves what changed: fields, status, tags added and removed, audited, lead.updated with the previous values", async () => {
    const id = await lead();
    const first = await agent.post(`/console/leads/${id}/edit`, { first_name: "José", status: "CONTACTED", tags: "VIP, spanish" });
    expect(first.status).toBe(303);
    expect(first.headers.get("location")).toBe(`/console/leads/${id}?done=lead_updated`);
    expect(await stored(id)).toMatchObject({ first_name: "José", status: "CONTACTED" });
    expect(await tags(id)).toEqual(["spanish", "VIP"]);
    const second = await agent.post(`/console/leads/${id}/edit`, { first_name: "José", status: "CONTACTED", tags: "vip" });
    expect(second.headers.get("location")).toBe(`/console/leads/${id}?done=lead_updated`);
    expect(await tags(id)).toEqual(["VIP"]);
    const sent = await events(id);
    expect(sent.map((e) => e.payload.data.changes)).toEqual([
      { first_name: { from: "Jose", to: "José" }, status: { from: "NEW", to: "CONTACTED" }, tags: { from: [], to: ["spanish", "VIP"] } },
      { tags: { from: ["spanish", "VIP"], to: ["VIP"] } },
    ]);
    const audits = await db.sql`select action from audit_log where target = ${`lead:${id}`} and action = 'lead.update'`;
    expect(audits).toHaveLength(2);
  });

  test("a value intake refuses changes nothing and says so", async () => {
    const id = await lead();
    const bad = await agent.post(`/console/leads/${id}/edit`, { first_name: "Joe", phone: "555-12" });
    expect(bad.status).toBe(303);
    expect(bad.headers.get("location")).toBe(`/console/leads/${id}/edit?done=invalid`);
    expect((await stored(id)).first_name).toBe("Jose");
    const status = await agent.post(`/console/leads/${id}/edit`, { status: "NO_SUCH" });
    expect(status.headers.get("location")).toBe(`/console/leads/${id}/edit?done=invalid`);
    expect((await stored(id)).status).toBe("NEW");
    expect(await events(id)).toHaveLength(0);
    expect((await agent.get(`/console/leads/${id}/edit?done=invalid`)).body).toContain("The lead was not changed");
  });

  test("a phone another lead of the list has is refused", async () => {
    const a = await lead();
    const b = await lead();
    const [{ phone }] = await db.sql<{ phone: string }[]>`select phone from leads where id = ${a}`;
    const r = await agent.post(`/console/leads/${b}/edit`, { phone });
    expect(r.headers.get("location")).toBe(`/console/leads/${b}/edit?done=duplicate_phone`);
  });

  test("another organization's lead is a 404 like a missing one, and is not changed", async () => {
    const id = await lead();
    expect((await boltAgent.get(`/console/leads/${id}/edit`)).status).toBe(404);
    expect((await boltAgent.post(`/console/leads/${id}/edit`, { first_name: "Mallory" })).status).toBe(404);
    expect((await stored(id)).first_name).toBe("Jose");
  });
});

describe("a new lead", () => {
  test("an unknown caller's call links to the form with its phone filled in (issue 30); only digits are carried over", async () => {
    const m = await makeUser(db.sql, { role: "manager", orgId: 1 });
    const manager = await signIn(app.base, m.email, m.password);
    const key = await makeKey(db.sql, { scopes: ["calls:write"], org: 1 });
    await db.sql`insert into calls (key_id, phone, status, secs, agent, occurred_at) values (${key.id}, '5125554321', 'NO ANSWER', 0, 'agent7', now())`;
    const calls = await manager.get("/console/calls");
    expect(calls.body).toContain('href="/console/new-lead?phone=5125554321"');
    const form = await manager.get("/console/new-lead?phone=5125554321");
    expect(form.body).toContain('name="phone" type="tel" autocomplete="off" value="5125554321"');
    const odd = await manager.get(`/console/new-lead?phone=${encodeURIComponent('"><script>1</script>512')}`);
    expect(odd.status).toBe(200);
    expect(odd.body).toContain('value="1512"');
    expect(odd.body).not.toContain("<script>1");
  });

  test("the leads page links to the form, which offers the organization's lists only", async () => {
    expect((await agent.get("/console/leads")).body).toContain('href="/console/new-lead"');
    const form = await agent.get("/console/new-lead");
    expect(form.status).toBe(200);
    expect(form.body).toContain('<option value="101">');
    expect(form.body).not.toContain('<option value="201">');
  });

  test("is intake with source console: created and audited, then a duplicate opens the existing lead", async () => {
    const phone = `512557${String(++seq).padStart(4, "0")}`;
    const made = await agent.post("/console/new-lead", { list_id: "102", phone: `(${phone.slice(0, 3)}) ${phone.slice(3, 6)}-${phone.slice(6)}`, first_name: "Walk", last_name: "In" });
    expect(made.status).toBe(303);
    const [row] = await db.sql<{ id: number; source: string; list_id: number }[]>`select id, source, list_id from leads where phone = ${phone}`;
    expect(row).toMatchObject({ source: "console", list_id: 102 });
    expect(made.headers.get("location")).toBe(`/console/leads/${row.id}?done=lead_created`);
    expect(await db.sql`select 1 from audit_log where action = 'lead.create' and target = ${`lead:${row.id}`}`).toHaveLength(1);
    expect(await db.sql`select 1 from outbox_events where type = 'lead.created' and (payload->'data'->>'lead_id')::bigint = ${row.id}`).toHaveLength(1);
    const again = await agent.post("/console/new-lead", { list_id: "102", phone, first_name: "Someone else" });
    expect(again.headers.get("location")).toBe(`/console/leads/${row.id}?done=lead_duplicate`);
    expect((await agent.get(`/console/leads/${row.id}?done=lead_duplicate`)).body).toContain("already had that phone");
    expect(await db.sql`select 1 from leads where phone = ${phone}`).toHaveLength(1);
  });

  test("intake's refusals: a bad phone, another organization's list; nothing created", async () => {
    const before = (await db.sql`select count(*)::int as n from leads`)[0].n;
    expect((await agent.post("/console/new-lead", { list_id: "101", phone: "512-55" })).headers.get("location")).toBe("/console/new-lead?done=bad_phone");
    expect((await agent.post("/console/new-lead", { list_id: "201", phone: "5125570999" })).headers.get("location")).toBe("/console/new-lead?done=invalid_list");
    expect((await boltAgent.post("/console/new-lead", { list_id: "101", phone: "5125570998" })).headers.get("location")).toBe("/console/new-lead?done=invalid_list");
    expect((await db.sql`select count(*)::int as n from leads`)[0].n).toBe(before);
    expect((await agent.get("/console/new-lead?done=bad_phone")).body).toContain("No lead was created");
  });
});

describe("in Chromium", () => {
  test("the edit and new-lead forms: axe-clean, no page errors, screenshots at 1280 and 390 px; the edit form saves", async () => {
    const id = await lead();
    const browser = await launchBrowser();
    try {
      const page = await (await browser.newContext({ bypassCSP: true })).newPage();
      const problems = pageProblems(page);
      await browserSignIn(page, app.base, agentUser.email, agentUser.password, `/console/leads/${id}/edit`);
      expect(await axeProblems(page)).toEqual([]);
      await shoot(page, "lead-edit", [1280, 390]);
      await page.getByLabel("City").fill("Austin");
      await page.getByLabel("Status").selectOption("QUALIFIED");
      await Promise.all([page.waitForURL((u) => !u.pathname.endsWith("/edit")), page.getByRole("button", { name: "Save" }).click()]);
      expect(await page.textContent("body")).toContain("Lead updated.");
      expect((await db.sql`select city, status from leads where id = ${id}`)[0]).toEqual({ city: "Austin", status: "QUALIFIED" });
      await page.goto(app.base + "/console/new-lead");
      expect(await axeProblems(page)).toEqual([]);
      await shoot(page, "new-lead", [1280, 390]);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);
});
