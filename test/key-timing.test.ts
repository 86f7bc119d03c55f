// Key comparison time does not depend on how much of a presented key matches a real one.
//
// What is really there (src/auth/service.ts, src/auth/keys.ts): a presented key is compared as text
// with one thing only, the last key seen (a memo of its digest, usually a real key's), in constant
// time (sameText). Its SHA-256 indexes the in-memory cache (a Map keyed by the digest) and, on a
// miss, the api_keys row is found by that digest through a unique index, then the stored digest is
// compared with timingSafeEqual. A key that shares all but its last characters with a real one has
// a digest no closer to the real digest than any other key's, so none of these steps can take
// longer for it. Checked here statistically, with the real key used just before every try (so that
// it is the last key seen), on every path a key takes: the database lookup (a key not yet cached),
// the cache (a key already known to be bad), and a whole request. Near misses (the real
// key with its last two characters changed) and far misses (only `lk_` in common) are tried in
// many interleaved rounds; for each path the probability that a near miss takes longer than a far
// one must stay within 0.5 ± 0.1 (Mann-Whitney's statistic: robust to the outliers a shared
// machine produces; no single duration is ever asserted). The check's power is shown on a
// comparison that does leak: one that stops at the first differing character.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { sameText } from "../src/auth/keys";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";
import { interleaved, median, superiority } from "./harness/timing";

const ROUNDS = 300;
/** How far from 0.5 the probability may stray: about four standard errors at 300 rounds. */
const TOLERANCE = 0.1;
const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

let db: TestDatabase;
let app: TestApp;
let real: string;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  // A clock that stands still: cached entries never expire while a path is sampled.
  app = await startApp(db.url, {}, { clock: new ManualClock(Date.now()) });
  real = (await makeKey(db.sql, { scopes: ["leads:read"], org: 1 })).key;
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

/**
 * A string made afresh from its bytes, as a key read from a request is: a string built by slicing
 * and concatenating (a rope sharing another's storage) was measured to take a little longer to hash
 * the first time, which is the test's doing, not the service's.
 */
const flat = (s: string) => Buffer.from(s, "latin1").toString("latin1");

/** The real key (46 characters) with one or both of its last two changed: never the real key itself. */
function nearMiss(i: number): string {
  const n = (i % 4000) + 1;
  const pair = B64URL[(B64URL.indexOf(real.at(-2)!) + (n >> 6)) % 64] + B64URL[(B64URL.indexOf(real.at(-1)!) + n) % 64];
  const key = real.slice(0, -2) + pair;
  return key === real ? nearMiss(i + 4001) : flat(key);
}

/** `lk_` and 43 random characters, the first differing from the real key's. */
function farMiss(): string {
  const rest = randomBytes(32).toString("base64url");
  const first = rest[0] === real[3] ? B64URL[(B64URL.indexOf(rest[0]) + 1) % 64] : rest[0];
  return flat("lk_" + first + rest.slice(1));
}

function verdict(name: string, s: { a: number[]; b: number[] }) {
  const p = superiority(s.a, s.b);
  const detail = `${name}: P(near > far) = ${p.toFixed(3)}, medians ${median(s.a).toFixed(4)} / ${median(s.b).toFixed(4)} ms over ${s.a.length} rounds`;
  if (process.env.KEY_TIMING_VERBOSE) console.log(detail);
  return { p, detail, leaks: Math.abs(p - 0.5) > TOLERANCE };
}

test("sameText: equal strings, a difference at any position, different lengths", () => {
  expect(sameText(real, flat(real))).toBe(true);
  for (const at of [0, 3, 20, real.length - 1]) expect(sameText(real, real.slice(0, at) + (real[at] === "A" ? "B" : "A") + real.slice(at + 1))).toBe(false);
  expect([sameText(real, real.slice(0, -1)), sameText("", ""), sameText("", "x")]).toEqual([false, true, false]);
});

describe("authentication time does not depend on how much of the key matches", () => {
  test("the fixtures: near misses share 44 characters with the real key, far misses 3, and all are refused", async () => {
    const common = (k: string) => [...k].findIndex((c, i) => c !== real[i]);
    expect(new Set(Array.from({ length: 500 }, (_, i) => nearMiss(i))).size).toBe(500);
    expect([common(nearMiss(0)) >= 44, common(farMiss())]).toEqual([true, 3]);
    for (const k of [nearMiss(7), farMiss()]) expect(await app.running.deps.keys.resolve(k)).toBeNull();
  });

  test("database lookup of a key not cached: near and far misses alike", async () => {
    const keys = app.running.deps.keys;
    const fresh = { a: Array.from({ length: ROUNDS + 30 }, (_, i) => nearMiss(1000 + i)), b: Array.from({ length: ROUNDS + 30 }, farMiss) };
    const s = await interleaved(ROUNDS, (kind, i) => keys.resolve(fresh[kind][i]), 30, () => keys.resolve(real));
    const v = verdict("database lookup", s);
    expect({ leaks: v.leaks, detail: v.detail }).toEqual({ leaks: false, detail: v.detail });
  }, 120_000);

  test("the cache, for keys already known to be bad: near and far misses alike", async () => {
    const keys = app.running.deps.keys;
    const known = { a: Array.from({ length: 1000 }, (_, i) => nearMiss(2000 + i)), b: Array.from({ length: 1000 }, farMiss) };
    // Cached alternately, so that neither kind's entries are the older ones in the cache's table.
    for (let i = 0; i < 1000; i++) for (const k of [known.a[i], known.b[i]]) await keys.resolve(k);
    await keys.resolve(real);
    const s = await interleaved(ROUNDS * 10, (kind, i) => keys.resolve(known[kind][i % 1000]), 100, () => keys.cached(real));
    const v = verdict("cache", s);
    expect({ leaks: v.leaks, detail: v.detail }).toEqual({ leaks: false, detail: v.detail });
  }, 120_000);

  test("a whole request refused 403: near and far misses alike", async () => {
    const fresh = { a: Array.from({ length: ROUNDS + 30 }, (_, i) => nearMiss(3000 + i)), b: Array.from({ length: ROUNDS + 30 }, farMiss) };
    const statuses = new Set<number>();
    const s = await interleaved(ROUNDS, async (kind, i) => {
      const r = await call(app.base, "/hooks/api_v1.php?r=leads/1", { key: fresh[kind][i] });
      statuses.add(r.status);
    });
    expect([...statuses]).toEqual([403]);
    const v = verdict("request", s);
    expect({ leaks: v.leaks, detail: v.detail }).toEqual({ leaks: false, detail: v.detail });
  }, 120_000);

  test("the check's power: a comparison that stops at the first differing character is caught", async () => {
    const keys = app.running.deps.keys;
    // What a naive `===` on plaintexts does, slowed to a microsecond a character so that it shows
    // above the cache's own time on any machine.
    const leaky = (k: string) => {
      for (let i = 0; i < k.length && k[i] === real[i]; i++) {
        const until = performance.now() + 0.001;
        while (performance.now() < until);
      }
    };
    const known = { a: Array.from({ length: 64 }, (_, i) => nearMiss(2000 + i)), b: Array.from({ length: 64 }, farMiss) };
    const s = await interleaved(ROUNDS, (kind, i) => {
      const k = known[kind][i % 64];
      keys.cached(k);
      leaky(k);
    });
    const v = verdict("leaky comparison", s);
    expect({ leaks: v.leaks, detail: v.detail }).toEqual({ leaks: true, detail: v.detail });
  }, 120_000);
});
