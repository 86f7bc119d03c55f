// Number-insertion test data and helpers: pools applied through real provisioning, engines on
// their own clients, and the SQL check that no number was ever held by two visitors at once.
import postgres from "postgres";
import type { Sql } from "../../src/db/client";
import { applyProvisioning } from "../../src/provision/service";
import type { ProvisioningFile } from "../../src/provision/model";
import { ManualClock } from "./clock";

/** The tests' starting time: a fixed moment, so that expiries are exact. */
export const T0 = Date.UTC(2026, 10, 23, 12, 0, 0);
export const testClock = (ms = T0) => new ManualClock(ms);

export interface PoolSpec {
  key?: string;
  numbers: string[];
  fallback?: string;
  placeholder?: string;
  ttl_seconds?: number;
  org_id?: number;
}

/** `count` numbers 512555NNNN starting at 0101 + offset. */
export const poolNumbers = (count: number, offset = 0) =>
  Array.from({ length: count }, (_, i) => `512555${String(101 + offset + i).padStart(4, "0")}`);

/** Provisions org 1 (when missing) and the pools, exactly as `leadline provision` would. */
export async function provisionPools(sql: Sql, pools: PoolSpec[]): Promise<void> {
  const file = {
    orgs: [{ id: 1, name: "Acme" }],
    dni_pools: pools.map((p) => ({
      key: p.key ?? "acme-site",
      org_id: p.org_id ?? 1,
      name: "site",
      numbers: p.numbers,
      fallback: p.fallback ?? "5125550100",
      placeholder: p.placeholder ?? "5125550199",
      ttl_seconds: p.ttl_seconds ?? 1800,
    })),
  } as unknown as ProvisioningFile;
  await applyProvisioning(sql, file);
}

/**
 * A client of its own (like another instance's) that counts the statements it sends, so a test
 * can tell an answer from memory from one that went to the database.
 */
export function countingClient(url: string, max = 4): { sql: Sql; count: () => number; end: () => Promise<void> } {
  let n = 0;
  const sql = postgres(url, {
    max,
    onnotice: () => {},
    connection: { TimeZone: "UTC" },
    types: { bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) } },
    debug: () => {
      n++;
    },
  }) as unknown as Sql;
  return { sql, count: () => n, end: () => sql.end({ timeout: 5 }) };
}

/** Pairs of holds of one number whose spans overlap: must always be empty. */
export async function overlappingHolds(sql: Sql): Promise<unknown[]> {
  return [...await sql`
    select a.number, a.visitor_id as a_visitor, b.visitor_id as b_visitor,
           a.started_at as a_start, a.ends_at as a_end, b.started_at as b_start, b.ends_at as b_end
    from dni_hold_spans a join dni_hold_spans b
      on a.number = b.number and a.id < b.id
     and a.started_at < b.ends_at and b.started_at < a.ends_at`];
}

/**
 * Holds the row lock on `numbers`' holds in a transaction of its own (as another instance's
 * renewal or an allocation does) until `release` is called; `done` settles when it has ended.
 */
export async function holdRows(sql: Sql, numbers: string[]): Promise<{ release: () => void; done: Promise<unknown> }> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const done = sql.begin(async (t) => {
    await t`select 1 from dni_holds where number = any(${numbers}::text[]) for update`;
    locked();
    await released;
  });
  await Promise.race([isLocked, done]);
  return { release, done };
}
