// `leadline restore FILE`: loads a dump written by `leadline dump` into an EMPTY database, embedded
// or PostgreSQL. psql does this for PostgreSQL; the embedded database can only be reached from
// inside leadline, and PGlite takes no COPY FROM STDIN over the wire, so the dump's statements are
// run as they are and its COPY blocks become batched INSERTs. Every value is sent as text and cast
// to its column's type in SQL (`$1::text::jsonb`), so it is read by the type's own input function
// as COPY would: left to infer the parameters' types, postgres.js would serialize the text again
// for them (a jsonb value JSON-quoted, a bytea's hex taken as bytes, "true" read as false).
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import type { Sql, Tx } from "../db/client";

/** Bind parameters per INSERT, well under PostgreSQL's 65,535. */
const PARAMS_PER_INSERT = 20_000;

const COPY_START = /^copy (\S+) \((.*)\) from stdin;$/;

/** Applies the dump in one transaction; returns the number of rows loaded. */
export async function restoreDump(sql: Sql, path: string): Promise<number> {
  const [{ tables }] = await sql<{ tables: number }[]>`select count(*)::int as tables from pg_tables where schemaname = 'public'`;
  if (tables > 0) throw new Error(`restore needs an empty database, and this one has ${tables} tables (restore into a new DATA_DIR or an empty PostgreSQL database)`);
  let first = true;
  return sql.begin(async (tx) => {
    // Opened here, once the transaction has begun, and iterated at once: readline emits its lines
    // from the moment it is made, and its iterator holds only those emitted after it exists. Made
    // before BEGIN (which on a loaded machine took longer than reading the file), the lines and
    // the end of the file went by unheard and the restore waited for ever (test/dump.test.ts).
    const lines = createInterface({ input: path === "-" ? process.stdin : createReadStream(path, "utf8"), crlfDelay: Infinity });
    let statements: string[] = [];
    let copy: Copy | null = null;
    let loaded = 0;
    const run = async () => {
      if (statements.length > 0) await tx.unsafe(statements.join("\n"));
      statements = [];
    };
    for await (const line of lines) {
      if (first) {
        if (!line.startsWith("-- leadline ")) throw new Error(`${path} is not a dump written by leadline dump`);
        first = false;
      }
      if (copy) {
        if (line === "\\.") {
          await insertRows(tx, copy);
          loaded += copy.rows.length;
          copy = null;
          continue;
        }
        const row = line.split("\t").map(copyValue);
        if (row.length !== copy.width) throw new Error(`${copy.table}: a row has ${row.length} fields, not ${copy.width}`);
        copy.rows.push(row);
        if (copy.rows.length * copy.width >= PARAMS_PER_INSERT) {
          await insertRows(tx, copy);
          loaded += copy.rows.length;
          copy.rows = [];
        }
        continue;
      }
      const start = COPY_START.exec(line);
      if (start) {
        await run();
        const columns = start[2].split(", ");
        const types = new Map(
          (await tx<{ name: string; type: string }[]>`
            select format('%I', attname) as name, format_type(atttypid, atttypmod) as type
            from pg_attribute where attrelid = ${start[1]}::regclass and attnum > 0 and not attisdropped`).map((c) => [c.name, c.type]),
        );
        const missing = columns.find((c) => !types.has(c));
        if (missing !== undefined) throw new Error(`${start[1]} has no column ${missing}`);
        copy = { table: start[1], columns: start[2], width: columns.length, casts: columns.map((c) => `::text::${types.get(c)}`), rows: [] };
      } else if (line !== "begin;" && line !== "commit;") {
        // The dump's own transaction is this one.
        statements.push(line);
      }
    }
    if (first) throw new Error(`${path} is empty`);
    if (copy) throw new Error(`${path} ends inside the rows of ${copy.table}: the dump is incomplete`);
    await run();
    return loaded;
  });
}

interface Copy {
  table: string;
  columns: string;
  width: number;
  /** Per column: `::text::<its type>`, the type as format_type() names it. */
  casts: string[];
  rows: (string | null)[][];
}

async function insertRows(tx: Tx, copy: Copy): Promise<void> {
  if (copy.rows.length === 0) return;
  let n = 0;
  const values = copy.rows.map((row) => `(${row.map((_, i) => `$${++n}${copy.casts[i]}`).join(", ")})`).join(", ");
  // The table and column names come from the dump, quoted there by PostgreSQL's format(%I), and
  // are checked against the catalog above; the types come from the catalog.
  await tx.unsafe(`insert into ${copy.table} (${copy.columns}) values ${values}`, copy.rows.flat() as string[]);
}

/** One field of COPY's text format: \N is null; \\ \n \r \t \b \f \v are unescaped. */
export function copyValue(field: string): string | null {
  if (field === "\\N") return null;
  return field.replace(/\\(.)/g, (_, c: string) => ({ n: "\n", r: "\r", t: "\t", b: "\b", f: "\f", v: "\v" })[c] ?? c);
}
