// Every transformation of request-supplied text is linear in its input on adversarial inputs
// (test/harness/adversarial.ts): nothing a caller sends can hold the event loop for long. Measured
// against a baseline taken in the same test, not against a fixed bound: each input at 64 KiB and
// at 8 KiB, interleaved, the best of several runs of each; linear work takes about 8 times as long
// on 8 times the input, quadratic work 64 times. A fixed 250 ms bound on one run failed beside
// other work (a GC or a preempted slice is enough), and a slow machine is not a quadratic pattern.
// Times are the process's CPU time (cpuTimeOne): preemption beside other work lengthened the
// 64 KiB runs (longer than a slice) and not the 8 KiB ones, which made a linear function look 24×.
// How fast each one is belongs to the bench (bench/text.ts, its target 250 ms at 64 KiB).
import { describe, expect, test } from "bun:test";
import { cpuTimeOne as timeOne, inputsOf, SIZE, TRANSFORMS } from "./harness/adversarial";

const SMALL = SIZE / 8;
/** Linear is 8, n log n about 9, n^1.5 about 23, quadratic 64; noise and fixed costs move it little. */
const MAX_RATIO = 20;
/**
 * Below this at 64 KiB (the best of two runs, in CPU time) a transformation cannot be quadratic:
 * n²/2 steps on 65,536 characters are two billion; the vectorized native search below does them in
 * about 20 ms of CPU on this machine, a backtracking pattern takes seconds. Only slower ones are
 * compared (a quarter of that native search, so a faster machine still compares it).
 */
const SURELY_LINEAR_MS = 5;
const RUNS = 5;
/**
 * A give-up, not a bound: a transformation compared three times is timed sixty-odd times on 64 KiB,
 * and beside other work (a load average of 21 on 2 cores) the DNI rules took 35 s of bun's default
 * 30 s per test. Nothing here hangs; a slow machine only makes each comparison take longer.
 */
const GIVE_UP_MS = 300_000;

const large = inputsOf(SIZE);
const small = inputsOf(SMALL);

/**
 * The best of `RUNS` runs on each size, interleaved so that drift and pauses fall on both alike,
 * each after a full collection: the larger input's garbage would otherwise be collected during
 * its own runs (seen: 34 ms against a best of 18 when other work shared the machine).
 */
function bestOfEach(fn: (s: string) => unknown, input: string): { small: number; large: number } {
  let s = Infinity;
  let l = Infinity;
  for (let r = 0; r < RUNS; r++) {
    Bun.gc(false);
    s = Math.min(s, timeOne(fn, small[input]!));
    Bun.gc(false);
    l = Math.min(l, timeOne(fn, large[input]!));
  }
  return { small: s, large: l };
}

/** Comparisons of an input before it counts as superlinear, each after a pause (see below). */
const ATTEMPTS = 3;

/**
 * The inputs (of `inputs`) on which `fn` grows faster than linearly, with the times that show it.
 * An input counts only when every one of ATTEMPTS comparisons says so, with a quarter second
 * between them: in a full run beside other work, lead intake on 64 KiB of newlines took 17 ms in
 * each of seven runs against 0.15 ms on 8 KiB (alone: 0.74 ms, linear from 4 to 128 KiB; most
 * likely the optimizing compiler's threads had not had the CPU yet); a quadratic pattern stays
 * quadratic however long it is given.
 */
async function superlinear(fn: (s: string) => unknown, inputs = Object.keys(large)): Promise<{ input: string; ms8k: number; ms64k: number; ratio: number }[]> {
  timeOne(fn, "warm-up"); // the first call compiles the patterns
  const found = [];
  for (const input of inputs) {
    if (Math.min(timeOne(fn, large[input]!), timeOne(fn, large[input]!)) < SURELY_LINEAR_MS) continue;
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      const t = bestOfEach(fn, input);
      const ratio = t.large / Math.max(t.small, 0.001);
      if (ratio <= MAX_RATIO) break;
      if (attempt === ATTEMPTS) found.push({ input, ms8k: +t.small.toFixed(2), ms64k: +t.large.toFixed(2), ratio: +ratio.toFixed(1) });
      else await Bun.sleep(250);
    }
  }
  return found;
}

describe("text transformations are linear", () => {
  test("the inputs are 64 KiB and 8 KiB each, the same shapes", () => {
    expect(Object.keys(small)).toEqual(Object.keys(large));
    for (const [name, s] of Object.entries(large)) expect({ name, length: s.length }).toEqual({ name, length: SIZE });
    for (const [name, s] of Object.entries(small)) expect({ name, length: s.length }).toEqual({ name, length: SMALL });
  });

  for (const [name, fn] of Object.entries(TRANSFORMS)) {
    test(`${name}: 8 times the input, at most ${MAX_RATIO} times the time, on every adversarial input`, async () => {
      expect(await superlinear(fn)).toEqual([]);
    }, GIVE_UP_MS);
  }

  test("a quadratic transformation is caught, however fast the machine", async () => {
    // Searches again from every position for what is not there, as a backtracking pattern or a
    // restarting search does (native indexOf: a quadratic that still takes only a fraction of a second).
    const quadratic = (s: string) => {
      let n = 0;
      for (let i = 0; i < s.length; i++) n += s.indexOf("x", i);
      return n;
    };
    // The check leans to "linear" (every comparison must agree), so on a machine busy enough to
    // blur one comparison a quadratic can pass once; it does not pass three checks.
    const caught = new Set<string>();
    for (let check = 0; check < 3 && caught.size < 2; check++) for (const f of await superlinear(quadratic, ["spaces", "digits"])) caught.add(f.input);
    expect([...caught].sort()).toEqual(["digits", "spaces"]);
  }, GIVE_UP_MS);
});
