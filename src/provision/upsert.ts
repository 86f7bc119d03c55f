// The one upsert of provisioning, built from postgres.js fragments: every provisioned table is
// written by it, from rows whose keys are its columns, so no column list is written out by hand.
import type { Tx } from "../db/client";

/** The rows written: each one's key columns, and whether it was inserted. */
export type Written = ({ inserted: boolean } & Record<string, unknown>)[];

// Rows per insert statement: far below the 65535 bind parameters of one statement.
export const BATCH = 1000;

/**
 * Inserts `rows`, or updates the row of the same `key` to them where any other column differs
 * (`is distinct from`): writing the same values again writes nothing, not even `stamp` (updated_at),
 * which is set with a change but not compared. Every row has the same columns. Answers the rows
 * written: their keys, each saying whether it was inserted.
 */
export async function upsertRows(
  tx: Tx,
  table: string,
  key: readonly string[],
  rows: Record<string, unknown>[],
  stamp: { column: string; at: Date } | null = null,
): Promise<Written> {
  if (rows.length === 0) return [];
  const compared = Object.keys(rows[0]!).filter((c) => !key.includes(c));
  const written = stamp ? rows.map((r) => ({ ...r, [stamp.column]: stamp.at })) : rows;
  const columns = Object.keys(written[0]!);
  const list = (names: string[], each: (c: string) => ReturnType<Tx>) => names.map((c, i) => tx`${i === 0 ? tx`` : tx`,`} ${each(c)}`);
  const set = list([...compared, ...(stamp ? [stamp.column] : [])], (c) => tx`${tx(c)} = excluded.${tx(c)}`);
  // A table whose only other column is the key has nothing to update: the conflict leaves it be.
  const conflict =
    compared.length === 0
      ? tx`do nothing`
      : tx`do update set ${set}
           where (${list(compared, (c) => tx`${tx(table)}.${tx(c)}`)}) is distinct from (${list(compared, (c) => tx`excluded.${tx(c)}`)})`;
  const out: Written = [];
  for (let i = 0; i < written.length; i += BATCH) {
    const batch = written.slice(i, i + BATCH);
    out.push(
      ...(await tx<Written>`
        insert into ${tx(table)} ${tx(batch as never, columns)}
        on conflict (${tx(key as string[])}) ${conflict}
        returning ${tx(key as string[])}, (xmax = 0) as inserted`),
    );
  }
  return out;
}
