// A failure that repeats (the database away) is logged once whole, then summarised once a minute
// without a stack, and its end is logged once: not a stack trace per poll.
import { expect, test } from "bun:test";
import { RepeatedFailure } from "../src/log";
import { every } from "../src/jobs/worker";
import { capture } from "./harness/capture";

test("the first failure is logged whole, the rest once a minute as a count, the recovery once", async () => {
  let now = 0;
  const f = new RepeatedFailure("flush failed", () => now);
  const lines = await logged(async () => {
    for (let i = 0; i < 600; i++) {
      f.failed(new Error("connection refused"));
      now += 100; // ten a second for a minute
    }
    f.failed(new Error("connection refused"));
    f.succeeded();
    f.succeeded();
  });
  expect(lines.map((l) => l.msg)).toEqual(["flush failed", "flush failed (still failing)", "flush failed: recovered"]);
  expect(lines[0].stack).toContain("connection refused");
  expect(lines[1].stack).toBeUndefined();
  expect(lines[1].failures).toBe(601);
  expect(lines[2].failures).toBe(601);
});

test("a failure after a quiet minute starts a new episode, logged whole", async () => {
  let now = 0;
  const f = new RepeatedFailure("claim failed", () => now);
  const lines = await logged(async () => {
    f.failed(new Error("a"));
    f.failed(new Error("a"));
    now += 61_000;
    f.failed(new Error("b"));
  });
  expect(lines.map((l) => [l.msg, l.error])).toEqual([
    ["claim failed", "a"],
    ["claim failed: recovered", undefined],
    ["claim failed", "b"],
  ]);
});

test("a periodic worker failing every run logs once, not once a run", async () => {
  let runs = 0;
  const w = every("test.flush", 5, async () => {
    runs++;
    throw new Error("database away");
  });
  const lines = await logged(async () => {
    w.start();
    while (runs < 20) await Bun.sleep(5);
    await w.stop();
  });
  expect(lines.filter((l) => l.msg === "test.flush failed")).toHaveLength(1);
});

/** The JSON log lines written while `fn` runs. */
async function logged(fn: () => Promise<void>): Promise<Record<string, unknown>[]> {
  const { out } = await capture(async () => (await fn(), 0));
  return out.split("\n").filter(Boolean).map((l) => JSON.parse(l));
}
