// `leadline restore FILE`: loads a dump written by `leadline dump` into an EMPTY database, embedded
// or PostgreSQL, in one transaction. The file is read by a strict parser (reader.ts) and nothing of
// its text is executed: the session settings, the schema_migrations table and each migration are
// this executable's own (a migration is accepted only when the dump holds exactly its text), the
// tables, columns and column types come from the catalog those migrations made, rows are bind
// parameters and a sequence's position a setval() with parameters. A line the parser refuses
// rolls the transaction back: nothing of the file is kept, and no statement a tampered file holds
// (`copy … to`, `create extension dblink`) has been run.
//
// PGlite takes no COPY FROM STDIN over the wire, so COPY blocks become batched INSERTs. Every value
// is sent as text and cast to its column's type in SQL (`$1::text::jsonb`), so it is read by the
// type's own input function as COPY would: left to infer the parameters' types, postgres.js would
// serialize the text again for them (a jsonb value JSON-quoted, a bytea's hex taken as bytes,
// "true" read as false).
import { createReadStream } from "node:fs";
import type { Sql, Tx } from "../db/client";
import { SCHEMA_MIGRATIONS_TABLE } from "../db/migrate";
import { migrations } from "../db/migrations";
import { sequenceNames, tables, type Table } from "./catalog";
import { LOAD_SETTINGS } from "./format";
import { DumpReader, Incomplete, linesOf, Refused, type Sequence } from "./reader";

/** Bind parameters per INSERT, well under PostgreSQL's 65,535. */
const PARAMS_PER_INSERT = 20_000;

/** The one sequence the schema makes at run time (a trigger on api_keys), with its defaults. */
const RATE_SEQUENCE = /^public\.rate_seq_[0-9]{1,19}$/;
const DEFAULT_SEQUENCE = { type: "bigint", increment: 1n, min: 1n, max: 9223372036854775807n, start: 1n, cache: 1n, cycle: false };

interface Catalog {
  tables: Map<string, Table>;
  sequences: Set<string>;
  loaded: Set<string>;
}

interface Copy {
  table: Table;
  /** Per column: `::text::<its type>`, the type as format_type() names it. */
  casts: string[];
  rows: (string | null)[][];
  /** The lines of the first and the last row not yet inserted (for the message of a value PostgreSQL refuses). */
  firstLine: number;
  lastLine: number;
}

/** Applies the dump in one transaction; returns the number of rows loaded. */
export async function restoreDump(sql: Sql, path: string): Promise<number> {
  const [{ tables: count }] = await sql<{ tables: number }[]>`select count(*)::int as tables from pg_tables where schemaname = 'public'`;
  if (count > 0) throw new Error(`restore needs an empty database, and this one has ${count} tables (restore into a new DATA_DIR or an empty PostgreSQL database)`);
  const reader = new DumpReader();
  try {
    return await sql.begin(async (tx) => {
      // Opened once the transaction has begun and read at once (4ed5d41: a readline made before a
      // BEGIN that took long on a loaded machine emitted every line unheard; a stream iterated
      // later would not lose them, but nothing needs it open earlier).
      const input = path === "-" ? process.stdin : createReadStream(path);
      let catalog: Catalog | null = null;
      let copy: Copy | null = null;
      let loaded = 0;
      let migrated = 0;
      let migrationRowsAt = 0;
      const flush = async () => {
        if (copy && copy.rows.length > 0) {
          await insertRows(tx, copy);
          loaded += copy.rows.length;
          copy.rows = [];
          copy.firstLine = copy.lastLine + 1;
        }
      };
      for await (const line of linesOf(input)) {
        const step = reader.next(line);
        if (step === null) continue;
        switch (step.kind) {
          case "preamble":
            // The dump's own settings, set by this executable; `begin;` is this transaction.
            for (const s of LOAD_SETTINGS) await tx.unsafe(`set local ${s}`);
            await tx`select pg_catalog.set_config('search_path', 'public', true)`;
            await tx.unsafe(SCHEMA_MIGRATIONS_TABLE);
            break;
          case "migration":
            await tx.unsafe(migrations[step.index].sql);
            migrated++;
            break;
          case "copy": {
            catalog ??= await readCatalog(tx);
            const table = catalog.tables.get(step.table);
            if (!table) throw new Refused(reader.lineNumber, `${step.table} is not a table of the dump's migrations`);
            if (catalog.loaded.has(table.name)) throw new Refused(reader.lineNumber, `the rows of ${table.name} a second time`);
            if (step.columns.join(", ") !== table.columns.join(", ")) {
              throw new Refused(reader.lineNumber, `the columns of ${table.name} are (${table.columns.join(", ")}), not (${step.columns.join(", ")})`);
            }
            catalog.loaded.add(table.name);
            if (table.name === "public.schema_migrations") migrationRowsAt = reader.lineNumber;
            // User triggers off while its rows arrive, as the dump's own lines say (dump.ts: copyTable).
            // The name is the catalog's, quoted by format(%I.%I).
            await tx.unsafe(`alter table ${table.name} disable trigger user`);
            copy = { table, casts: table.types.map((t) => `::text::${t}`), rows: [], firstLine: reader.lineNumber + 1, lastLine: reader.lineNumber };
            break;
          }
          case "row":
            copy!.rows.push(step.fields);
            copy!.lastLine = reader.lineNumber;
            if (copy!.rows.length * copy!.table.columns.length >= PARAMS_PER_INSERT) await flush();
            break;
          case "copied":
            await flush();
            await tx.unsafe(`alter table ${copy!.table.name} enable trigger user`);
            copy = null;
            break;
          case "sequence":
            catalog ??= await readCatalog(tx);
            await setSequence(tx, catalog, step.sequence, reader.lineNumber);
            break;
          case "end":
            await checkMigrationRows(tx, migrated, migrationRowsAt || reader.lineNumber);
            break;
        }
      }
      reader.end();
      return loaded;
    });
  } catch (err) {
    if (err instanceof Refused) throw new Error(`${path} line ${err.line}: ${err.reason}`);
    if (err instanceof Incomplete) throw new Error(`${path} ${err.message}`);
    const code = (err as NodeJS.ErrnoException).code;
    if ((err as NodeJS.ErrnoException).syscall !== undefined && code !== undefined) throw new Error(`cannot read ${path}: ${code}`);
    throw err;
  }
}

