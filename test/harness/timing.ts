// Time in tests that must pass on a shared, busy machine. First, comparing two samples of
// durations without trusting any single one: the machine is shared and a duration can be
// anything. Mann-Whitney's statistic as the probability that a duration of one kind exceeds one of
// the other (0.5: neither tends to be longer; ties count a half), with the samples taken
// interleaved in random order so that drift and pauses fall on both kinds alike. Then bounds on
// waits, below.

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

// Bounds on waits, with a margin taken in the same test. A deadline, a timeout or a wait of a
// server in this process (or beside it, on the same cores) ends when its timer fires; on a busy
// machine timers fire late, by as much as the process is kept from running. Constant bounds
// (`< 1500`, `< DEADLINE + 2000`) were broken by loaded machines and moved in commit after commit;
// these measure how late this process's timers are while the wait runs, and allow that.

/** The interval of the lateness probe, ms. */
const TICK_MS = 10;
/** What answering takes once a wait is over (rendering, a response, the client reading it), ms. */
export const SLACK_MS = 250;

/** How late this process's timers fire: the worst delay of a 10 ms interval, with when it was seen. */
export class LatenessMeter {
  private timer: ReturnType<typeof setInterval> | null = null;
  private expected = 0;
  /** [performance.now(), ms late] of every tick that came late by a millisecond or more. */
  readonly late: [number, number][] = [];

  start(): this {
    this.expected = performance.now() + TICK_MS;
    this.timer = setInterval(() => {
      const now = performance.now();
      if (now - this.expected >= 1) this.late.push([now, now - this.expected]);
      this.expected = now + TICK_MS;
    }, TICK_MS);
    return this;
  }

  /** Stops after one more turn of the event loop, so that a stall that ended just now is counted. */
  async stop(): Promise<void> {
    await new Promise((ok) => setTimeout(ok, 0));
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** The worst lateness seen in [from, to] (performance.now()), or over the whole run. */
  worst(from = -Infinity, to = Infinity): number {
    return this.late.reduce((m, [at, ms]) => (at >= from && at <= to ? Math.max(m, ms) : m), 0);
  }
}

/** Runs `work`, timing it and measuring how late this process's timers were meanwhile. */
export async function measured<T>(work: () => Promise<T>): Promise<{ value: T; ms: number; late: number }> {
  const meter = new LatenessMeter().start();
  const t0 = performance.now();
  try {
    const value = await work();
    const ms = performance.now() - t0;
    await meter.stop();
    return { value, ms, late: meter.worst() };
  } finally {
    await meter.stop();
  }
}

/**
 * The longest a wait of `waitMs` may take when timers ran up to `late` ms late meanwhile: the wait,
 * answering (SLACK_MS), and a stall on either side of the timer. A wait that is not bounded at all
 * (a hang until the test's timeout, a default of 10 s instead of the bound given) still fails it.
 */
export const waitBound = (waitMs: number, late: number): number => waitMs + SLACK_MS + 2 * late;
