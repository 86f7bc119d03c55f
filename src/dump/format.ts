// The layout of a dump, line by line: `dump.ts` writes exactly this and `reader.ts` accepts only
// this, so the two cannot drift apart.
//
//   -- leadline <version> dump, taken <ISO time>
//   <HEADER: the load hint, session settings, begin;>
//   create table if not exists schema_migrations (…);
//   -- migration 0001_init            ┐ each migration this executable has compiled in, in
//   <its text>                        │ order, up to the one the database was at
//   ;                                 ┘
//   alter table T disable trigger user;   ┐ every table, parents before children
//   copy T (c1, c2, …) from stdin;        │
//   <rows: COPY text fields, tab-separated> │
//   \.                                    │
//   alter table T enable trigger user;    ┘
//   -- sequences
//   create sequence if not exists S as bigint increment by … ;   ┐ every sequence
//   select pg_catalog.setval('S', N, true);                      ┘
//   commit;
// with an empty line after the header, after each migration and after each table.
import { SCHEMA_MIGRATIONS_TABLE } from "../db/migrate";

/**
 * Session settings that make every value's text form unambiguous to the dumping session and to
 * the loading one (dates in ISO order, times in UTC, floats exact).
 */
export const OUTPUT_SETTINGS = ["datestyle = 'ISO, YMD'", "intervalstyle = 'postgres'", "timezone = 'UTC'", "extra_float_digits = 3"];

/** Everything the loading session sets, in the header's order (`restore` sets them itself). */
export const LOAD_SETTINGS = [
  "client_min_messages = warning",
  "statement_timeout = 0",
  "lock_timeout = 0",
  "standard_conforming_strings = on",
  "check_function_bodies = false",
  ...OUTPUT_SETTINGS,
];

export const FIRST_LINE = /^-- leadline \S+ dump, taken \S+$/;

export const firstLine = (version: string, now: Date) => `-- leadline ${version} dump, taken ${now.toISOString()}`;

/** The lines after the first, up to the first migration: the same in every dump. */
export const PREAMBLE: readonly string[] = [
  "-- Load into an EMPTY database: psql -v ON_ERROR_STOP=1 -f dump.sql postgres://…/leadline",
  ...LOAD_SETTINGS.map((s) => `set ${s};`),
  "select pg_catalog.set_config('search_path', 'public', false);",
  "begin;",
  "",
  ...`${SCHEMA_MIGRATIONS_TABLE};`.split("\n"),
  "",
];

export const migrationLine = (name: string) => `-- migration ${name}`;
/** A migration's text as the dump holds it: its lines up to its last non-blank one. */
export const migrationText = (sql: string) => sql.trimEnd();
export const MIGRATION_END = ";";

export const disableTriggers = (table: string) => `alter table ${table} disable trigger user;`;
export const copyStart = (table: string, columns: readonly string[]) => `copy ${table} (${columns.join(", ")}) from stdin;`;
export const COPY_END = "\\.";
export const enableTriggers = (table: string) => `alter table ${table} enable trigger user;`;

export const SEQUENCES = "-- sequences";
export const COMMIT = "commit;";

/** COPY's text format: \N for null; backslash, newline, carriage return and tab escaped. */
export function copyField(value: string | null): string {
  if (value === null) return "\\N";
  return value.replace(/[\\\n\r\t]/g, (c) => (c === "\\" ? "\\\\" : c === "\n" ? "\\n" : c === "\r" ? "\\r" : "\\t"));
}

const UNESCAPED: Record<string, string> = { "\\": "\\", n: "\n", r: "\r", t: "\t" };

/**
 * One field as copyField writes it: \N is null; \\ \n \r \t are unescaped. Any other escape (COPY
 * knows octal, hex, \b…, which psql would read and this would not), a lone backslash at the end or
 * a raw carriage return was not written by copyField: undefined, for the caller to refuse.
 */
export function copyValue(field: string): string | null | undefined {
  if (field === "\\N") return null;
  if (field.includes("\r")) return undefined;
  if (!field.includes("\\")) return field;
  let bad = false;
  const value = field.replace(/\\(.?)/gs, (_, c: string) => UNESCAPED[c] ?? ((bad = true), ""));
  return bad ? undefined : value;
}
