// How to read a search's newest matching messages: walk the newest messages checking each one's
// words, or read every match from the full-text index and keep the newest. Which is cheaper
// depends on how many messages hold the words: a word in one message of a hundred is met every
// hundred messages (walk 20,000 for 200 matches: 17 ms at 5,000,000 messages), one in a thousand
// is cheaper read from the index (5,000 matches; walking 200,000 messages took 185 ms). The
// planner chose the walk there: it costs the walk as a cheap sequential read and the index's heap
// reads as four times dearer, while in a warm cache a walked message costs under 1 µs. So the choice is made here, from the planner's own statistics of messages.search
// (the share of messages holding each frequent word, pg_stats), and imposed for that statement.
import type { Sql, Tx } from "../db/client";

export type MessageRead = "walk" | "index";

/** f²·n from which walking the newest messages is cheaper than reading every match (messageRead). */
export const WALK_FROM = 15;

/**
 * The greatest share of messages a word the statistics do not list can hold. ANALYZE lists every
 * lexeme above a cutoff of about 9 / ((1,000 + 10) × 1,000 / 7) of the lexemes it saw (PostgreSQL's
 * ts_typanalyze.c, at the default statistics target), about 0.08% of messages at a dozen words a
 * message, unless the list is full and its least share is lower. Half the least listed share alone
 * was taken before, which is far too high when the messages are templates of a few words (every
 * listed word in every message): a name in none of them was then walked for through all 5,000,000
 * messages (3 s a search, bench/workspace.ts).
 */
const UNLISTED_MAX = 0.001;

interface WordStats {
  /** The frequent lexemes and the share of messages holding each. */
  words: { lexeme: string; share: number }[];
  /** The least share listed: a word not listed is rarer. */
  floor: number;
  /** Messages in the table (the planner's estimate). */
  rows: number;
}

/**
 * The statistics change only when the table is analyzed (autovacuum, every so often), and reading
 * them (10,000 lexemes through pg_stats) took 50 ms: read once per pool and kept five minutes.
 */
const STATS_TTL_MS = 5 * 60_000;
const cached = new WeakMap<object, { at: number; stats: Promise<WordStats | null> }>();

async function readStats(sql: Sql): Promise<WordStats | null> {
  const [row] = await sql<{ rows: number; elems: string[] | null; freqs: number[] | null }[]>`
    select greatest(c.reltuples, 0)::float8 as rows, s.most_common_elems::text::text[] as elems, s.most_common_elem_freqs::float8[] as freqs
    from pg_class c
    left join pg_stats s on s.schemaname = current_schema() and s.tablename = 'messages' and s.attname = 'search'
    where c.oid = 'messages'::regclass`;
  if (!row || !row.elems || !row.freqs || row.rows <= 0) return null;
  const words = row.elems.map((lexeme, i) => ({ lexeme, share: row.freqs![i] }));
  // After the shares: the least and the greatest share, then the share of nulls.
  return { words, floor: row.freqs[row.elems.length] ?? 0, rows: row.rows };
}

function statsOf(sql: Sql): Promise<WordStats | null> {
  const now = performance.now();
  const hit = cached.get(sql);
  if (hit && now - hit.at < STATS_TTL_MS) return hit.stats;
  const stats = readStats(sql).catch(() => null);
  cached.set(sql, { at: now, stats });
  return stats;
}

/**
 * A word as the column's lexemes hold it, near enough for an estimate (sql/0026 leadline_fold
 * decides what matches; this only guesses how often).
 */
const lexemeOf = (word: string) => word.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();

/**
 * The cheaper read for these words (AND of word starts), or null when the column has no
 * statistics yet (a new database: the planner decides). With `f` the share of messages holding
 * them all (the product of each word start's share: the listed words' sum, for one not listed
 * half the least listed share, at most UNLISTED_MAX) and `n` the messages, walking reads about 200 / f messages and the
 * index about f·n: the walk wins when f²·n ≥ 15 (measured on bench/search.ts's data: 0.7 µs a
 * walked message against 10 µs a match read from the index, its heap row, its lead and the sort;
 * at 5,000,000 messages the two meet at a word in 600 messages, about 85 ms either way).
 */
export async function messageRead(sql: Sql, tokens: string[]): Promise<MessageRead | null> {
  const stats = await statsOf(sql);
  if (!stats) return null;
  let f = 1;
  for (const token of tokens) {
    const start = lexemeOf(token);
    const share = stats.words.reduce((sum, w) => (w.lexeme.startsWith(start) ? sum + w.share : sum), 0);
    f *= share > 0 ? Math.min(1, share) : Math.min(stats.floor / 2, UNLISTED_MAX);
  }
  return f * f * stats.rows >= WALK_FROM ? "walk" : "index";
}

/**
 * The settings of a statement that reads messages the `read` way, for its transaction only
 * (`set_config(…, true)`): a walk with bitmap reads priced out, either way without a sequential
 * scan and each message joined to its lead by the lead's key (a few thousand lookups; a hash of
 * every lead of the organization cost 65 ms at 40,000 leads); null: the planner's own choice. Always planned with the statement's values
 * (the words' selectivity is in them), and without parallel workers: starting them cost more than
 * the whole read (90 ms on a busy host). An index read also orders by `newestFirst`, which no
 * index can serve, so the walk is out of its reach while the leads are still joined by their key
 * (pricing index scans out instead hashed every lead of the organization).
 */
export function readSettings(tx: Tx, read: MessageRead | null) {
  const off = (on: boolean) => (on ? "on" : "off");
  return tx`
    select set_config('plan_cache_mode', 'force_custom_plan', true),
           set_config('enable_bitmapscan', ${off(read !== "walk")}, true),
           set_config('enable_seqscan', ${off(read === null)}, true),
           set_config('enable_hashjoin', ${off(read === null)}, true),
           set_config('enable_mergejoin', ${off(read === null)}, true),
           set_config('max_parallel_workers_per_gather', '0', true)`;
}

/** The order of a message read: newest first, by id, in a form no index serves for an index read. */
export const newestFirst = (sql: Sql | Tx, read: MessageRead | null) => (read === "index" ? sql`m.id + 0 desc` : sql`m.id desc`);
