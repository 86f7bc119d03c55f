// The breaker's rules (src/db/breaker.ts, src/db/sqlstate.ts refusedOrDropped): what opens it and
// what does not, one probe at a time, and a failure left over from an outage that has ended. Its
// behaviour with PostgreSQL stopped, directly and behind PgBouncer, is test/breaker.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Breaker, BREAKER_MESSAGE } from "../src/db/breaker";
import { connect, type Sql } from "../src/db/client";
import { withDeadline } from "../src/db/deadline";
import { servePools } from "../src/db/open";
import { PoolCache } from "../src/dni/pools";
import { refusedOrDropped } from "../src/db/sqlstate";
import { AppError } from "../src/errors";
import { setLogLevel } from "../src/log";
import { freePort } from "./harness/cluster";
import { testDatabase, type TestDatabase } from "./harness/db";
import { poolNumbers, provisionPools } from "./harness/dni";

setLogLevel("error");

const failure = (code: string) => Object.assign(new Error(code), { code });

/** Resolves once `ok` holds (checked every few ms); the test's own timeout bounds it. */
async function until(ok: () => boolean): Promise<void> {
  while (!ok()) await Bun.sleep(5);
}

describe("what opens it", () => {
  test("the database refusing or dropping connections, directly or through PgBouncer; never slowness, a timeout or this process ending its own clients", () => {
    const opens = ["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND", "CONNECTION_CLOSED", "08006", "08001", "08P01", "57P01", "57P02", "57P03", "53300"];
    const not = ["CONNECT_TIMEOUT", "CONNECTION_ENDED", "CONNECTION_DESTROYED", "57014", "55P03", "40001", "40P01", "23505", "22P02", "unavailable"];
    expect(opens.filter((c) => !refusedOrDropped(failure(c)))).toEqual([]);
    expect(not.filter((c) => refusedOrDropped(failure(c)))).toEqual([]);
    expect(refusedOrDropped(new AppError("unavailable", "the database did not answer in time"))).toBe(false);
    expect(refusedOrDropped(null)).toBe(false);
  });
});

describe("the probe", () => {
  test("one at a time: at once when it opens, the next only after the last has failed, and the first that succeeds closes it", async () => {
    let running = 0;
    let most = 0;
    const outcomes: ((ok: boolean) => void)[] = [];
    const breaker = new Breaker(
      () =>
        new Promise<void>((resolve, reject) => {
          running++;
          most = Math.max(most, running);
          outcomes.push((ok) => {
            running--;
            if (ok) resolve();
            else reject(failure("ECONNREFUSED"));
          });
        }),
      1,
    );
    try {
      expect(breaker.isOpen()).toBe(false);
      breaker.saw(failure("ECONNREFUSED"), breaker.epoch());
      expect(breaker.isOpen()).toBe(true);
      const closed = breaker.closed();
      await until(() => outcomes.length === 1);
      // More failures while it is open start no other probe.
      for (let i = 0; i < 5; i++) breaker.saw(failure("ECONNRESET"), breaker.epoch());
      await Bun.sleep(20);
      expect(outcomes.length).toBe(1);
      outcomes[0]!(false);
      await until(() => outcomes.length === 2);
      expect(breaker.isOpen()).toBe(true);
      outcomes[1]!(false);
      await until(() => outcomes.length === 3);
      outcomes[2]!(true);
      await closed;
      expect([breaker.isOpen(), breaker.opened, most]).toEqual([false, 1, 1]);
      await Bun.sleep(20);
      expect(outcomes.length).toBe(3);
    } finally {
      breaker.stop();
    }
  });

  test("a failure of work begun before the last close does not open it again; one begun after does", async () => {
    const breaker = new Breaker(async () => {}, 1);
    try {
      const before = breaker.epoch();
      breaker.saw(failure("57P01"), before);
      await breaker.closed();
      // E.g. a statement that waited through the outage behind PgBouncer, answered its query_wait_timeout late.
      breaker.saw(failure("08P01"), before);
      expect(breaker.isOpen()).toBe(false);
      breaker.saw(failure("08P01"), breaker.epoch());
      expect(breaker.isOpen()).toBe(true);
      expect(breaker.opened).toBe(2);
    } finally {
      breaker.stop();
    }
  });

  test("stopped, it probes no more and lets go of what waits for it to close", async () => {
    let probes = 0;
    const breaker = new Breaker(async () => {
      probes++;
      throw failure("ECONNREFUSED");
    }, 1);
    breaker.saw(failure("ECONNREFUSED"), breaker.epoch());
    const waiting = breaker.closed().then(() => "closed", (err: Error) => err.message);
    await until(() => probes >= 2);
    breaker.stop();
    expect(await waiting).toBe("the database client is closed");
    const after = probes;
    await Bun.sleep(20);
    expect(probes).toBe(after);
    // Nor does anything open it again.
    breaker.saw(failure("ECONNREFUSED"), breaker.epoch());
    expect(breaker.isOpen()).toBe(true);
    expect(probes).toBe(after);
  });
});

