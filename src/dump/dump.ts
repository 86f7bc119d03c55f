// `leadline dump`: a plain SQL dump of the whole database that psql loads into an empty
// PostgreSQL 14+. Written over the `sql` client, so it is the same on the embedded database and on
// a real server: Debian's pg_dump refuses PGlite's server version, and PGlite has one session that
// a foreign client would share with the server.
//
// The schema is the migrations themselves (compiled into the executable), applied in order: a
// schema rebuilt from pg_catalog could differ from what `migrate` makes, and the next start of the
// loaded database checks schema_migrations against that list. Then every table's rows as COPY
// blocks (parents before children, so foreign keys check as rows arrive), then every sequence's
// position, including the per-key rate sequences (`rate_seq_<id>`) that a trigger creates at run
// time and that no migration names.
import type { Sql, Tx } from "../db/client";
import { migrations } from "../db/migrations";
import type { Io } from "../args";
import { VERSION } from "../version";
import { tables, type Table } from "./catalog";
import {
  COMMIT,
  COPY_END,
  copyField,
  copyStart,
  disableTriggers,
  enableTriggers,
  firstLine,
  MIGRATION_END,
  migrationLine,
  migrationText,
  OUTPUT_SETTINGS,
  PREAMBLE,
  SEQUENCES,
} from "./format";

/** Rows fetched per round trip while copying a table: memory stays flat whatever its size. */
const BATCH_ROWS = 500;
/** Output is handed to the reader in chunks of about this many characters. */
const CHUNK = 64 * 1024;

/** Writes the dump to `io.out`, in one REPEATABLE READ READ ONLY transaction (consistent while serving). */
export async function writeDump(sql: Sql, io: Io, now: Date): Promise<void> {
  let pending = "";
  const emit = async (text: string) => {
    pending += text;
    if (pending.length >= CHUNK) {
      io.out(pending);
      pending = "";
      await io.flush();
    }
  };
  await sql.begin("isolation level repeatable read read only", async (tx) => {
    for (const s of OUTPUT_SETTINGS) await tx.unsafe(`set local ${s}`);
    const applied = await tx<{ version: number }[]>`select version from schema_migrations order by version`;
    const latest = applied.at(-1)?.version ?? 0;
    if (latest > migrations.length) {
      throw new Error(`the database is at migration ${latest}, newer than this executable (${migrations.length}); dump it with the newer one`);
    }
    await emit([firstLine(VERSION, now), ...PREAMBLE].join("\n") + "\n");
    for (const m of migrations.slice(0, latest)) await emit(`${migrationLine(m.name)}\n${migrationText(m.sql)}\n${MIGRATION_END}\n\n`);
    for (const table of inForeignKeyOrder(await tables(tx), await references(tx))) await copyTable(tx, table, emit);
    await emit(`${SEQUENCES}\n`);
    for (const s of await sequences(tx)) await emit(`${s.create}\n${s.setval}\n`);
    await emit(`\n${COMMIT}\n`);
  });
  io.out(pending);
  await io.flush();
}

async function references(tx: Tx): Promise<{ child: number; parent: number }[]> {
  return tx<{ child: number; parent: number }[]>`
    select conrelid::int as child, confrelid::int as parent
    from pg_constraint where contype = 'f' and conrelid <> confrelid`;
}

/**
 * Parents before children (a depth-first topological order, by name within each level so the
 * dump is stable). A cycle of foreign keys between tables (none in the schema today) cannot be
 * ordered: its tables come in name order and the load fails loudly rather than silently.
 */
export function inForeignKeyOrder(list: Table[], edges: { child: number; parent: number }[]): Table[] {
  const byOid = new Map(list.map((t) => [t.oid, t]));
  const parents = new Map<number, number[]>();
  for (const e of edges) parents.set(e.child, [...(parents.get(e.child) ?? []), e.parent]);
  const done = new Set<number>();
  const visiting = new Set<number>();
  const out: Table[] = [];
  const visit = (t: Table) => {
    if (done.has(t.oid) || visiting.has(t.oid)) return;
    visiting.add(t.oid);
    for (const p of parents.get(t.oid) ?? []) {
      const parent = byOid.get(p);
      if (parent) visit(parent);
    }
    visiting.delete(t.oid);
    done.add(t.oid);
    out.push(t);
  };
  for (const t of list) visit(t);
  return out;
}

/**
 * One COPY block. User triggers are off during the load so that rows arrive as they were dumped:
 * trigger-maintained columns and tables (lead placement, dni_holds following dni_numbers, the
 * rate sequence made per key) are in the dump already, and the capacity trigger would otherwise
 * re-judge appointments booked under earlier rules.
 */
async function copyTable(tx: Tx, table: Table, emit: (text: string) => Promise<void>): Promise<void> {
  await emit(`${disableTriggers(table.name)}\n${copyStart(table.name, table.columns)}\n`);
  for await (const rows of tx.unsafe(table.select).values().cursor(BATCH_ROWS)) {
    let text = "";
    for (const row of rows as unknown as (string | null)[][]) text += row.map(copyField).join("\t") + "\n";
    await emit(text);
  }
  await emit(`${COPY_END}\n${enableTriggers(table.name)}\n\n`);
}

async function sequences(tx: Tx): Promise<{ create: string; setval: string }[]> {
  // `if not exists`: the migrations made most of them already (serial columns, dni_hold_ids);
  // the rate sequences exist only here. pg_sequences.last_value is null before the first nextval.
  return tx<{ create: string; setval: string }[]>`
    select format('create sequence if not exists %I.%I as %s increment by %s minvalue %s maxvalue %s start %s cache %s %s;',
                  schemaname, sequencename, data_type, increment_by, min_value, max_value, start_value, cache_size,
                  case when cycle then 'cycle' else 'no cycle' end) as create,
           format('select pg_catalog.setval(%L, %s, %s);', format('%I.%I', schemaname, sequencename),
                  coalesce(last_value, start_value), case when last_value is null then 'false' else 'true' end) as setval
    from pg_sequences where schemaname = 'public' order by sequencename`;
}