/**
 * schema_migrations' rows must name exactly the migrations the dump applied: `migrate` trusts them,
 * and would run again a migration they leave out or refuse to start past one they invent.
 */
async function checkMigrationRows(tx: Tx, migrated: number, line: number): Promise<void> {
  const rows = await tx<{ version: number; name: string }[]>`select version, name from schema_migrations order by version`;
  const listed = rows.map((r) => `${r.version} ${r.name}`).join(", ");
  const applied = migrations.slice(0, migrated).map((m) => `${m.version} ${m.name}`).join(", ");
  if (listed !== applied) throw new Refused(line, `schema_migrations lists (${listed}), not the migrations the dump holds (${applied})`);
}

async function readCatalog(tx: Tx): Promise<Catalog> {
  return { tables: new Map((await tables(tx)).map((t) => [t.name, t])), sequences: await sequenceNames(tx), loaded: new Set() };
}

/**
 * A sequence the migrations made exists already (the dump's `create … if not exists` changes
 * nothing there either); a key's rate sequence is made as its trigger makes it. Any other name, or
 * a rate sequence with settings its trigger never gives, is refused. Then its position.
 */
async function setSequence(tx: Tx, catalog: Catalog, s: Sequence, line: number): Promise<void> {
  if (!catalog.sequences.has(s.name)) {
    if (!RATE_SEQUENCE.test(s.name)) throw new Refused(line, `${s.name} is not a sequence of the dump's migrations`);
    const { name, value, called, ...settings } = s;
    if (Object.entries(DEFAULT_SEQUENCE).some(([k, v]) => settings[k as keyof typeof settings] !== v)) {
      throw new Refused(line, `${name} has settings its trigger never gives it`);
    }
    // The name matched RATE_SEQUENCE above: `public.rate_seq_` and digits.
    await tx.unsafe(`create sequence ${name}`);
    catalog.sequences.add(name);
  }
  try {
    await tx`select pg_catalog.setval(${s.name}::regclass, ${s.value.toString()}::bigint, ${s.called})`;
  } catch (err) {
    throw new Refused(line, `the position of ${s.name}: ${(err as Error).message}`);
  }
}

async function insertRows(tx: Tx, copy: Copy): Promise<void> {
  let n = 0;
  const values = copy.rows.map((row) => `(${row.map((_, i) => `$${++n}${copy.casts[i]}`).join(", ")})`).join(", ");
  // The table, its columns and their types come from the catalog (reader.ts checked the dump's
  // names against them); the values are parameters.
  try {
    await tx.unsafe(`insert into ${copy.table.name} (${copy.table.columns.join(", ")}) values ${values}`, copy.rows.flat() as string[]);
  } catch (err) {
    const upTo = copy.lastLine === copy.firstLine ? "" : ` (or a row after it, up to line ${copy.lastLine})`;
    throw new Refused(copy.firstLine, `a row of ${copy.table.name}${upTo}: ${(err as Error).message}`);
  }
}
