// What a pooler restarting under load did to postgres.js 3.4.9 on Bun and to a send's
// transaction (src/db/postgres-js/socket.ts, begin.ts, pipeline.ts; src/db/deadline.ts beginWithin), played on one
// client through a proxy that resets its connections, as PgBouncer's exit does: each case fails
// without its fix. The whole restart under a mixed load of three instances is
// test/several-instances.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, poolState, type Sql } from "../src/db/client";
import { beginWithin } from "../src/db/deadline";
import { testDatabase, type TestDatabase } from "./harness/db";
import { startProxy, type Proxy } from "./harness/proxy";

let db: TestDatabase;
let proxy: Proxy;

beforeAll(async () => {
  db = await testDatabase();
  proxy = await startProxy(db.url);
  await db.sql`create table probe (v int not null)`;
});
afterAll(async () => {
  await proxy?.close();
  await db?.drop();
});

const NEVER = "never settled";
/** The outcome of a statement whose connection was lost (the error postgres.js tells it with). */
const LOST = /^error (ECONNRESET|CONNECTION_CLOSED)$/;
/** `p`'s value, its error's code, or NEVER after `ms`. */
const outcome = (p: Promise<unknown>, ms = 3000) =>
  Promise.race([
    p.then(
      (v) => v,
      (err: { code?: string }) => `error ${err?.code}`,
    ),
    Bun.sleep(ms).then(() => NEVER),
  ]);

/** A client as `serve` makes it through a pooler (unnamed statements), on one connection. */
const pooledClient = (max = 1): Sql => connect(proxy.url, { max, statementTimeoutMs: 5000, pooled: true });

describe.each([true, false])("statements unnamed (through a pooler): %p", (pooled) => {
  test("a statement sent just as its connection is reset settles, and the connection serves on", async () => {
    const sql = connect(proxy.url, { max: 1, statementTimeoutMs: 5000, pooled });
    try {
      await sql`select 1`;
      let next: Promise<unknown> | null = null;
      const first = sql`select pg_sleep(1)`.then(
        () => "answered",
        (err: { code?: string }) => {
          // Sent in the turn the rejection is handled, as a worker polling again does, or a batcher
          // sending its next batch: Bun ran it between the socket's `error` and its `close`.
          next = sql`select ${2}::int as v`.then((rows) => rows[0]);
          return err.code;
        },
      );
      await Bun.sleep(200);
      proxy.reset();
      expect(await first).toBe("ECONNRESET");
      // Answered on a new connection (or refused as unavailable): it was queued behind the dead
      // statement and never sent, and the reconnected connection then waited for its answer.
      expect(await outcome(next!)).toEqual({ v: 2 });
      for (let i = 0; i < 3; i++) expect(await outcome(sql`select ${i}::int as v`.then((r) => r[0]))).toEqual({ v: i });
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});

test("through a pooler nothing is pipelined: a BEGIN waits for an idle connection instead of going behind a statement", async () => {
  const sql = pooledClient();
  try {
    await sql`select 1`;
    // A statement without parameters, which postgres.js would pipeline others behind.
    const busy = sql`select pg_sleep(0.2)`.execute();
    const tx = sql.begin(async (tx) => (await tx`select 1 as one`)[0]);
    await Bun.sleep(50);
    // Behind it, BEGIN's bytes could be flushed with the statement's, and a full socket then left
    // the transaction unreserved (UNSAFE_TRANSACTION, and an open transaction back in the pool).
    expect(poolState(sql)).toMatchObject({ inUse: 1, waiting: 1 });
    await busy;
    expect(await outcome(tx)).toEqual({ one: 1 });
    expect(poolState(sql)).toMatchObject({ inUse: 0, waiting: 0 });
  } finally {
    await sql.end({ timeout: 1 });
  }
});

test("a transaction whose connection is lost sends nothing more: no statement runs outside it or in another", async () => {
  const sql = pooledClient();
  try {
    await db.sql`truncate probe`;
    let resume!: () => void;
    const paused = new Promise<void>((ok) => (resume = ok));
    let late: Promise<unknown> | null = null;
    const tx = sql.begin(async (tx) => {
      await tx`insert into probe values (1)`;
      // Waiting on other work (another pool's statement, a provider) while the connection is lost.
      await paused;
      late = tx`insert into probe values (2)`;
      await late;
      return "committed";
    });
    await Bun.sleep(100);
    proxy.reset();
    expect(await outcome(tx)).toMatch(LOST);
    // The pool reconnects the same connection for other work meanwhile.
    expect(await outcome(sql`select 1 as one`.then((r) => r[0]))).toEqual({ one: 1 });
    resume();
    await Bun.sleep(200);
    expect(await outcome(late!)).toMatch(LOST);
    // Neither insert is there: the first died with its transaction; the second was never sent (it
    // ran on the new connection, outside any transaction, and stayed).
    expect([...(await db.sql`select v from probe`)]).toEqual([]);
    expect(await outcome(sql`select 2 as two`.then((r) => r[0]))).toEqual({ two: 2 });
  } finally {
    await sql.end({ timeout: 1 });
  }
});

test("a transaction's statement queued behind its busy one is rejected when the connection is lost, not left pending", async () => {
  const sql = pooledClient();
  try {
    let queued: Promise<unknown> | null = null;
    const tx = sql.begin(async (tx) => {
      // A statement with parameters is described first, unnamed: the connection takes nothing
      // else until it is answered, and the transaction queues the next one.
      const busy = tx`select pg_sleep(${1})`;
      queued = tx`select ${2}::int as v`;
      await Promise.all([busy, queued]);
    });
    await Bun.sleep(200);
    proxy.reset();
    expect(await outcome(tx)).toMatch(LOST);
    expect(await outcome(queued!)).toMatch(LOST);
    expect(await outcome(sql`select 3 as three`.then((r) => r[0]))).toEqual({ three: 3 });
  } finally {
    await sql.end({ timeout: 1 });
  }
});

test("a transaction still waiting for a connection when its request has answered 503 never commits", async () => {
  const sql = pooledClient();
  try {
    await db.sql`truncate probe`;
    // The pool's one connection taken (as by the backlog after a pooler's restart).
    const busy = sql`select pg_sleep(0.6)`.execute();
    await Bun.sleep(50);
    const late = beginWithin(sql, 200, async (tx) => {
      await tx`insert into probe values (1)`;
    });
    expect(await outcome(late)).toBe("error unavailable");
    await busy;
    await Bun.sleep(300);
    // It began once the connection was free, after the answer: nothing of it stays.
    expect([...(await db.sql`select v from probe`)]).toEqual([]);
  } finally {
    await sql.end({ timeout: 1 });
  }
});

test("a transaction ended normally still commits, rolls back on its own error, and its handle refuses statements afterwards", async () => {
  const sql = pooledClient(2);
  try {
    await db.sql`truncate probe`;
    let handle: Sql | null = null;
    expect(
      await sql.begin(async (tx) => {
        handle = tx as unknown as Sql;
        await tx`insert into probe values (${1})`;
        const [row] = await tx.unsafe("select count(*)::int as n from probe");
        return row!.n;
      }),
    ).toBe(1);
    await expect(
      sql.begin(async (tx) => {
        await tx`insert into probe values (${2})`;
        await tx`insert into probe values (${null})`;
      }),
    ).rejects.toMatchObject({ code: "23502" });
    expect([...(await db.sql`select v from probe`)]).toEqual([{ v: 1 }]);
    expect(await outcome(handle!`select 1`)).toMatch(/^error/);
  } finally {
    await sql.end({ timeout: 1 });
  }
});
