// The first-response figures of the days Today shows, with those of days before the organization's
// today kept in memory: their rows rarely change, and sorting a busy day's few thousand response
// times was most of the report's database time. A kept figure is used only while the day's
// `responses` counter (sql/0033: count and summed seconds, moved by every insert in the writing
// transaction) reads what it read when the figure was computed. report_responses only grows, so the
// same count is the same rows; a rebuild deletes and writes rows and counters again, and its counter
// rows are new stripes (a newer stripe number). Each instance keeps its own; nothing is stale.
import type { Sql } from "../db/client";
import { responsesByDay, type FactRow, type ResponseRow } from "./queries";

interface Counter {
  n: number;
  secs: number;
  stripe: number;
}

interface Kept extends Counter {
  row: ResponseRow;
}

/** Enough for every organization's two comparison days many times over; the oldest go first. */
const LIMIT = 20_000;
const kept = new Map<string, Kept>();

const keyOf = (orgId: number, day: string) => `${orgId}/${day}`;

/** The day's `responses` counter from the facts read for it (no row: none yet). */
function counter(facts: FactRow[], day: string): Counter {
  const f = facts.find((x) => x.day === day && x.fact === "responses");
  return f ? { n: f.n, secs: f.amount, stripe: f.stripe } : { n: 0, secs: 0, stripe: 0 };
}

const same = (a: Counter, b: Counter) => a.n === b.n && a.secs === b.secs && a.stripe === b.stripe;

/**
 * The response rows of `days` (as responsesByDay returns them), given the facts read for them in
 * this request. `today` is the organization's day now: it and later days are always computed.
 */
export async function dayResponses(sql: Sql, orgId: number, days: string[], today: string, facts: FactRow[]): Promise<ResponseRow[]> {
  const out: ResponseRow[] = [];
  const missing: string[] = [];
  for (const day of days) {
    const c = counter(facts, day);
    if (c.n === 0) continue; // no response that day: no row, as the query would give
    const k = day < today ? kept.get(keyOf(orgId, day)) : undefined;
    if (k && same(k, c)) out.push(k.row);
    else missing.push(day);
  }
  if (missing.length === 0) return out;
  for (const row of await responsesByDay(sql, orgId, missing)) {
    out.push(row);
    const c = counter(facts, row.key);
    // Kept only when the rows sorted are the rows counted (a response written between the two
    // reads makes them differ: this request shows it, the next one computes again).
    if (row.key < today && row.n === c.n) keep(keyOf(orgId, row.key), { ...c, row });
  }
  return out;
}

function keep(key: string, value: Kept): void {
  kept.delete(key);
  kept.set(key, value);
  if (kept.size > LIMIT) kept.delete(kept.keys().next().value!);
}
