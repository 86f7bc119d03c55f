// Another organization's ids are refused exactly like missing ones, on every authenticated route:
// the same status, code and body shape, so that an id's existence elsewhere cannot be learnt. The
// tables (test/harness/auth-matrix.ts) are keyed by declared route id and checked against
// declaredRoutes (src/app/app.ts): a new key route, or a console route, without an entry fails
// here; each key route's scope refusals are checked from the same table by test/auth.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { declaredRoutes } from "../src/app/app";
import type { Route } from "../src/http/route";
import { CONSOLE_ROUTES, expectSameAsMissing, formBody, KEY_ROUTES, type CrossWorld } from "./harness/auth-matrix";
import { call, startApp, type TestApp } from "./harness/app";
import { testDatabase, type TestDatabase } from "./harness/db";
import { ALL_SCOPES, makeKey, makeLead, seedWorld } from "./harness/factory";

let db: TestDatabase;
let app: TestApp;
let routes: Route[];
let acme: string;
let world: CrossWorld;

/** Console routes: tagged `Console`, or authenticated some way that is neither a key, public, a provider's signature nor a feed's Basic credentials. */
const isConsole = (r: Route) => r.tag === "Console" || !["key", "public", "provider", "basic"].includes(r.access.kind);

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  // No inbound list: an intake whose list is not the key's has nowhere to go.
  app = await startApp(db.url);
  routes = declaredRoutes(app.running.deps);
  acme = (await makeKey(db.sql, { scopes: ALL_SCOPES, org: 1, agent: "agent7" })).key;
  const bolt = (await makeKey(db.sql, { scopes: ALL_SCOPES, org: 2, agent: "agent9" })).key;
  const otherPhone = "5126660001";
  const otherLead = await makeLead(db.sql, { list: 201, phone: otherPhone, first: "Bo" });
  const otherIntakePhone = "5126660002";
  await makeLead(db.sql, { list: 201, phone: otherIntakePhone });
  const dial = await call(app.base, "/hooks/api_v1.php?r=cti/dial", { method: "POST", key: bolt, json: { phone: otherPhone } });
  expect(dial.body).toEqual({ ok: true, id: expect.any(Number), lead_id: otherLead });
  const [{ id: otherInbound }] = await db.sql<{ id: number }[]>`
    insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, body, status)
    values (${otherLead}, 2, 'sms', 'in', 'provider', 'twilio', 'hello', 'received') returning id`;
  const [{ id: otherConversation }] = await db.sql<{ id: number }[]>`select id from conversations where lead_id = ${otherLead}`;
  const ownLead = await makeLead(db.sql, { list: 101, phone: "5126660003", first: "Al" });
  await db.sql`insert into calendars (id, org_id, name, timezone, hours) values (9300, 2, 'Bolt estimates', 'America/Chicago', ${db.sql.json({ mon: [["09:00", "17:00"]] })})`;
  await db.sql`insert into calendar_links (slug, calendar_id) values ('bolt-estimates', 9300)`;
  const [{ id: otherCallback }] = await db.sql<{ id: number }[]>`
    insert into callbacks (conversation_id, lead_id, assignee, due_at, created_by, created_at)
    values (${otherConversation}, ${otherLead}, 'agent9', now() + interval '1 day', 'agent9', now()) returning id`;
  world = {
    otherInbound,
    otherConversation,
    missingConversation: 999_999_999,
    ownLead,
    otherCalendar: 9300,
    missingCalendar: 999_999,
    otherCallback,
    missingCallback: 999_999_999,
    otherLead,
    otherPhone,
    otherIntakePhone,
    otherList: 201,
    otherDial: dial.body.id,
    otherOrg: 2,
    missingLead: 999_999_999,
    missingPhone: "5126669999",
    missingList: 99_999,
    missingDial: 999_999_999,
    missingOrg: 99_999,
  };
  // The fixtures are real: organization 2 reaches them with its own key.
  expect((await call(app.base, `/hooks/api_v1.php?r=leads/${otherLead}`, { key: bolt })).status).toBe(200);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("the tables cover every authenticated route", () => {
  test("every declared key route has exactly one entry, with its declared scope and scope error", () => {
    const declared = routes.filter((r) => r.access.kind === "key");
    expect(KEY_ROUTES.map((e) => e.id).sort()).toEqual(declared.map((r) => r.id).sort());
    expect(new Set(KEY_ROUTES.map((e) => e.id)).size).toBe(KEY_ROUTES.length);
    for (const r of declared) {
      const access = r.access as Extract<Route["access"], { kind: "key" }>;
      const entry = KEY_ROUTES.find((e) => e.id === r.id)!;
      expect({ id: r.id, method: entry.method, path: entry.path.split("?")[0], scope: entry.scope, scopeError: entry.scopeError }).toEqual({
        id: r.id,
        method: r.method as "GET" | "POST",
        path: r.path,
        scope: access.scope,
        scopeError: access.scopeError,
      });
    }
  });

  test("every declared console route has an entry, and every entry a declared console route", () => {
    const declared = routes.filter(isConsole).map((r) => r.id).sort();
    expect(Object.keys(CONSOLE_ROUTES).sort()).toEqual(declared);
  });

  test("no other route is authenticated: the rest are public, a provider's signed callbacks, or a conversions feed (its own org's only: conversions.test.ts)", () => {
    const rest = routes.filter((r) => r.access.kind !== "key" && !isConsole(r));
    expect(rest.filter((r) => r.access.kind !== "public" && r.access.kind !== "provider").map((r) => r.id)).toEqual(["conversionFeed"]);
  });
});

