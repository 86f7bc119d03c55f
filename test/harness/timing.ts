// Comparing two samples of durations without trusting any single one: the machine is shared and
// a duration can be anything. Mann-Whitney's statistic as the probability that a duration of one
// kind exceeds one of the other (0.5: neither tends to be longer; ties count a half), with the
// samples taken interleaved in random order so that drift and pauses fall on both kinds alike.

/** P(a > b) + P(a = b) / 2 over every pair, by ranks (midranks for ties): O(n log n). */
export function superiority(a: readonly number[], b: readonly number[]): number {
  const all = [...a.map((v) => ({ v, a: true })), ...b.map((v) => ({ v, a: false }))].sort((x, y) => x.v - y.v);
  let rankSumA = 0;
  for (let i = 0; i < all.length; ) {
    let j = i;
    while (j < all.length && all[j].v === all[i].v) j++;
    const midrank = (i + 1 + j) / 2;
    for (let k = i; k < j; k++) if (all[k].a) rankSumA += midrank;
    i = j;
  }
  const u = rankSumA - (a.length * (a.length + 1)) / 2;
  return u / (a.length * b.length);
}

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * `n` durations of each kind, one of each per round in a random order, after `warmup` rounds that
 * are thrown away (JIT, connections, caches). `measure(kind, i)` does the i-th thing of its kind;
 * its duration is taken around it; `before`, when given, runs untimed just before each measurement.
 */
export async function interleaved(
  n: number,
  measure: (kind: "a" | "b", i: number) => Promise<unknown> | unknown,
  warmup = 30,
  before?: () => Promise<unknown> | unknown,
): Promise<{ a: number[]; b: number[] }> {
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < n + warmup; i++) {
    const order: ("a" | "b")[] = Math.random() < 0.5 ? ["a", "b"] : ["b", "a"];
    for (const kind of order) {
      if (before) await before();
      const t0 = performance.now();
      await measure(kind, i);
      const d = performance.now() - t0;
      if (i >= warmup) (kind === "a" ? a : b).push(d);
    }
  }
  return { a, b };
}