describe("on a real PostgreSQL", () => {
  let db: TestDatabase;
  let sql: Sql;
  let breaker: Breaker;

  beforeAll(async () => {
    db = await testDatabase();
    await db.sql`create table locked_here (v int)`;
    ({ sql, breaker } = servePools(db.url, 2, "leadline-breaker-rules"));
  });
  afterAll(async () => {
    breaker?.stop();
    await sql?.end({ timeout: 1 });
    await db?.drop();
  });

  test("a statement timeout, a lock timeout and the request deadline leave it closed", async () => {
    const outcome = (p: Promise<unknown>) => p.then(() => "answered", (err: { code?: string }) => err.code);
    expect(
      await outcome(
        sql.begin(async (tx) => {
          await tx`set local statement_timeout = 50`;
          await tx`select pg_sleep(1)`;
        }),
      ),
    ).toBe("57014");
    // Locked by another connection before the statement, and held until the statement has met it.
    const locker = await db.sql.reserve();
    try {
      await locker`begin`;
      await locker`lock table locked_here in access exclusive mode`;
      // serve's statements wait a quarter second for a lock (LOCK_WAIT_MS).
      expect(await outcome(sql`select * from locked_here`)).toBe("55P03");
    } finally {
      await locker`rollback`;
      locker.release();
    }
    expect(await outcome(withDeadline(sql`select pg_sleep(0.3)`, 50))).toBe("unavailable");
    expect([breaker.isOpen(), breaker.opened]).toEqual([false, 0]);
    expect([...(await sql`select 1 as one`)]).toEqual([{ one: 1 }]);
  });

  test("a connection terminated under a statement opens it; its probe finds the database there and closes it at once, and the next statement is served", async () => {
    // A few times: the server's FATAL 57P01 reaches the statement, or only the close that follows
    // it does; in the second case postgres.js kept the 57P01 and failed the next connection's
    // first statement with it (src/db/postgres-js/README.md, patch fix 5), which opened the breaker again.
    for (let round = 1; round <= 4; round++) {
      const victim = sql`select pg_sleep(5)`.then(() => "answered", (err: { code?: string }) => err.code);
      await until(() => (sql as unknown as { pool: { busy: number } }).pool.busy > 0);
      await Bun.sleep(50);
      await db.sql`
        select pg_terminate_backend(pid) from pg_stat_activity
        where application_name = 'leadline-breaker-rules' and query like '%pg_sleep(5)%'`;
      expect(["57P01", "CONNECTION_CLOSED"]).toContain(String(await victim));
      expect(breaker.opened).toBe(round);
      await breaker.closed();
      expect([...(await sql`select ${round}::int as round`)]).toEqual([{ round }]);
      expect(breaker.isOpen()).toBe(false);
    }
  });

  test("a refused dial opens it; open, a statement is refused before a connection is dialled for it", async () => {
    const nowhere = `postgres://postgres@127.0.0.1:${await freePort()}/nothing`;
    const { sql: away, breaker: gone } = servePools(nowhere, 2, "leadline-breaker-nowhere");
    try {
      expect(await away`select 1`.then(() => "answered", (err: { code?: string }) => err.code)).toBe("ECONNREFUSED");
      expect(gone.isOpen()).toBe(true);
      const dials = gone.dials;
      const refused = await Promise.all([away`select 1`, away.begin((tx) => tx`select 1`), away.unsafe("select 1")].map((p) => p.then(() => "answered", (err: Error) => err.message)));
      expect(refused).toEqual([BREAKER_MESSAGE, BREAKER_MESSAGE, BREAKER_MESSAGE]);
      expect(gone.dials).toBe(dials);
    } finally {
      gone.stop();
      await away.end({ timeout: 1 });
    }
  });
});

test("open, a DNI pool read before is still known (its warm visitors answered from memory); one never read is 503", async () => {
  const db = await testDatabase();
  const never = () => Promise.reject(failure("ECONNREFUSED"));
  const breaker = new Breaker(never, 60_000);
  const sql = connect(db.url, { max: 1, statementTimeoutMs: 0, breaker });
  try {
    await provisionPools(db.sql, [{ key: "known-pool", numbers: poolNumbers(2) }, { key: "other-pool", numbers: poolNumbers(2, 10) }]);
    // Every read due again at once (POOL_REFRESH_MS is 5 s in serve).
    const pools = new PoolCache(sql, 0);
    const known = await pools.get("known-pool");
    expect(known?.key).toBe("known-pool");
    breaker.saw(failure("ECONNREFUSED"), breaker.epoch());
    expect(breaker.isOpen()).toBe(true);
    expect(await pools.get("known-pool")).toBe(known);
    expect(await Promise.resolve(pools.get("other-pool")).then(() => "answered", (err: AppError) => err.message)).toBe(BREAKER_MESSAGE);
  } finally {
    breaker.stop();
    await sql.end({ timeout: 1 });
    await db.drop();
  }
});

test("a client without a breaker (the CLI, migrations, the embedded database) is as before", async () => {
  const nowhere = `postgres://postgres@127.0.0.1:${await freePort()}/nothing`;
  const plain = connect(nowhere, { max: 1, statementTimeoutMs: 0 });
  try {
    for (let i = 0; i < 2; i++) expect(await plain`select 1`.then(() => "answered", (err: { code?: string }) => err.code)).toBe("ECONNREFUSED");
  } finally {
    await plain.end({ timeout: 1 });
  }
});
