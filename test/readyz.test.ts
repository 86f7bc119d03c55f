// /readyz answers 200 only when the database answers with a schema this executable can use: its
// core tables reachable through the session's search_path, at the schema version it was built for.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { migrations } from "../src/db/migrations";
import { call, startApp, type TestApp } from "./harness/app";
import { testDatabase, type TestDatabase } from "./harness/db";

let db: TestDatabase;
let app: TestApp;

beforeAll(async () => {
  db = await testDatabase();
  app = await startApp(db.url);
});
// After its connections were terminated, the app's pool takes its whole 5-second end timeout to
// stop (so it did before /readyz probed the schema).
afterAll(async () => {
  await app?.stop();
  await db?.drop();
}, 15_000);

const ready = () => call(app.base, "/readyz");
const UNAVAILABLE = { status: 503, body: { ok: false, error: "unavailable" } };
const READY = { status: 200, body: { ok: true } };
const answer = async () => {
  const r = await ready();
  return { status: r.status, body: r.body };
};

/** The app's connections end; postgres.js opens new ones, which take the database's settings. */
async function reconnectApp(): Promise<void> {
  await db.sql`
    select pg_terminate_backend(pid) from pg_stat_activity
    where datname = current_database() and application_name = 'leadline-test-app' and query not ilike 'listen %'`;
}

/**
 * /readyz until it gives `want` five times running: a terminated connection fails a probe or two
 * while postgres.js reconnects, which must not pass for the answer of the new sessions.
 */
async function settlesAt(want: typeof READY | typeof UNAVAILABLE): Promise<void> {
  const until = performance.now() + 4000;
  let last = await answer();
  for (let same = 0; same < 5 && performance.now() < until; ) {
    same = JSON.stringify(last) === JSON.stringify(want) ? same + 1 : 0;
    if (same < 5) {
      await Bun.sleep(50);
      last = await answer();
    }
  }
  expect(last).toEqual(want);
}

describe("/readyz", () => {
  test("200 on a usable schema", async () => {
    expect(await answer()).toEqual(READY);
  });

  test("503 while a core table is missing (renamed), 200 once it is back", async () => {
    for (const table of ["api_keys", "leads", "outbox_events"]) {
      await db.sql.unsafe(`alter table ${table} rename to ${table}_away`);
      try {
        expect({ table, ...(await answer()) }).toEqual({ table, ...UNAVAILABLE });
      } finally {
        await db.sql.unsafe(`alter table ${table}_away rename to ${table}`);
      }
      expect(await answer()).toEqual(READY);
    }
  });

  test("503 while the database is behind the executable's schema version; a newer one (a rolling upgrade) stays ready", async () => {
    const latest = migrations.length;
    const [row] = await db.sql<{ name: string }[]>`delete from schema_migrations where version = ${latest} returning name`;
    try {
      expect(await answer()).toEqual(UNAVAILABLE);
    } finally {
      await db.sql`insert into schema_migrations (version, name) values (${latest}, ${row.name})`;
    }
    expect(await answer()).toEqual(READY);

    await db.sql`insert into schema_migrations (version, name) values (${latest + 1}, 'from_a_newer_executable')`;
    try {
      expect(await answer()).toEqual(READY);
    } finally {
      await db.sql`delete from schema_migrations where version = ${latest + 1}`;
    }
    expect(await answer()).toEqual(READY);
  });

  test("503 while the app's sessions have a search_path without the schema (the probe does not qualify names), 200 after", async () => {
    const name = db.url.split("/").pop()!;
    await db.sql.unsafe(`alter database "${name}" set search_path = pg_catalog`);
    try {
      await reconnectApp();
      await settlesAt(UNAVAILABLE);
      // The process itself is up.
      expect((await call(app.base, "/healthz")).body).toEqual({ ok: true });
    } finally {
      await db.sql.unsafe(`alter database "${name}" reset search_path`);
      await reconnectApp();
    }
    await settlesAt(READY);
  });
});
