// Background work has a pool of its own (src/db/open.ts, src/app/server.ts): a backlog of jobs that
// all wait on a locked table takes its own connections, never the ones requests need. Before,
// sixteen automation runs at once, each waiting a quarter second on the locked leads table, took
// all four connections of the pool, and KPI requests, which never touch that table, queued behind
// them past their deadline.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { AUTOMATION_RUN } from "../src/automations/service";
import { call, startApp, type TestApp } from "./harness/app";
import { testDatabase, type TestDatabase } from "./harness/db";
import { ALL_SCOPES, makeKey, seedWorld } from "./harness/factory";
import { waitFor } from "./harness/faults";

const RUNS = 48;
let db: TestDatabase;
let app: TestApp;
let key: string;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  // Runs queued but not due: the test makes them due once the table is locked.
  await db.sql`insert into automations (id, org_id, trigger, channel, body, delay_seconds) values (1, 1, 'new_lead', 'note', 'later', 86400)`;
  app = await startApp(db.url);
  key = (await makeKey(db.sql, { scopes: ALL_SCOPES, org: 1 })).key;
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

test("a backlog of jobs waiting on a locked table leaves the requests' connections to them: KPI answers throughout", async () => {
  for (let i = 0; i < RUNS; i++) {
    const r = await call(app.base, "/hooks/lead_intake.php", { method: "POST", key, json: { phone: `51255570${String(i).padStart(2, "0")}`, list_id: 101 } });
    expect(r.status).toBe(200);
  }
  const queued = async () => (await db.sql`select count(*)::int as n from jobs where kind = ${AUTOMATION_RUN}`)[0]!.n;
  await waitFor("the runs queued", async () => (await queued()) === RUNS, 10_000);

  const locker = await db.sql.reserve();
  const answers: { status: number }[] = [];
  try {
    await locker`begin`;
    await locker`lock table leads in access exclusive mode`;
    await db.sql`update jobs set run_at = now() where kind = ${AUTOMATION_RUN}`;
    // Four requests at a time, one instance: as many as its request pool has connections, for
    // 2.5 s (the runs are claimed within 250 ms and each waits a quarter second), over keys enough
    // to stay under the hourly limits.
    const kpiKeys = await Promise.all(Array.from({ length: 16 }, async () => (await makeKey(db.sql, { scopes: ALL_SCOPES, org: 1 })).key));
    const until = performance.now() + 2500;
    let n = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (performance.now() < until) {
          const r = await call(app.base, "/hooks/kpi_ingest.php", { method: "POST", key: kpiKeys[n++ % kpiKeys.length], json: { metric_key: "background.pool", value: 1 } });
          answers.push({ status: r.status });
          await Bun.sleep(10);
        }
      }),
    );
    // The runs did meet the lock meanwhile (each claimed, failed on it and put off).
    const [{ tried }] = await db.sql`select count(*)::int as tried from jobs where kind = ${AUTOMATION_RUN} and attempts > 0`;
    expect(tried).toBeGreaterThan(0);
  } finally {
    await locker`rollback`;
    locker.release();
  }
  expect(answers.length).toBeGreaterThan(20);
  // Each answered 200: within its deadline (src/db/deadline.ts), past which it would have been a 503.
  expect(answers.filter((a) => a.status !== 200)).toEqual([]);
});
