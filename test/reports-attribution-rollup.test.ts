// The attribution report read from its rollup (sql/0030) equals the request-time query it replaced,
// kept here only as the oracle. The facts are written by the real writers over HTTP (the DNI
// script's lease, lead intake, calls.php, the booking page) and provisioning (conversion feeds),
// with the clock passed in, around midnight in New York: a lead given its first touch by a later
// call, a call of an unknown caller, feeds whose call marks change after the calls, a lead moved to
// another organization, a deleted lead, a pruned visitor. After each step, every day and the whole
// span, for both organizations, must equal the oracle; so must report_rebuild()'s figures.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { callAttribution } from "../src/dni/attribution";
import { dniEngine } from "../src/dni/instance";
import type { Sql } from "../src/db/client";
import { instantsOf } from "../src/console/period";
import { applyProvisioning } from "../src/provision/service";
import type { ProvisioningFile } from "../src/provision/model";
import { attributionReport, type AttributionRow } from "../src/reports/attribution";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { provisionPools } from "./harness/dni";
import { makeKey, seedWorld } from "./harness/factory";

setDefaultTimeout(120_000);
// 04:30 UTC on Monday 2026-11-23 is 23:30 on Sunday the 22nd in New York.
const T0 = Date.parse("2026-11-23T04:30:00.000Z");
const MINUTE = 60_000;
const ZONE = "America/New_York";
const DAYS = ["2026-11-21", "2026-11-22", "2026-11-23", "2026-11-24", "2026-11-25"];
const clock = new ManualClock(T0);

let db: TestDatabase;
let app: TestApp;
let acmeKey: string;
let boltKey: string;

/** The request-time query the report ran before sql/0030 (src/reports/attribution.ts at fb5c38e~1): the oracle. */
function oracle(sql: Sql, orgId: number, from: Date, to: Date): Promise<AttributionRow[]> {
  const touch = (a: ReturnType<typeof sql>) => sql`
    coalesce(${a}->>'source', '') as source, coalesce(${a}->>'medium', '') as medium,
    coalesce(${a}->>'campaign', '') as campaign, coalesce(${a}->>'landing', '') as landing`;
  const worth = (kind: string, secs?: ReturnType<typeof sql>) => sql`
    coalesce((select sum(x.value) from actions x where x.kind = ${kind} ${secs ? sql`and ${secs} >= x.min_secs` : sql``}), 0)`;
  return sql<AttributionRow[]>`
    with actions as (
      select distinct a->>'on' as kind, a->>'name' as name, coalesce((a->>'min_secs')::int, 0) as min_secs,
             coalesce((a->>'value')::numeric, 0) as value, a->>'currency' as currency
      from conversion_feeds f cross join lateral jsonb_array_elements(f.actions) a
      where f.org_id = ${orgId}
    ), facts as (
      select v.utm_source as source, v.utm_medium as medium, v.utm_campaign as campaign, v.landing,
             1 as visitors, 0 as calls, 0 as answered, 0 as leads, 0 as appointments, 0::numeric as value
      from dni_visitors v join dni_pools p on p.key = v.pool_key
      where p.org_id = ${orgId} and v.first_visit_at >= ${from} and v.first_visit_at < ${to}
      union all
      select ${touch(sql`t.a`)}, 0, 1, (c.secs > 0)::int, 0, 0, ${worth("call", sql`c.secs`)}
      from calls c
      left join leads l on l.id = c.lead_id
      left join api_keys k on k.id = c.key_id
      cross join lateral (select ${callAttribution(sql)} as a) t
      where coalesce(l.org_id, k.org_id) = ${orgId} and t.a is not null
        and c.occurred_at >= ${from} and c.occurred_at < ${to}
      union all
      select ${touch(sql`l.attribution`)}, 0, 0, 0, 1, 0, ${worth("lead")}
      from leads l
      where l.org_id = ${orgId} and l.attribution is not null and l.created_at >= ${from} and l.created_at < ${to}
      union all
      select ${touch(sql`l.attribution`)}, 0, 0, 0, 0, 1, ${worth("booking")}
      from appointments a
      join calendars cal on cal.id = a.calendar_id
      join leads l on l.id = a.lead_id
      where cal.org_id = ${orgId} and l.org_id = ${orgId} and l.attribution is not null
        and a.created_at >= ${from} and a.created_at < ${to}
    )
    select source, medium, campaign, landing,
           sum(visitors)::int as visitors, sum(calls)::int as calls, sum(answered)::int as answered,
           sum(leads)::int as leads, sum(appointments)::int as appointments, round(sum(value), 2)::float8 as value
    from facts
    group by source, medium, campaign, landing
    order by sum(leads) desc, sum(calls) desc, sum(visitors) desc, source, medium, campaign, landing`;
}

