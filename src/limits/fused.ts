// The hottest reads (get lead, CTI lookup) draw their request's hit inside their own, batched,
// statement: one round trip instead of two. This is the one place that knows how: a read's query
// takes the hits' sequences as a column `u.seq` of its input relation and selects `drawHit`; the
// drawn value then admits the read or refuses it (rate_limited). Nothing else sees the counting.
import type { Sql } from "../db/client";
import { hotReads } from "../db/batcher";
import { AppError } from "../errors";
import type { KeyCounter, KeyHit } from "./key-counter";

/** The column drawing one hit per row of `u`: select it as `hit_`. */
export const drawHit = (sql: Sql) => sql`nextval(u.seq::oid::regclass) as hit_`;

/**
 * Concurrent reads of one kind, batched (src/db/batcher.ts), each admitted by the hit it drew.
 * `run` answers one row per input, in order, with the drawn `hit_` beside the read's result.
 */
export function countedReads<In, Out>(
  keys: KeyCounter,
  run: (inputs: In[], seqs: number[]) => Promise<{ hit_: number; out: Out }[]>,
  /** The request deadline, when the instance has its own (Config.deadlineMs). */
  deadlineMs: number | null = null,
) {
  const batcher = hotReads<{ input: In; hit: KeyHit }, { hit_: number; out: Out }>((reads) =>
    run(
      reads.map((r) => r.input),
      reads.map((r) => r.hit.seq),
    ),
    deadlineMs,
  );
  return {
    async load(hit: KeyHit, input: In): Promise<Out> {
      const row = await batcher.load({ input, hit });
      if (!hit.within(row.hit_)) throw new AppError("rate_limited");
      return row.out;
    },
    /** For a request refused before it reads (bad input): it still counts, and over the limit is a 429. */
    async countAlone(hit: KeyHit): Promise<void> {
      if (!(await keys.drawAlone(hit))) throw new AppError("rate_limited");
    },
  };
}

export type CountedReads<In, Out> = ReturnType<typeof countedReads<In, Out>>;
