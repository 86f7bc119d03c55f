// The tables and sequences a dump holds, read from the catalog: by `dump` to write them, and by
// `restore` (after the dump's migrations, checked to be this executable's own, have made them) as
// the only tables, columns and sequences a dump may name.
import type { Tx } from "../db/client";

export interface Table {
  oid: number;
  /** Quoted, schema-qualified, by PostgreSQL's format(%I.%I). */
  name: string;
  /** Quoted column names, generated columns left out (COPY refuses them), in column order. */
  columns: string[];
  /** Each column's type as format_type() names it. */
  types: string[];
  /** The SELECT that reads every row as text, built by PostgreSQL's own format(%I). */
  select: string;
}

export async function tables(tx: Tx): Promise<Table[]> {
  return tx<Table[]>`
    select c.oid::int as oid,
           format('%I.%I', n.nspname, c.relname) as name,
           array_agg(format('%I', a.attname) order by a.attnum) as columns,
           array_agg(format_type(a.atttypid, a.atttypmod) order by a.attnum) as types,
           format('select %s from %I.%I', string_agg(format('%I::text', a.attname), ', ' order by a.attnum), n.nspname, c.relname) as select
    from pg_class c
    join pg_namespace n on n.oid = c.relnamespace
    join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
    where n.nspname = 'public' and c.relkind = 'r' and c.relpersistence <> 't'
    group by c.oid, n.nspname, c.relname
    order by c.relname`;
}

/** The sequences that exist, as format(%I.%I) names them. */
export async function sequenceNames(tx: Tx): Promise<Set<string>> {
  const rows = await tx<{ name: string }[]>`select format('%I.%I', schemaname, sequencename) as name from pg_sequences where schemaname = 'public'`;
  return new Set(rows.map((r) => r.name));
}
