// DNI renewal write-behind in chunks (src/dni/queries.ts renewHolds): a batch larger than one
// statement's share extends every hold it names, and only those still the one renewed.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { RENEW_CHUNK, renewHolds, type Renewal } from "../src/dni/queries";
import { testDatabase, type TestDatabase } from "./harness/db";
import { holdRows } from "./harness/dni";

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
});
afterAll(() => db?.drop());

test("a batch of renewals larger than a statement's share: every current hold extended, a taken-over one not", async () => {
  const n = 2 * RENEW_CHUNK + 77;
  await db.sql`
    insert into dni_holds (number, pool_key, active, hold_id, visitor_id, expires_at)
    select '555' || lpad(g::text, 7, '0'), 'p', true, g, g, now() + interval '1 minute' from generate_series(1, ${n}) g`;
  const until = Date.now() + 3_600_000;
  const renewals: Renewal[] = Array.from({ length: n }, (_, k) => ({ pool_key: "p", hold_id: k + 1, number: `555${String(k + 1).padStart(7, "0")}`, until_ms: until }));
  // One hold was taken over meanwhile (another hold_id): its renewal moves nothing.
  await db.sql`update dni_holds set hold_id = 999999 where number = '5550000005'`;
  const { extended, busy } = await renewHolds(db.sql, renewals.reverse());
  expect(busy).toEqual([]);
  expect(extended).toHaveLength(n - 1);
  expect(new Set(extended.map((h) => h.hold_id)).has(5)).toBe(false);
  const [{ later }] = await db.sql<{ later: number }[]>`select count(*)::int as later from dni_holds where expires_at > now() + interval '30 minutes'`;
  expect(later).toBe(n - 1);
});

test("a row another transaction holds is passed over as busy, not waited for and not lost", async () => {
  await db.sql`insert into dni_holds (number, pool_key, active, hold_id, visitor_id, expires_at) values ('5559990001', 'q', true, 71, 71, now()), ('5559990002', 'q', true, 72, 72, now())`;
  const until = Date.now() + 3_600_000;
  const renewals: Renewal[] = [
    { pool_key: "q", hold_id: 71, number: "5559990001", until_ms: until },
    { pool_key: "q", hold_id: 72, number: "5559990002", until_ms: until },
    { pool_key: "q", hold_id: 73, number: "5559990003", until_ms: until }, // no such number: lost
  ];
  const held = await holdRows(db.sql, ["5559990002"]);
  // Not waiting for the lock: the row is held until released below, after this answers; and no
  // statement of ours was ever seen waiting for a lock meanwhile.
  let waited = false;
  let renewing = true;
  const watch = (async () => {
    while (renewing) {
      const [w] = await db.sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
      if (w.n > 0) {
        waited = true;
        held.release(); // lets it finish, to fail below rather than hang
      }
      await Bun.sleep(5);
    }
  })();
  const first = await renewHolds(db.sql, renewals).finally(() => (renewing = false));
  await watch;
  expect(waited).toBe(false);
  expect([first.extended.map((h) => h.hold_id), first.busy]).toEqual([[71], [72]]);
  held.release();
  await held.done;
  const again = await renewHolds(db.sql, renewals.slice(1));
  expect([again.extended.map((h) => h.hold_id), again.busy]).toEqual([[72], []]);
});
