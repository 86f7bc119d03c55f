// Forward-only migrations, applied under a transaction-scoped advisory lock so that several
// instances starting together serialize here and each sees the others' work.
import type { Sql } from "./client";
import { migrations } from "./migrations";

const MIGRATION_LOCK = 727_001;

/** The table of applied migrations, made by the runner itself (and by a dump, src/dump/). */
export const SCHEMA_MIGRATIONS_TABLE = `create table if not exists schema_migrations (
  version integer primary key, name text not null, applied_at timestamptz not null default now())`;

export function checkContiguous(list: ReadonlyArray<{ version: number; name: string }>): void {
  list.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migration ${m.name} is numbered ${m.version}, expected ${i + 1}`);
  });
}

/** Applies pending migrations; returns the names applied. */
export async function migrate(sql: Sql, list = migrations): Promise<string[]> {
  checkContiguous(list);
  return sql.begin(async (tx) => {
    // Neither bounded: a migration may wait for a busy table, and instances wait for each other here.
    await tx`set local statement_timeout = 0`;
    await tx`set local lock_timeout = 0`;
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK})`;
    await tx.unsafe(SCHEMA_MIGRATIONS_TABLE);
    const done = new Set((await tx<{ version: number }[]>`select version from schema_migrations`).map((r) => r.version));
    const latest = Math.max(0, ...done);
    if (latest > list.length) {
      throw new Error(`database is at migration ${latest}, newer than this executable (${list.length})`);
    }
    const applied: string[] = [];
    for (const m of list) {
      if (done.has(m.version)) continue;
      await tx.unsafe(m.sql);
      await tx`insert into schema_migrations (version, name) values (${m.version}, ${m.name})`;
      applied.push(m.name);
    }
    return applied;
  });
}
