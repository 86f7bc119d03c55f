// Unknown booking slugs are answered from a short negative cache (src/booking/unknown-links.ts):
// within UNKNOWN_LINK_TTL_MS of finding a slug unknown, no request for it reaches the database, so
// a link created directly in the database meanwhile is still unknown; after it, it is found.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { UNKNOWN_LINK_TTL_MS, UnknownLinks } from "../src/booking/unknown-links";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

let db: TestDatabase;
let app: TestApp;
const T0 = Date.parse("2026-11-23T12:00:00Z");
const clock = new ManualClock(T0);

let ipSeq = 0;
const slots = (slug: string) => call(app.base, `/book/api.php?action=slots&s=${slug}`);
const book = (slug: string) =>
  call(app.base, "/book/api.php?action=book", {
    method: "POST",
    json: { slug, epoch: Date.UTC(2026, 10, 24, 15) / 1000, name: "Jane", phone: "5125552001" },
    headers: { "x-forwarded-for": `198.51.100.${++ipSeq}` },
  });
const page = (slug: string) => call(app.base, `/book/${slug}`);

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours)
               values (1, 1, 'Estimates', 'America/Chicago', 30, 1, 60, 14, ${db.sql.json({ tue: [["09:00", "17:00"]] })})`;
  app = await startApp(db.url, { COMMS_INBOUND_LIST_ID: "900" }, { clock });
});
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("unknown slugs", () => {
  test("slots, book and the page: a slug found unknown stays unknown (no query) for the ttl, then is read again", async () => {
    for (const slug of ["via-slots", "via-book", "via-page"]) {
      // First sight of the slug, by each of the three reads.
      if (slug === "via-slots") expect((await slots(slug)).body).toEqual({ ok: false, error: "unknown_link", slots: [] });
      if (slug === "via-book") expect((await book(slug)).body).toEqual({ ok: false, error: "unknown_link" });
      if (slug === "via-page") expect((await page(slug)).status).toBe(404);
      await db.sql`insert into calendar_links (slug, calendar_id) values (${slug}, 1)`;
      // Within the ttl every read answers from memory: the link just created is not seen.
      clock.advance(UNKNOWN_LINK_TTL_MS - 1);
      expect((await slots(slug)).body.error).toBe("unknown_link");
      expect((await book(slug)).body.error).toBe("unknown_link");
      expect((await page(slug)).status).toBe(404);
      // Past it, the slug is read again and found.
      clock.advance(1);
      const found = await slots(slug);
      expect(found.body.ok).toBe(true);
      expect(found.body.name).toBe("Estimates");
      expect((await page(slug)).status).toBe(200);
    }
  });

  test("a known link is never remembered as unknown", async () => {
    await db.sql`insert into calendar_links (slug, calendar_id) values ('known', 1)`;
    expect((await slots("known")).body.ok).toBe(true);
    await db.sql`delete from calendar_links where slug = 'known'`;
    expect((await slots("known")).body.error).toBe("unknown_link");
  });

  test("the memory is bounded: 10,000 slugs, the least recently used dropped", () => {
    const c = new ManualClock(T0);
    const links = new UnknownLinks(c);
    links.add("first");
    for (let i = 0; i < 10_000; i++) links.add(`s${i}`);
    expect(links.has("first")).toBe(false);
    expect(links.has("s9999")).toBe(true);
    c.advance(UNKNOWN_LINK_TTL_MS);
    expect(links.has("s9999")).toBe(false);
  });
});
