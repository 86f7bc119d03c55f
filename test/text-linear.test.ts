// Every transformation of request-supplied text returns promptly on adversarial 64 KiB inputs
// (test/harness/adversarial.ts): nothing a caller sends can hold the event loop. The bound is
// generous (a quadratic pattern takes seconds here; these take a few ms), so a slow machine does
// not make it flaky; the worst times are printed by the bench (bench/text.ts).
import { describe, expect, test } from "bun:test";
import { INPUTS, SIZE, TRANSFORMS, timeOne } from "./harness/adversarial";

const BOUND_MS = 250;

describe("text transformations are linear", () => {
  test("the inputs are 64 KiB each", () => {
    for (const [name, s] of Object.entries(INPUTS)) expect({ name, length: s.length }).toEqual({ name, length: SIZE });
  });

  for (const [name, fn] of Object.entries(TRANSFORMS)) {
    test(`${name}: every adversarial input within ${BOUND_MS} ms`, () => {
      timeOne(fn, "warm-up"); // the first call compiles the patterns
      const slow = Object.entries(INPUTS)
        .map(([input, s]) => ({ input, ms: Math.round(timeOne(fn, s)) }))
        .filter((r) => r.ms > BOUND_MS);
      expect(slow).toEqual([]);
    });
  }
});
