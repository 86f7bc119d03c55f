// Unknown pools are answered from the pool cache's negative entries (src/dni/pools.ts): a burst of
// requests naming a pool that does not exist costs one query per POOL_REFRESH_MS, however many
// arrive together or after, and the bound keeps a flood of made-up keys from growing memory.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { PoolCache } from "../src/dni/pools";
import { testDatabase, type TestDatabase } from "./harness/db";
import { countingClient } from "./harness/dni";

let db: TestDatabase;
const closers: (() => Promise<void>)[] = [];
beforeAll(async () => {
  db = await testDatabase();
});
afterAll(async () => {
  for (const c of closers) await c();
  await db?.drop();
});

test("200 lookups of an unknown pool, 100 of them at once, send one query", async () => {
  const { sql, count, end } = countingClient(db.url);
  closers.push(end);
  const pools = new PoolCache(sql, 60_000);
  await sql`select 1`; // the connection's own set-up statements are not the lookups'
  const before = count();
  const burst = await Promise.all(Array.from({ length: 100 }, () => pools.get("made-up")));
  expect(burst.every((p) => p === null)).toBe(true);
  for (let i = 0; i < 100; i++) expect(pools.get("made-up")).toBeNull();
  expect(count() - before).toBe(1);
});