describe("key routes: another organization's ids are answered like missing ones", () => {
  for (const entry of KEY_ROUTES) {
    if ("none" in entry.crossOrg) {
      test(`${entry.id}: ${entry.crossOrg.none}`, () => {});
      continue;
    }
    const cases = entry.crossOrg.cases;
    test(entry.id, async () => {
      const list = cases(world);
      expect(list.length).toBeGreaterThan(0);
      for (const c of list) await expectSameAsMissing(app.base, entry.id, c, { key: acme });
    }, 60_000);
  }

  test("and nothing of the other organization was touched: no dial, call, message or KPI of organization 1's requests landed there", async () => {
    const [row] = await db.sql<{ msgs: number; calls: number; kpis: number; leads: number; conversations: number }[]>`
      select (select count(*)::int from messages m join leads l on l.id = m.lead_id where l.org_id = 2 and m.id <> ${world.otherInbound}) as msgs,
             (select count(*)::int from calls c join leads l on l.id = c.lead_id where l.org_id = 2) as calls,
             (select count(*)::int from kpi_points where org_id = 2) as kpis,
             (select count(*)::int from leads where org_id = 2) as leads,
             (select count(*)::int from conversations where org_id = 2 and (status <> 'open' or assignee is not null)) as conversations`;
    expect(row).toEqual({ msgs: 0, calls: 0, kpis: 0, leads: 2, conversations: 0 });
  });
});

describe("console routes: refused without a session or permission; another organization's ids answered like missing ones", () => {
  for (const [id, entry] of Object.entries(CONSOLE_ROUTES)) {
    test(id, async () => {
      const ask = (headers: Record<string, string>) =>
        call(app.base, entry.request.path, { method: entry.request.method, json: entry.request.json, body: formBody(entry.request), headers: { ...entry.request.headers, ...headers }, redirect: "manual" });
      const none = await ask({});
      expect({ id, status: none.status, error: none.body?.error }).toEqual({ id, error: undefined, ...entry.refusals.noSession });
      if (entry.withoutPermission && entry.refusals.noPermission) {
        const denied = await ask(await entry.withoutPermission(app.base, db.sql));
        expect({ id, status: denied.status, error: denied.body?.error }).toEqual({ id, error: undefined, ...entry.refusals.noPermission });
      }
      if ("none" in entry.crossOrg) return;
      const headers = await entry.session(app.base, db.sql);
      for (const c of entry.crossOrg.cases(world)) await expectSameAsMissing(app.base, id, c, { headers });
    }, 60_000);
  }

  test("and nothing of the other organization was changed by organization 1's forms: its callback still scheduled, nothing booked on its calendar", async () => {
    const [row] = await db.sql<{ status: string; appointments: number }[]>`
      select (select status from callbacks where id = ${world.otherCallback}) as status,
             (select count(*)::int from appointments where calendar_id = ${world.otherCalendar}) as appointments`;
    expect(row).toEqual({ status: "scheduled", appointments: 0 });
  });
});
