// A fresh database per test file, cloned from the migrated template that test/run.ts builds, so
// files never share rows and can run in parallel.
import { randomBytes } from "node:crypto";
import { connect, type Sql } from "../../src/db/client";

export interface TestDatabase {
  url: string;
  sql: Sql;
  /** Ends the client and drops the database; safe to call twice. */
  drop(): Promise<void>;
}

/** The URL of database `name` on the server that `serverUrl` points at. */
export function databaseUrl(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${encodeURIComponent(name)}`;
  return url.toString();
}

function settings(): { adminUrl: string; template: string } {
  const adminUrl = process.env.LEADLINE_TEST_ADMIN_URL;
  const template = process.env.LEADLINE_TEST_TEMPLATE;
  if (!adminUrl || !template) {
    throw new Error(
      "LEADLINE_TEST_ADMIN_URL / LEADLINE_TEST_TEMPLATE are not set: run the tests with `make test` or " +
        "`bun test/run.ts [files…]`, which start PostgreSQL and build the template, not with bare `bun test`",
    );
  }
  return { adminUrl, template };
}

async function withAdmin<T>(adminUrl: string, fn: (admin: Sql) => Promise<T>): Promise<T> {
  const admin = connect(adminUrl, { max: 1, statementTimeoutMs: 0, applicationName: "leadline-test-admin" });
  try {
    return await fn(admin);
  } finally {
    await admin.end({ timeout: 5 });
  }
}

export async function testDatabase(): Promise<TestDatabase> {
  const { adminUrl, template } = settings();
  const name = `t_${randomBytes(6).toString("hex")}`;
  await withAdmin(adminUrl, async (admin) => {
    // Concurrent clones of one template are fine (they share a lock on it); what fails with 55006
    // is a session still connected to the template, e.g. one test/run.ts has just closed and whose
    // backend has not exited yet. PostgreSQL itself waits 5 s for that; retry a little beyond.
    for (let attempt = 1; ; attempt++) {
      try {
        await admin`create database ${admin(name)} template ${admin(template)}`;
        return;
      } catch (err) {
        if ((err as { code?: unknown }).code !== "55006" || attempt === 20) throw err;
        await Bun.sleep(250);
      }
    }
  });
  const url = databaseUrl(adminUrl, name);
  const sql = connect(url, { max: 4, statementTimeoutMs: 0, applicationName: "leadline-test" });
  let dropped = false;
  return {
    url,
    sql,
    async drop() {
      if (dropped) return;
      dropped = true;
      await sql.end({ timeout: 5 });
      await withAdmin(adminUrl, (admin) => admin`drop database if exists ${admin(name)} with (force)`);
    },
  };
}
