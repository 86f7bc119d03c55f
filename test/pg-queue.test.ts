// postgres.js keeps its pool's connections and waiting queries in Queues (src/queue.js), which
// src/db/postgres-js/postgres+3.4.9.patch changes so that a queue that never empties under sustained load stops growing
// (see the patch's comment). These tests hold the patched queue to the original's behaviour
// against a plain-array model, across the compaction point, with removals from the middle.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
// @ts-expect-error: an internal module of postgres.js, without type declarations
import Queue from "../node_modules/postgres/src/queue.js";

interface Q<T> {
  readonly length: number;
  push(x: T): T;
  shift(): T | undefined;
  remove(x: T): T | null;
}

describe("postgres.js pool queue (patched)", () => {
  test("the installed client carries the patch", () => {
    const text = readFileSync(new URL("../node_modules/postgres/src/queue.js", import.meta.url), "utf8");
    expect(text).toContain("leadline patch: queue growth");
  });

  test("behaves like a FIFO list through 100,000 operations that never let it empty", () => {
    const q: Q<object> = Queue();
    const model: object[] = [];
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < 5; i++) model.push(q.push({ i }));
    for (let step = 0; step < 100_000; step++) {
      const r = random();
      if (r < 0.45) model.push(q.push({ step }));
      else if (r < 0.9 && model.length > 2) expect(q.shift()).toBe(model.shift());
      else if (model.length > 2) {
        // Removing a member (as move() does) and a stranger (already shifted out) alike.
        const at = Math.floor(random() * model.length);
        expect(q.remove(model[at])).toBe(model[at]);
        model.splice(at, 1);
        expect(q.remove({})).toBeNull();
      } else model.push(q.push({ step }));
      expect(q.length).toBe(model.length);
    }
    while (model.length) expect(q.shift()).toBe(model.shift());
    expect(q.length).toBe(0);
  });

  test("an element already shifted out is not found by remove", () => {
    const q: Q<object> = Queue();
    const a = q.push({});
    const b = q.push({});
    expect(q.shift()).toBe(a);
    expect(q.remove(a)).toBeNull();
    expect(q.remove(b)).toBe(b);
    expect(q.length).toBe(0);
  });
});
