// DATABASE_DIRECT_URL (docs/several-instances.md, Through PgBouncer): which connection gets what.
// Under load, through a real PgBouncer, it is tested in several-instances.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../src/config";
import { breakerOf } from "../src/db/breaker";
import { connect } from "../src/db/client";
import { openDatabase } from "../src/db/open";
import { setLogLevel } from "../src/log";
import { capture } from "./harness/capture";
import { freePort } from "./harness/cluster";
import { testDatabase, type TestDatabase } from "./harness/db";

setLogLevel("error");

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const options = (sql: unknown) => (sql as { options: { prepare: boolean; connection: Record<string, unknown> } }).options;

describe("DATABASE_DIRECT_URL", () => {
  test("read once: a postgres:// URL, only beside DATABASE_URL; unset, nothing changes", () => {
    expect(loadConfig({ DATABASE_URL: "postgres://a@pooler/db" }).databaseDirectUrl).toBeNull();
    expect(loadConfig({ DATABASE_URL: "postgres://a@pooler/db", DATABASE_DIRECT_URL: " postgres://a@pg/db " }).databaseDirectUrl).toBe("postgres://a@pg/db");
    expect(() => loadConfig({ DATABASE_DIRECT_URL: "postgres://a@pg/db" })).toThrow(new ConfigError("DATABASE_DIRECT_URL is set without DATABASE_URL (the pooler's address)"));
    expect(() => loadConfig({ DATABASE_URL: "postgres://a@pooler/db", DATABASE_DIRECT_URL: "mysql://a@pg/db" })).toThrow(new ConfigError("DATABASE_DIRECT_URL must be a postgres:// URL"));
  });

  test("a pooled client sends statements unprepared and no startup parameter PgBouncer refuses; a direct one is as before", async () => {
    const pooled = connect(db.url, { max: 1, statementTimeoutMs: 5000, pooled: true });
    const direct = connect(db.url, { max: 1, statementTimeoutMs: 5000 });
    try {
      expect(options(pooled).prepare).toBe(false);
      expect(Object.keys(options(pooled).connection).sort()).toEqual(["TimeZone", "application_name"]);
      expect(options(direct).prepare).toBe(true);
      expect(options(direct).connection).toMatchObject({ statement_timeout: 5000, plan_cache_mode: "force_generic_plan", TimeZone: "UTC" });
      expect([...(await pooled`select current_setting('TimeZone') as tz`)]).toEqual([{ tz: "UTC" }]);
    } finally {
      await Promise.all([pooled.end({ timeout: 1 }), direct.end({ timeout: 1 })]);
    }
  });

  test("serve: the pool on DATABASE_URL, migrations and LISTEN on the direct URL; without it one client as before", async () => {
    const both = await openDatabase(loadConfig({ DATABASE_URL: db.url, DATABASE_DIRECT_URL: db.url }), "serve");
    try {
      expect(both.direct).not.toBe(both.sql);
      expect(options(both.sql).prepare).toBe(false);
      expect(options(both.direct).prepare).toBe(true);
      // One breaker for the pools and the direct connection (src/db/breaker.ts).
      expect(breakerOf(both.sql)).not.toBeNull();
      expect([breakerOf(both.background), breakerOf(both.direct)]).toEqual([breakerOf(both.sql), breakerOf(both.sql)]);
    } finally {
      await both.close();
    }
    const one = await openDatabase(loadConfig({ DATABASE_URL: db.url }), "serve");
    try {
      expect(one.direct).toBe(one.sql);
      expect(options(one.sql).prepare).toBe(true);
      expect(breakerOf(one.sql)).not.toBeNull();
      expect(breakerOf(one.background)).toBe(breakerOf(one.sql));
    } finally {
      await one.close();
    }
  });

  test("serve warns at start when the pooled connections have no statement timeout (it cannot be sent through PgBouncer)", async () => {
    const config = loadConfig({ DATABASE_URL: db.url, DATABASE_DIRECT_URL: db.url });
    const warned = async () => {
      setLogLevel("warn");
      let db_: Awaited<ReturnType<typeof openDatabase>> | null = null;
      const { out } = await capture(async () => ((db_ = await openDatabase(config, "serve")), 0));
      setLogLevel("error");
      await db_!.close();
      return out.includes("statement_timeout is 0 on the pooled connections");
    };
    expect(await warned()).toBe(true);
    const name = new URL(db.url).pathname.slice(1);
    await db.sql.unsafe(`alter database "${name}" set statement_timeout = '5s'`);
    try {
      expect(await warned()).toBe(false);
    } finally {
      await db.sql.unsafe(`alter database "${name}" reset statement_timeout`);
    }
  });

  test("a CLI command connects to the direct URL only (the pooler may be down)", async () => {
    const nowhere = `postgres://postgres@127.0.0.1:${await freePort()}/nothing`;
    const cli = await openDatabase(loadConfig({ DATABASE_URL: nowhere, DATABASE_DIRECT_URL: db.url }), "cli");
    try {
      expect(cli.direct).toBe(cli.sql);
      expect([...(await cli.sql`select 1 as one`)]).toEqual([{ one: 1 }]);
      // A command fails on its own errors: no breaker.
      expect(breakerOf(cli.sql)).toBeNull();
    } finally {
      await cli.close();
    }
  });
});
