// Lead search by one name word (src/leads/search.ts): the loose index walk over the prefix's
// distinct names and the range read it falls back to return exactly what a plain scan of every
// lead returns, page by page through equal timestamps, in each organization and for the platform.
// Names are matched folded (sql/0026 leadline_fold): "e" finds "é", "be" finds "bé".
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { byNameWalk, NAME_WALK_CAP, prefixEnd, searchLeads, type LeadFilter } from "../src/leads/search";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

let db: TestDatabase;
const filter = (q: string): LeadFilter => ({ q, campaign: null, list: null, status: null, from: null, to: null, zone: "UTC" });
// Short names from a small alphabet (prefixes shared by many), one accented letter, and 100 names
// c0…c99 (more distinct names than the walk takes).
const NAMES = ["a", "ab", "aba", "abb", "b", "ba", "bé", "béa", "é", "Ab", "ABA", "al", "alma", "alba"];

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await db.sql`
    insert into leads (list_id, phone, first_name, last_name, created_at)
    select case when g % 3 = 0 then 201 else 101 end, '5125550' || lpad(g::text, 3, '0'),
           case when g % 4 = 0 then 'c' || ((g / 4) % 100) else (${NAMES}::text[])[1 + g % ${NAMES.length}] end,
           (${NAMES}::text[])[1 + (g * 7) % ${NAMES.length}] || case when g % 5 = 0 then 'son' else '' end,
           timestamptz '2026-01-01' + (g % 13) * interval '1 minute'
    from generate_series(1, 600) g`;
  await db.sql`analyze leads`;
});
afterAll(() => db?.drop());

/** Every page of a search, in order. */
async function walk(orgId: number | null, q: string, size: number): Promise<number[]> {
  const ids: number[] = [];
  let cursor = null;
  for (let i = 0; i < 1000; i++) {
    const page = await searchLeads(db.sql, orgId, filter(q), cursor, size);
    ids.push(...page.rows.map((r) => r.id));
    if (!page.next) return ids;
    cursor = page.next;
  }
  throw new Error("no last page");
}

async function plain(orgId: number | null, word: string): Promise<number[]> {
  const rows = await db.sql<{ id: number }[]>`
    select id from leads
    where (starts_with(leadline_fold(first_name), leadline_fold(${word})) or starts_with(leadline_fold(last_name), leadline_fold(${word})))
      and (${orgId}::bigint is null or org_id = ${orgId})
    order by created_at desc, id desc`;
  return rows.map((r) => r.id);
}

describe("lead search by one name word", () => {
  test("the prefix's end: the last code point raised, past the surrogates; none for the last one", () => {
    expect(prefixEnd("abc")).toBe("abd");
    expect(prefixEnd("bé")).toBe("bê");
    expect(prefixEnd("a\u{d7ff}")).toBe("a\u{e000}");
    expect(prefixEnd("a\u{10ffff}")).toBe("b");
    expect(prefixEnd("\u{10ffff}")).toBeNull();
  });

  test("the walk serves a prefix of few names and leaves one of many to the range read", async () => {
    expect(await byNameWalk(db.sql, 1, "ab", null, 50)).not.toBeNull();
    expect(await byNameWalk(db.sql, 1, "zz", null, 50)).toEqual([]);
    expect(await byNameWalk(db.sql, 1, "c", null, 50)).toBeNull(); // c0…c99
    expect(NAME_WALK_CAP).toBeLessThan(100);
  });

  test("a NUL in the text box is ignored, never a database error", async () => {
    expect(await walk(1, "ab\u0000", 50)).toEqual(await plain(1, "ab"));
    expect(await walk(1, "\u0000", 50)).toEqual(await walk(1, "", 50));
    expect(await walk(1, "x\u0000@y", 50)).toEqual([]);
  });

  test("every page of every word equals a plain scan, per organization and for the platform", async () => {
    const words = fc.oneof(fc.constantFrom(...NAMES.map((n) => n.toLowerCase()), "c", "c1", "c42", "abas", "als", "bés", "x", "e", "be", "BE", "bea"), fc.stringMatching(/^[abéelcC1sÉ]{1,3}$/));
    await fc.assert(
      fc.asyncProperty(words, fc.constantFrom(1, 2, null), fc.integer({ min: 1, max: 60 }), async (word, orgId, size) => {
        expect(await walk(orgId, word, size)).toEqual(await plain(orgId, word));
      }),
      { numRuns: 60 },
    );
  });
});
