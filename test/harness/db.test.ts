import { afterAll, expect, test } from "bun:test";
import { connect } from "../../src/db/client";
import { testDatabase, type TestDatabase } from "./db";

const opened: TestDatabase[] = [];
afterAll(() => Promise.all(opened.map((db) => db.drop())));

async function open(): Promise<TestDatabase> {
  const db = await testDatabase();
  opened.push(db);
  return db;
}

test("each testDatabase() is a separate, migrated database", async () => {
  const [a, b] = await Promise.all([open(), open()]);
  expect(a.url).not.toBe(b.url);

  for (const { sql } of [a, b]) {
    const [{ applied }] = await sql<{ applied: number }[]>`select count(*)::int as applied from schema_migrations`;
    expect(applied).toBeGreaterThanOrEqual(1);
    const [{ leads }] = await sql<{ leads: string | null }[]>`select to_regclass('leads')::text as leads`;
    expect(leads).toBe("leads");
  }

  await a.sql`insert into orgs (id, name) values (1, 'only in a')`;
  const [inA] = await a.sql<{ n: number }[]>`select count(*)::int as n from orgs`;
  const [inB] = await b.sql<{ n: number }[]>`select count(*)::int as n from orgs`;
  expect(inA.n).toBe(1);
  expect(inB.n).toBe(0);
});

test("drop() removes the database", async () => {
  const db = await open();
  await db.drop();
  const probe = connect(db.url, { max: 1, statementTimeoutMs: 0 });
  try {
    // 3D000: invalid_catalog_name, "database … does not exist".
    await expect(probe`select 1`).rejects.toMatchObject({ code: "3D000" });
  } finally {
    await probe.end({ timeout: 1 });
  }
});
