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
import { SCHEMA_MIGRATIONS_TABLE } from "../db/migrate";
import { migrations } from "../db/migrations";
import type { Io } from "../args";
import { VERSION } from "../version";

/** Rows fetched per round trip while copying a table: memory stays flat whatever its size. */
const BATCH_ROWS = 500;
/** Output is handed to the reader in chunks of about this many characters. */
const CHUNK = 64 * 1024;

/**
 * Session settings that make every value's text form unambiguous to the loading session too
 * (dates in ISO order, times in UTC, floats exact); emitted at the top of the dump as well.
 */
const OUTPUT_SETTINGS = ["datestyle = 'ISO, YMD'", "intervalstyle = 'postgres'", "timezone = 'UTC'", "extra_float_digits = 3"];

interface Table {
  oid: number;
  /** Quoted, schema-qualified. */
  name: string;
  /** Quoted column names, generated columns left out (COPY refuses them). */
  columns: string[];
  /** The SELECT that reads every row as text, built by PostgreSQL's own format(%I). */
  select: string;
}

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
    await emit(header(now));
    await emit(`${SCHEMA_MIGRATIONS_TABLE};\n\n`);
    for (const m of migrations.slice(0, latest)) await emit(`-- migration ${m.name}\n${m.sql.trimEnd()}\n;\n\n`);
    for (const table of inForeignKeyOrder(await tables(tx), await references(tx))) await copyTable(tx, table, emit);
    await emit("-- sequences\n");
    for (const s of await sequences(tx)) await emit(`${s.create}\n${s.setval}\n`);
    await emit("\ncommit;\n");
  });
  io.out(pending);
  await io.flush();
}

function header(now: Date): string {
  return [
    `-- leadline ${VERSION} dump, taken ${now.toISOString()}`,
    "-- Load into an EMPTY database: psql -v ON_ERROR_STOP=1 -f dump.sql postgres://…/leadline",
    "set client_min_messages = warning;",
    "set statement_timeout = 0;",
    "set lock_timeout = 0;",
    "set standard_conforming_strings = on;",
    "set check_function_bodies = false;",
    ...OUTPUT_SETTINGS.map((s) => `set ${s};`),
    "select pg_catalog.set_config('search_path', 'public', false);",
    "begin;",
    "",
    "",
  ].join("\n");
}

async function tables(tx: Tx): Promise<Table[]> {
  return tx<Table[]>`
    select c.oid::int as oid,
           format('%I.%I', n.nspname, c.relname) as name,
           array_agg(format('%I', a.attname) order by a.attnum) as columns,
           format('select %s from %I.%I', string_agg(format('%I::text', a.attname), ', ' order by a.attnum), n.nspname, c.relname) as select
    from pg_class c
    join pg_namespace n on n.oid = c.relnamespace
    join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
    where n.nspname = 'public' and c.relkind = 'r' and c.relpersistence <> 't'
    group by c.oid, n.nspname, c.relname
    order by c.relname`;
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
  await emit(`alter table ${table.name} disable trigger user;\ncopy ${table.name} (${table.columns.join(", ")}) from stdin;\n`);
  for await (const rows of tx.unsafe(table.select).values().cursor(BATCH_ROWS)) {
    let text = "";
    for (const row of rows as unknown as (string | null)[][]) text += row.map(copyField).join("\t") + "\n";
    await emit(text);
  }
  await emit(`\\.\nalter table ${table.name} enable trigger user;\n\n`);
}

/** COPY's text format: \N for null; backslash, newline, carriage return and tab escaped. */
export function copyField(value: string | null): string {
  if (value === null) return "\\N";
  return value.replace(/[\\\n\r\t]/g, (c) => (c === "\\" ? "\\\\" : c === "\n" ? "\\n" : c === "\r" ? "\\r" : "\\t"));
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
