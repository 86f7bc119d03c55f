// The console's remaining settings over HTTP, across two organizations: the first-steps checklist,
// booking links added and removed from a calendar's page (a slug held by another organization never
// moves, here or from a provisioning file), invitations emailed through the organization's SMTP.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);

let db: TestDatabase;
let app: TestApp;
let acme: ConsoleClient;
let bolt: ConsoleClient;
let admin: ConsoleClient;

const text = (r: { body: unknown }) => String(r.body);
const ticks = (page: string) => [...page.matchAll(/<li class="(done|todo)">.*?<a href="[^"]+">([^<]+)<\/a>/g)].map((m) => `${m[2]}: ${m[1]}`);

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  app = await startApp(db.url);
  const [m, b, s] = await Promise.all([makeUser(db.sql, { role: "manager", orgId: 1 }), makeUser(db.sql, { role: "manager", orgId: 2 }), makeUser(db.sql, { role: "admin", orgId: null })]);
  [acme, bolt, admin] = await Promise.all([signIn(app.base, m.email, m.password), signIn(app.base, b.email, b.password), signIn(app.base, s.email, s.password)]);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("first steps", () => {
  test("each step ticked when the viewer's organization has one; another organization's do not count", async () => {
    const first = await acme.get("/console/settings/first-steps");
    expect(first.status).toBe(200);
    expect(ticks(text(first))).toEqual(["Organization: done", "Calendar and booking link: todo", "Number pool: todo", "Webhook endpoint: todo", "Invite users: todo"]);
    // Organization 2's calendar, link, pool, webhook and user tick nothing for organization 1.
    await db.sql`insert into calendars (id, org_id, name, timezone, hours) values (8801, 2, 'Bolt', 'America/Chicago', '{}')`;
    await db.sql`insert into calendar_links (slug, calendar_id) values ('bolt-first', 8801)`;
    await db.sql`insert into dni_pools (key, org_id) values ('bolt-first', 2)`;
    await db.sql`insert into webhooks (id, org_id, url, secret, events) values (8801, 2, 'https://hooks.bolt.example/x', 'whsec_x', '{*}')`;
    await makeUser(db.sql, { role: "agent", orgId: 2 });
    expect(ticks(text(await acme.get("/console/settings/first-steps")))).toEqual(["Organization: done", "Calendar and booking link: todo", "Number pool: todo", "Webhook endpoint: todo", "Invite users: todo"]);
    expect(ticks(text(await bolt.get("/console/settings/first-steps")))).toEqual(["Organization: done", "Calendar and booking link: done", "Number pool: done", "Webhook endpoint: done", "Invite users: done"]);
    // The admin's scope is every organization.
    expect(text(await admin.get("/console/settings/first-steps"))).toContain("Everything is set up");
  });
});
