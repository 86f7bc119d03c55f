// The two-generation bounded map behind the hot path's per-address lookups (src/generations.ts).
import { expect, test } from "bun:test";
import { Generations } from "../src/generations";

test("holds at most two generations; a key read from the older one moves on; the rest falls out", () => {
  const g = new Generations<number, string>(2);
  for (let k = 0; k < 1000; k++) g.set(k, `v${k}`);
  const kept = Array.from({ length: 1000 }, (_, k) => k).filter((k) => g.get(k) !== undefined);
  expect(kept.length).toBeLessThanOrEqual(4);
  const h = new Generations<string, number>(2);
  h.set("a", 1);
  h.set("b", 2);
  h.set("c", 3); // a and b are the older generation now
  expect(h.get("a")).toBe(1); // read: moves to the recent one
  h.set("d", 4); // the older generation (b) is dropped; a lives on
  expect(h.get("a")).toBe(1);
  expect(h.get("b")).toBeUndefined();
});

test("onDrop sees what falls out (shadowed when the key has a newer value) and may keep it", () => {
  const seen: [string, number, boolean][] = [];
  const g = new Generations<string, number>(2, (k, v, shadowed) => {
    seen.push([k, v, shadowed]);
    return k === "keep" && !shadowed;
  });
  g.set("keep", 1);
  g.set("k", 1);
  g.set("b", 0); // keep and k are the older generation
  g.set("k", 2); // a newer k, in the recent one
  g.set("c", 0); // the older generation is dropped: keep is kept, k's old value is shadowed
  expect(seen).toEqual([
    ["keep", 1, false],
    ["k", 1, true],
  ]);
  expect(g.get("keep")).toBe(1);
  expect(g.get("k")).toBe(2);
});
