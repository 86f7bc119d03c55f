// The Calls page's totals (issue 30): answered, missed and talk time of every call the filters
// match (not only the page shown), above the table, with numbers and phones formatted as the rest
// of the console formats them; per viewer, never another organization's calls. Over HTTP, on the
// served app, the console driven with a session as a browser sends it.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { callTotals, noCallFilter } from "../src/calls/log";
import { ManualClock } from "./harness/clock";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { startApp, type TestApp } from "./harness/app";
import { makeKey, makeLead, seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);
let db: TestDatabase;
let app: TestApp;
const clock = new ManualClock(Date.UTC(2026, 10, 23, 17));
const as: Record<"admin" | "manager" | "manager2" | "agent", ConsoleClient> = {} as never;

/** The figures of the totals block, in order: calls, answered, missed, talk time. */
function totals(body: string): string[] {
  const block = /<dl class="totals">([\s\S]*?)<\/dl>/.exec(body);
  if (!block) throw new Error("no totals on the page");
  return [...block[1].matchAll(/<dd>([^<]*)<\/dd>/g)].map((m) => m[1]);
}

beforeAll(async () => {
  db = await testDatabase();
  const sql = db.sql;
  await seedWorld(sql);
  await sql`update orgs set timezone = 'America/New_York'`;
  const ann = await makeLead(sql, { phone: "5125551000", first: "Ann", last: "Acme" });
  const bob = await makeLead(sql, { list: 201, phone: "7375551000", first: "Bob", last: "Bolt" });
  const acmeKey = await makeKey(sql, { scopes: ["calls:write"], org: 1 });
  // Organization 1: three answered calls on Nov 20 (New York), two missed on the 21st, one by
  // another agent, and a reporting key's call without a lead from a pool.
  await sql`insert into calls (lead_id, phone, to_number, status, secs, agent, occurred_at) values
    (${ann}, '5125551000', '5125550101', 'ANSWERED', 60, 'agent7', '2026-11-20T14:00:00Z'),
    (${ann}, '5125551000', '5125550101', 'ANSWERED', 120, 'agent7', '2026-11-20T15:00:00Z'),
    (${ann}, '5125551000', '5125550101', 'ANSWERED', 3700, 'agent7', '2026-11-21T04:30:00Z'),
    (${ann}, '5125551000', '5125550101', 'NO ANSWER', 0, 'agent7', '2026-11-21T16:00:00Z'),
    (${ann}, '5125551000', '5125550101', 'NO ANSWER', 0, 'agent7', '2026-11-21T17:00:00Z'),
    (${ann}, '5125551000', '5125550101', 'ANSWERED', 40, 'agentx', '2026-11-21T18:00:00Z')`;
  await sql`insert into calls (key_id, phone, status, secs, agent, occurred_at, dni_pool) values
    (${acmeKey.id}, '5125559999', 'ANSWERED', 5, 'agent7', '2026-11-22T12:00:00Z', 'acme-site')`;
  // Organization 2: 1,200 missed calls and one answered.
  await sql`insert into calls (lead_id, phone, status, secs, agent, occurred_at)
    select ${bob}, '7375551000', 'NO ANSWER', 0, 'agent9', timestamptz '2026-11-20T12:00:00Z' + i * interval '1 second' from generate_series(1, 1200) i`;
  await sql`insert into calls (lead_id, phone, status, secs, agent, occurred_at) values (${bob}, '7375551000', 'ANSWERED', 30, 'agent9', '2026-11-21T12:00:00Z')`;

  app = await startApp(db.url, { BASE_URL: "https://leads.example" }, { clock });
  const users = {
    admin: await makeUser(db.sql, { role: "admin", orgId: null }),
    manager: await makeUser(db.sql, { role: "manager", orgId: 1 }),
    manager2: await makeUser(db.sql, { role: "manager", orgId: 2 }),
    agent: await makeUser(db.sql, { role: "agent", orgId: 1, id: "agentx" }),
  };
  for (const [role, u] of Object.entries(users)) as[role as keyof typeof as] = await signIn(app.base, u.email, u.password);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("Calls page totals", () => {
  test("every call of the organization, above the table; talk time past an hour as h:mm:ss; phones formatted", async () => {
    const r = await as.manager.get("/console/calls");
    expect(r.status).toBe(200);
    expect(totals(r.body)).toEqual(["7", "5", "2", "1:05:25"]);
    expect(r.body.indexOf('class="totals"')).toBeLessThan(r.body.indexOf("<table"));
    expect(r.body).toContain("(512) 555-1000");
    expect(r.body).toContain("(512) 555-0101");
    expect(r.body).not.toContain(">5125551000<");
  });

  test("the filters' set: days in the organization's zone, an agent, a status, a pool", async () => {
    // 23:30 on the 20th in New York is 04:30 UTC on the 21st: the 20th's.
    expect(totals((await as.manager.get("/console/calls?from=2026-11-20&to=2026-11-20")).body)).toEqual(["3", "3", "0", "1:04:40"]);
    expect(totals((await as.manager.get("/console/calls?from=2026-11-21&to=2026-11-22")).body)).toEqual(["4", "2", "2", "0:45"]);
    expect(totals((await as.manager.get("/console/calls?agent=agentx")).body)).toEqual(["1", "1", "0", "0:40"]);
    expect(totals((await as.manager.get("/console/calls?status=NO+ANSWER")).body)).toEqual(["2", "0", "2", "0:00"]);
    expect(totals((await as.manager.get("/console/calls?pool=acme-site")).body)).toEqual(["1", "1", "0", "0:05"]);
    expect(totals((await as.manager.get("/console/calls?agent=nobody")).body)).toEqual(["0", "0", "0", "0:00"]);
  });

  test("an agent's totals are its own calls'; another organization's are never counted, whatever a manager names", async () => {
    expect(totals((await as.agent.get("/console/calls")).body)).toEqual(["1", "1", "0", "0:40"]);
    expect(totals((await as.manager.get("/console/calls?org=2")).body)).toEqual(["7", "5", "2", "1:05:25"]);
    expect(totals((await as.manager2.get("/console/calls")).body)).toEqual(["1,201", "1", "1,200", "0:30"]);
    expect(totals((await as.admin.get("/console/calls?org=2")).body)).toEqual(["1,201", "1", "1,200", "0:30"]);
    // Every organization at once: counted from the calls themselves.
    expect(totals((await as.admin.get("/console/calls")).body)).toEqual(["1,208", "6", "1,202", "1:05:55"]);
  });

  test("totals read from the daily rollups equal a count of the calls under the same filter", async () => {
    const manager = { orgId: 1, type: "user" as const, id: "m", agent: null, keyId: null };
    const cases = [
      { filter: noCallFilter, days: { from: null, to: null } },
      { filter: { ...noCallFilter, from: new Date("2026-11-21T05:00:00Z"), to: new Date("2026-11-23T05:00:00Z") }, days: { from: "2026-11-21", to: "2026-11-22" } },
      { filter: { ...noCallFilter, agent: "agent7" }, days: { from: null, to: null } },
    ];
    for (const c of cases) {
      const fromRollups = await callTotals(db.sql, manager, c.filter, c.days);
      // The same filter with a status that every call has: the direct count's path.
      const [direct] = await db.sql<{ answered: number; missed: number; talk: number }[]>`
        select count(*) filter (where c.secs > 0)::int as answered, count(*) filter (where c.secs = 0)::int as missed, coalesce(sum(c.secs), 0)::int as talk
        from calls c left join leads l on l.id = c.lead_id left join api_keys k on k.id = c.key_id
        where coalesce(l.org_id, k.org_id) = 1
          and (${c.filter.from}::timestamptz is null or c.occurred_at >= ${c.filter.from})
          and (${c.filter.to}::timestamptz is null or c.occurred_at < ${c.filter.to})
          and (${c.filter.agent}::text is null or c.agent = ${c.filter.agent})`;
      expect(fromRollups).toEqual({ answered: direct.answered, missed: direct.missed, talkSecs: direct.talk });
    }
  });
});
