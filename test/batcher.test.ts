// The Batcher (src/db/batcher.ts) behind get lead and CTI lookup, on its own: how reads are grouped
// into statements, and what happens to them when a statement fails or never answers. (The reads it
// serves are tested through HTTP in leads, cti, tenancy and rate-limit tests.)
import { describe, expect, test } from "bun:test";
import { Batcher } from "../src/db/batcher";
import { AppError } from "../src/errors";

/** A run function whose calls are recorded and answered by hand. */
function manual<In>() {
  const calls: { inputs: In[]; resolve(outs: string[]): void; reject(err: unknown): void }[] = [];
  const run = (inputs: In[]) =>
    new Promise<string[]>((resolve, reject) => {
      calls.push({ inputs, resolve, reject });
    });
  return { calls, run };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("Batcher", () => {
  test("reads of one turn go in one statement, and each gets its own answer", async () => {
    const { calls, run } = manual<number>();
    const b = new Batcher(run, { slots: 1 });
    const replies = [1, 2, 3].map((n) => b.load(n));
    await tick();
    expect(calls.map((c) => c.inputs)).toEqual([[1, 2, 3]]);
    calls[0].resolve(["one", "two", "three"]);
    expect(await Promise.all(replies)).toEqual(["one", "two", "three"]);
  });

  test("while every slot is busy, new reads wait and then go together", async () => {
    const { calls, run } = manual<number>();
    const b = new Batcher(run, { slots: 2 });
    const first = b.load(1);
    await tick();
    const second = b.load(2);
    await tick();
    expect(calls.map((c) => c.inputs)).toEqual([[1], [2]]);
    const later = [3, 4, 5].map((n) => b.load(n));
    await tick();
    expect(calls.length).toBe(2);
    calls[1].resolve(["b"]);
    await tick();
    expect(calls.map((c) => c.inputs)).toEqual([[1], [2], [3, 4, 5]]);
    calls[0].resolve(["a"]);
    calls[2].resolve(["c", "d", "e"]);
    expect(await Promise.all([first, second, ...later])).toEqual(["a", "b", "c", "d", "e"]);
  });

  test("with overlapAt, a second statement starts only once that many reads wait", async () => {
    const { calls, run } = manual<number>();
    const b = new Batcher(run, { slots: 2, overlapAt: 3 });
    const first = b.load(1);
    await tick();
    const few = [2, 3].map((n) => b.load(n));
    await tick();
    expect(calls.map((c) => c.inputs)).toEqual([[1]]);
    const third = b.load(4);
    await tick();
    expect(calls.map((c) => c.inputs)).toEqual([[1], [2, 3, 4]]);
    // Both out; a read that waits alone goes when one of them is answered and the other is too.
    const lone = b.load(5);
    calls[0].resolve(["a"]);
    await tick();
    expect(calls.length).toBe(2);
    calls[1].resolve(["b", "c", "d"]);
    await tick();
    expect(calls.map((c) => c.inputs)).toEqual([[1], [2, 3, 4], [5]]);
    calls[2].resolve(["e"]);
    expect(await Promise.all([first, ...few, third, lone])).toEqual(["a", "b", "c", "d", "e"]);
  });

  test("no statement carries more than `max` reads", async () => {
    const { calls, run } = manual<number>();
    const b = new Batcher(run, { slots: 3, max: 2 });
    const replies = [1, 2, 3, 4, 5].map((n) => b.load(n));
    await tick();
    expect(calls.map((c) => c.inputs)).toEqual([[1, 2], [3, 4], [5]]);
    for (const c of calls) c.resolve(c.inputs.map(String));
    expect(await Promise.all(replies)).toEqual(["1", "2", "3", "4", "5"]);
  });

  test("a failed statement fails its reads only; the next reads run", async () => {
    const { calls, run } = manual<number>();
    const b = new Batcher(run, { slots: 1 });
    const failing = [b.load(1), b.load(2)];
    await tick();
    calls[0].reject(new Error("connection reset"));
    const settled = await Promise.allSettled(failing);
    expect(settled.map((r) => r.status === "rejected" && (r.reason as Error).message)).toEqual(["connection reset", "connection reset"]);
    const next = b.load(3);
    await tick();
    calls[1].resolve(["three"]);
    expect(await next).toBe("three");
  });

  test("a run that throws instead of rejecting fails its reads and frees its slot", async () => {
    let first = true;
    const b = new Batcher<number, number>(
      (inputs) => {
        if (first) {
          first = false;
          throw new Error("bad input");
        }
        return Promise.resolve(inputs);
      },
      { slots: 1 },
    );
    await expect(b.load(1)).rejects.toThrow("bad input");
    expect(await b.load(2)).toBe(2);
  });

  test("a statement that never answers is given up: its reads fail unavailable and the slot is freed", async () => {
    const { calls, run } = manual<number>();
    const b = new Batcher(run, { slots: 1, timeoutMs: 50 });
    const hung = b.load(1);
    await tick();
    const queued = b.load(2);
    const err = await hung.catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe("unavailable");
    await tick();
    expect(calls.map((c) => c.inputs)).toEqual([[1], [2]]);
    calls[1].resolve(["two"]);
    expect(await queued).toBe("two");
    // The hung statement's late answer changes nothing.
    calls[0].resolve(["late"]);
    await tick();
  });
});
