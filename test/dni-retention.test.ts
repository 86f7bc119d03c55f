// DNI retention: visitors and their hold history past DNI_VISITOR_RETENTION_DAYS, browser events
// past DNI_EVENT_RETENTION_DAYS, pruned in batches with the clock passed in; what is still in use
// (a live hold, a recent call's attribution, a number's current hold) is never pruned.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { loadConfig } from "../src/config";
import { pruneDni } from "../src/dni/prune";
import { testDatabase, type TestDatabase } from "./harness/db";
import { poolNumbers, provisionPools, T0 } from "./harness/dni";

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
  await provisionPools(db.sql, [{ numbers: poolNumbers(3) }]);
});
afterAll(() => db?.drop());

const DAY = 86_400_000;
const RETENTION = { visitorDays: 400, eventDays: 90 };
const [N1, N2, N3] = poolNumbers(3);
const ago = (days: number) => new Date(T0 - days * DAY);

async function visitor(name: string, lastVisitDaysAgo: number): Promise<number> {
  const [v] = await db.sql<{ id: number }[]>`
    insert into dni_visitors (pool_key, visitor, first_visit_at, last_visit_at)
    values ('acme-site', ${name}, ${ago(lastVisitDaysAgo + 1)}, ${ago(lastVisitDaysAgo)}) returning id`;
  return v.id;
}

async function history(number: string, visitorId: number, endedDaysAgo: number): Promise<number> {
  const [h] = await db.sql<{ id: number }[]>`
    insert into dni_hold_history (pool_key, number, visitor_id, started_at, expires_at)
    values ('acme-site', ${number}, ${visitorId}, ${new Date(T0 - endedDaysAgo * DAY - 1800_000)}, ${ago(endedDaysAgo)})
    returning id`;
  return h.id;
}

/** Makes history row `holdId` the number's current hold, ending `inMs` from T0 (negative: expired). */
async function current(number: string, holdId: number, visitorId: number, inMs: number) {
  await db.sql`update dni_holds set hold_id = ${holdId}, visitor_id = ${visitorId}, expires_at = ${new Date(T0 + inMs)} where number = ${number}`;
}

async function event(name: string, daysAgo: number) {
  await db.sql`insert into dni_events (pool_key, visitor, kind, name, created_at) values ('acme-site', 'ev', 'pageview', ${name}, ${ago(daysAgo)})`;
}

async function callFor(visitorId: number, daysAgo: number) {
  await db.sql`insert into calls (to_number, status, visit_id, dni_pool, dni_visitor, occurred_at)
               values (${N1}, 'ANSWERED', ${visitorId}, 'acme-site', 'x', ${ago(daysAgo)})`;
}

const names = async (table: "visitors" | "events") =>
  table === "visitors"
    ? (await db.sql<{ visitor: string }[]>`select visitor from dni_visitors order by visitor`).map((r) => r.visitor)
    : (await db.sql<{ name: string }[]>`select name from dni_events order by name`).map((r) => r.name);
const holdIds = async () => (await db.sql<{ id: number }[]>`select id from dni_hold_history order by id`).map((r) => r.id);

async function reset() {
  await db.sql`delete from calls`;
  await db.sql`delete from dni_events`;
  await db.sql`delete from dni_hold_history`;
  await db.sql`delete from dni_visitors`;
  await db.sql`update dni_holds set hold_id = 0, visitor_id = null, expires_at = '-infinity'`;
}

describe("settings", () => {
  test("default to 400 days for visitors and 90 for events, and are read from the environment", () => {
    const d = loadConfig({});
    expect([d.dniVisitorRetentionDays, d.dniEventRetentionDays]).toEqual([400, 90]);
    const c = loadConfig({ DNI_VISITOR_RETENTION_DAYS: "30", DNI_EVENT_RETENTION_DAYS: "7" });
    expect([c.dniVisitorRetentionDays, c.dniEventRetentionDays]).toEqual([30, 7]);
    expect(() => loadConfig({ DNI_EVENT_RETENTION_DAYS: "0" })).toThrow("DNI_EVENT_RETENTION_DAYS");
  });
});