/** Every single day and the whole span, both organizations: the rollup's report equals the oracle's. Returns the whole span's rows of org 1 and 2. */
async function expectSame(step: string): Promise<AttributionRow[][]> {
  const periods: [string, string][] = [...DAYS.map((d): [string, string] => [d, d]), [DAYS[0], DAYS[DAYS.length - 1]]];
  const whole: AttributionRow[][] = [];
  for (const org of [1, 2]) {
    for (const [from, to] of periods) {
      const span = instantsOf(from, to, ZONE);
      const want = await oracle(db.sql, org, span.from!, span.to!);
      const got = await attributionReport(db.sql, org, from, to);
      expect({ step, org, from, to, rows: [...got] }).toEqual({ step, org, from, to, rows: [...want] });
    }
    whole.push([...(await attributionReport(db.sql, org, DAYS[0], DAYS[DAYS.length - 1]))]);
  }
  return whole;
}

let ipSeq = 0;
async function lease(visitor: string, body: Record<string, unknown>, pool = "acme-site"): Promise<string> {
  const r = await call(app.base, "/hooks/dni.php?action=lease", {
    method: "POST",
    json: { pool, visitor, ...body },
    headers: { "x-forwarded-for": `10.41.${Math.floor(++ipSeq / 250)}.${ipSeq % 250}` },
  });
  expect(r.status).toBe(200);
  await dniEngine(app.running.deps).flush();
  return r.body.number;
}
const intake = async (json: Record<string, unknown>, key = acmeKey): Promise<number> => {
  const r = await call(app.base, "/hooks/lead_intake.php", { method: "POST", key, json: { list_id: 101, ...json } });
  expect(r.status).toBe(200);
  return r.body.lead_id;
};
const report = async (json: Record<string, unknown>, key = acmeKey): Promise<{ call_id: number; lead_id: number | null }> => {
  const r = await call(app.base, "/hooks/calls.php", { method: "POST", key, json: { status: "ANSWERED", secs: 90, agent: "agent7", ...json } });
  expect(r.status).toBe(200);
  return r.body;
};
async function book(phone: string): Promise<number> {
  const slots = await call(app.base, "/book/api.php?action=slots&s=acme-estimate");
  const r = await call(app.base, "/book/api.php?action=book", {
    method: "POST",
    json: { slug: "acme-estimate", epoch: slots.body.slots[0].epoch, name: "Ann Lee", phone },
    headers: { "x-forwarded-for": `198.51.100.${++ipSeq % 250}` },
  });
  expect(r.body.ok).toBe(true);
  return r.body.appt_id;
}
const feeds = (actions: Record<string, unknown>[]) =>
  applyProvisioning(db.sql, { conversion_feeds: [{ id: "acme-ads", org_id: 1, secret: "s".repeat(24), actions }] } as unknown as ProvisioningFile);

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await provisionPools(db.sql, [
    { key: "acme-site", numbers: ["7375550101", "7375550102", "7375550103", "7375550104"] },
    { key: "bolt-site", org_id: 2, numbers: ["9035550101", "9035550102"], fallback: "9035550100", placeholder: "9035550199" },
  ]);
  await db.sql`update orgs set timezone = ${ZONE}`;
  const hours = Object.fromEntries(["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map((d) => [d, [["00:00", "23:59"]]]));
  await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours)
               values (1, 1, 'Estimates', ${ZONE}, 30, 50, 0, 14, ${db.sql.json(hours)})`;
  await db.sql`insert into calendar_links (slug, calendar_id) values ('acme-estimate', 1)`;
  app = await startApp(db.url, { NPK_IP_SALT: "rollup-test" }, { clock });
  acmeKey = (await makeKey(db.sql, { scopes: ["leads:write", "calls:write"], org: 1 })).key;
  boltKey = (await makeKey(db.sql, { scopes: ["leads:write", "calls:write"], org: 2 })).key;
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("the attribution rollup equals the request-time query", () => {
  let annId = 0;
  let bobId = 0;
  const ann = "5125557001";
  const bob = "5125557002";

  test("visitors on either side of midnight in the organization's zone; a lead named by its visitor", async () => {
    clock.set(T0 + 29 * MINUTE); // 23:59 in New York, the 22nd
    await lease("v-late", { utm: { source: "google", medium: "cpc", campaign: "spring" }, landing: "https://acme.example/roof" });
    clock.set(T0 + 31 * MINUTE); // 00:01, the 23rd
    await lease("v-early", { utm: { source: "bing", medium: "cpc", campaign: "fall" }, landing: "https://acme.example/gutter" });
    await lease("v-bolt", { utm: { source: "google", medium: "cpc", campaign: "spring" }, landing: "https://acme.example/roof" }, "bolt-site");
    annId = await intake({ phone: ann, dni_visitor: "v-late", dni_pool: "acme-site" });
    const [whole] = await expectSame("visitors and a lead");
    // The two visitors a minute apart in UTC's same day are on two days in New York.
    expect((await attributionReport(db.sql, 1, "2026-11-22", "2026-11-22")).map((r) => [r.source, r.visitors])).toEqual([["google", 1]]);
    expect((await attributionReport(db.sql, 1, "2026-11-23", "2026-11-23")).map((r) => [r.source, r.visitors, r.leads])).toEqual([
      ["google", 0, 1],
      ["bing", 1, 0],
    ]);
    expect(whole.length).toBe(2);
  });

  test("a lead without a touch, its call, then a call to a pool number that gives it its first touch", async () => {
    clock.set(T0 + 2 * 60 * MINUTE);
    bobId = await intake({ phone: bob });
    await report({ lead_id: bobId, secs: 0, status: "NO ANSWER" }); // counts for nothing yet
    await expectSame("a lead without a touch");
    const number = await lease("v-caller", { utm: { source: "yelp", medium: "referral", campaign: "" }, landing: "https://acme.example/" });
    clock.advance(5 * MINUTE);
    await report({ lead_id: bobId, to_number: number, secs: 45 });
    // Both of bob's calls and bob himself now count under the touch he was given.
    const [whole] = await expectSame("first touch given by a call");
    expect(whole.find((r) => r.source === "yelp")).toMatchObject({ calls: 2, answered: 1, leads: 1 });
    // An unknown caller's call keeps its own touch, in the reporting key's organization.
    await report({ phone: "5125559999", to_number: number, secs: 20 });
    await report({ phone: "5125559998", to_number: await lease("v-bolt-caller", { utm: { source: "bing" } }, "bolt-site"), secs: 75 }, boltKey);
    await report({ lead_id: annId, secs: 61, epoch: Math.floor((T0 + 26 * 60 * MINUTE) / 1000) }); // the 24th
    await expectSame("calls of unknown callers and a dated call");
  });

  test("bookings of attributed and unattributed leads", async () => {
    clock.set(T0 + 30 * 60 * MINUTE);
    await book(ann);
    await book("5125557099"); // a new lead, no touch
    await expectSame("bookings");
  });

  test("values: feeds written after the calls, with call marks changed twice", async () => {
    const usd = (name: string, on: string, value: number, min_secs?: number) => ({ name, on, value, currency: "USD", ...(min_secs === undefined ? {} : { min_secs }) });
    await feeds([usd("Call", "call", 100, 60), usd("Lead", "lead", 25), usd("Booked", "booking", 50)]);
    let [whole] = await expectSame("a feed with a 60 s call");
    expect(whole.find((r) => r.source === "google")!.value).toBe(100 + 25 + 50);
    await feeds([usd("Call", "call", 100, 45), usd("Short call", "call", 10, 21), usd("Lead", "lead", 25)]);
    [whole] = await expectSame("marks 21 and 45");
    expect(whole.find((r) => r.source === "yelp")!.value).toBe(100 + 10 + 25);
    clock.advance(MINUTE);
    await report({ lead_id: bobId, secs: 21 });
    await expectSame("a call after the marks changed");
  });

  test("a lead moved to another organization takes its lead, calls and appointment with it", async () => {
    // No writer moves a lead between organizations; an operator's SQL does, and the report follows.
    await db.sql`update leads set org_id = 2, list_id = 201 where id = ${annId}`;
    const [one, two] = await expectSame("ann moved to organization 2");
    expect(one.find((r) => r.source === "google")).toMatchObject({ visitors: 1, leads: 0, calls: 0, appointments: 0 });
    expect(two.find((r) => r.landing === "https://acme.example/roof")).toMatchObject({ leads: 1, calls: 1, appointments: 0 });
  });

  test("a deleted lead and a pruned visitor leave the report", async () => {
    await db.sql`delete from leads where id = ${bobId}`;
    await expectSame("bob deleted");
    await db.sql`delete from dni_visitors where visitor = 'v-late'`;
    const [one] = await expectSame("v-late pruned");
    expect(one.find((r) => r.source === "google")).toBeUndefined();
  });

  test("report_rebuild recomputes the same figures", async () => {
    const before = await expectSame("before the rebuild");
    await db.sql`select report_rebuild(null)`;
    expect(await expectSame("after the rebuild")).toEqual(before);
    const [{ n }] = await db.sql<{ n: number }[]>`select count(*)::int as n from report_touch_daily`;
    expect(n).toBeGreaterThan(0);
  });
});

describe("a lead's first touch given while another transaction counts its call", () => {
  // Two real transactions on two connections. Without the lead locked FOR SHARE while a call is
  // counted, the call's transaction reads the lead as it was (no touch: nothing counted) and the
  // touch's transaction recounts the lead's calls without seeing the uncommitted call: the call
  // would be missing from the report for good.
  const TOUCH = { source: "race", medium: "cpc", campaign: "r", landing: "https://acme.example/race" };
  const newLead = async (phone: string) =>
    (await db.sql<{ id: number }[]>`insert into leads (list_id, org_id, phone, created_at) values (101, 1, ${phone}, '2026-11-24T15:00:00Z') returning id`)[0].id;
  const insertCall = (sql: Sql, lead: number) =>
    sql`insert into calls (lead_id, phone, status, secs, agent, occurred_at) values (${lead}, '5125550000', 'ANSWERED', 30, 'agent7', '2026-11-24T16:00:00Z')`;
  const give = (sql: Sql, lead: number) => sql`update leads set attribution = ${sql.json(TOUCH)} where id = ${lead}`;
  const raceRow = async () => (await attributionReport(db.sql, 1, "2026-11-24", "2026-11-24")).find((r) => r.source === "race");

  test("the touch first: the call's transaction waits for it and counts the call under the touch", async () => {
    const lead = await newLead("5125558001");
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let given!: () => void;
    const touched = new Promise<void>((r) => (given = r));
    const t1 = db.sql.begin(async (tx) => {
      await give(tx as unknown as Sql, lead);
      given();
      await held;
    });
    await touched;
    let callDone = false;
    const t2 = db.sql.begin((tx) => insertCall(tx as unknown as Sql, lead)).then(() => (callDone = true));
    await Bun.sleep(300);
    expect(callDone).toBe(false); // waiting for the lead's row
    release();
    await Promise.all([t1, t2]);
    expect(await raceRow()).toMatchObject({ calls: 1, leads: 1 });
    await expectSame("race: touch first");
  });

  test("the call first: the touch's transaction waits for it and recounts the call", async () => {
    const lead = await newLead("5125558002");
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let inserted!: () => void;
    const counted = new Promise<void>((r) => (inserted = r));
    const t2 = db.sql.begin(async (tx) => {
      await insertCall(tx as unknown as Sql, lead);
      inserted();
      await held;
    });
    await counted;
    let touchDone = false;
    const t1 = db.sql.begin((tx) => give(tx as unknown as Sql, lead)).then(() => (touchDone = true));
    await Bun.sleep(300);
    expect(touchDone).toBe(false);
    release();
    await Promise.all([t1, t2]);
    expect(await raceRow()).toMatchObject({ calls: 2, leads: 2 });
    await expectSame("race: call first");
  });
});