describe("the prune", () => {
  let ids: Record<string, number>;
  let holds: Record<string, number>;

  async function world() {
    await reset();
    // Interleaved old and recent rows, so that every batch of two mixes them.
    ids = {
      old: await visitor("old", 401),
      recent: await visitor("recent", 399),
      holding: await visitor("holding", 500), // holds a live number
      called: await visitor("called", 450), // a call 10 days ago is attributed to it
      calledLongAgo: await visitor("calledLongAgo", 450), // its only call is 420 days old
      heldOnce: await visitor("heldOnce", 401), // its expired hold is still its number's current one (kept; the visitor is not)
      old2: await visitor("old2", 1000),
      today: await visitor("today", 0),
    };
    holds = {
      past: await history(N1, ids.old, 401),
      pastRecent: await history(N1, ids.recent, 399),
      live: await history(N2, ids.holding, 0),
      lastOfN3: await history(N3, ids.heldOnce, 401),
      past2: await history(N1, ids.old2, 999),
    };
    await current(N2, holds.live, ids.holding, 60_000);
    await current(N3, holds.lastOfN3, ids.heldOnce, -401 * DAY);
    await callFor(ids.called, 10);
    await callFor(ids.calledLongAgo, 420);
    for (const [name, days] of [["e-old", 91], ["e-new", 89], ["e-old2", 200], ["e-today", 0], ["e-old3", 90.01]] as const) await event(name, days);
  }

  const KEPT_VISITORS = ["called", "holding", "recent", "today"];
  const KEPT_EVENTS = ["e-new", "e-today"];

  test("deletes exactly what is past its retention and not in use, in batches", async () => {
    await world();
    const pruned = await pruneDni(db.sql, T0, RETENTION, 2);
    expect(await names("visitors")).toEqual(KEPT_VISITORS);
    expect(await holdIds()).toEqual([holds.pastRecent, holds.live, holds.lastOfN3]);
    expect(await names("events")).toEqual(KEPT_EVENTS);
    expect(pruned).toEqual({ visitors: 4, holds: 2, events: 3 });
    // Nothing more the second time.
    expect(await pruneDni(db.sql, T0, RETENTION, 2)).toEqual({ visitors: 0, holds: 0, events: 0 });
  });

  test("follows the clock: a day later the 399-day visitor and hold and the 89-day event go too", async () => {
    await world();
    await pruneDni(db.sql, T0 + 2 * DAY, RETENTION);
    // The live hold has expired by then: its visitor goes; the history row stays, being N2's current hold.
    expect(await names("visitors")).toEqual(["called", "today"]);
    expect(await holdIds()).toEqual([holds.live, holds.lastOfN3]);
    expect(await names("events")).toEqual(["e-today"]);
  });

  test("follows the settings", async () => {
    await world();
    await pruneDni(db.sql, T0, { visitorDays: 2000, eventDays: 1 });
    expect(await names("visitors")).toEqual(["called", "calledLongAgo", "heldOnce", "holding", "old", "old2", "recent", "today"]);
    expect(await names("events")).toEqual(["e-today"]);
  });

  test("two instances pruning at once delete each row once, and together exactly what one would", async () => {
    await world();
    // Enough rows that the two walks overlap for many batches.
    await db.sql`insert into dni_visitors (pool_key, visitor, first_visit_at, last_visit_at)
                 select 'acme-site', 'bulk' || i, ${ago(500)}, ${ago(500)} from generate_series(1, 3000) i`;
    await db.sql`insert into dni_events (pool_key, visitor, kind, name, created_at)
                 select 'acme-site', 'v', 'custom', 'bulk' || i, ${ago(100)} from generate_series(1, 3000) i`;
    const [a, b] = await Promise.all([pruneDni(db.sql, T0, RETENTION, 100), pruneDni(db.sql, T0, RETENTION, 100)]);
    expect(a.visitors + b.visitors).toBe(4 + 3000);
    expect(a.events + b.events).toBe(3 + 3000);
    expect(a.holds + b.holds).toBe(2);
    expect(await names("visitors")).toEqual(KEPT_VISITORS);
    expect(await names("events")).toEqual(KEPT_EVENTS);
  });
});
