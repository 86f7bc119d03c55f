// The Google Ads conversions feed (operations.md §3, §4, §8) through the served app, with the clock
// passed in: conversions made through the real routes (DNI leases, intake, call reports,
// bookings), the CSV exactly as Google Ads' offline click-conversion import reads it, HTTP Basic
// with the feed's id and secret, the 90-day window, the organization's zone, and a feed of
// several pages read in order, each conversion once.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dniEngine } from "../src/dni/instance";
import { fileProblems } from "../src/provision/validate";
import { applyProvisioning } from "../src/provision/service";
import type { ProvisioningFile } from "../src/provision/model";
import { FEED_PAGE, feedRows as feedRowsOf } from "../src/conversions/service";
import { conversionPage, findFeed } from "../src/conversions/queries";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";
import { recordSecret } from "./harness/sweep";

const T0 = Date.parse("2026-11-23T15:00:00.000Z"); // Monday 09:00 in Chicago
const DAY = 86_400_000;
const clock = new ManualClock(T0);
const ACME_SECRET = "acme-feed-secret-0123456789-abcdef";
const BOLT_SECRET = "bolt-feed-secret-0123456789-abcdef";

const FILE = {
  orgs: [
    { id: 1, name: "Acme", timezone: "America/Chicago" },
    { id: 2, name: "Bolt", timezone: "Europe/Berlin" },
  ],
  dni_pools: [
    { key: "acme-site", org_id: 1, numbers: ["7375550101", "7375550102", "7375550103"], fallback: "7375550100", placeholder: "7375550199" },
    { key: "bolt-site", org_id: 2, numbers: ["9035550101"], fallback: "9035550100", placeholder: "9035550199" },
  ],
  conversion_feeds: [
    {
      id: "acme-ads",
      org_id: 1,
      secret: ACME_SECRET,
      actions: [
        { name: "Phone call", on: "call" },
        { name: "Long call, 5 min", on: "call", min_secs: 300, value: 1234.5678, currency: "EUR" },
        { name: 'Lead "form"', on: "lead", value: 99.999 },
        { name: "Booking", on: "booking", value: 12.5 },
      ],
    },
    { id: "bolt-ads", org_id: 2, secret: BOLT_SECRET, actions: [{ name: "Lead", on: "lead", value: 3 }] },
  ],
};

let db: TestDatabase;
let app: TestApp;
let acmeKey: string;
let boltKey: string;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  recordSecret("feed secret", ACME_SECRET);
  recordSecret("feed secret", BOLT_SECRET);
  await applyProvisioning(db.sql, FILE as ProvisioningFile);
  const hours = Object.fromEntries(["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map((d) => [d, [["09:00", "17:00"]]]));
  await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours)
               values (1, 1, 'Estimates', 'America/Chicago', 30, 5, 0, 14, ${db.sql.json(hours)})`;
  await db.sql`insert into calendar_links (slug, calendar_id) values ('acme-estimate', 1)`;
  app = await startApp(db.url, { NPK_IP_SALT: "conversions-test" }, { clock });
  acmeKey = (await makeKey(db.sql, { scopes: ["leads:write", "calls:write"], org: 1 })).key;
  boltKey = (await makeKey(db.sql, { scopes: ["leads:write", "calls:write"], org: 2 })).key;
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

const basic = (user: string, password: string) => "Basic " + Buffer.from(`${user}:${password}`).toString("base64");
let ipSeq = 0;
const address = () => `10.44.${Math.floor(++ipSeq / 250)}.${ipSeq % 250}`;

function fetchFeed(feed: string, authorization: string | null, ip = address()) {
  const headers: Record<string, string> = { "x-forwarded-for": ip };
  if (authorization !== null) headers.authorization = authorization;
  return fetch(`${app.base}/conversions/${feed}`, { headers });
}

/** RFC 4180: records of fields, quotes doubled inside quoted fields, CRLF between records. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") row.push(field), (field = "");
    else if (c === "\r" && text[i + 1] === "\n") row.push(field), rows.push(row), (row = []), (field = ""), i++;
    else field += c;
  }
  if (field !== "" || row.length > 0) throw new Error("the last record does not end with CRLF");
  return rows;
}

async function feedRows(feed = "acme-ads", secret = ACME_SECRET): Promise<string[][]> {
  const r = await fetchFeed(`${feed}.csv`, basic(feed, secret));
  expect(r.status).toBe(200);
  const rows = parseCsv(await r.text());
  return rows;
}

async function lease(visitor: string, body: Record<string, unknown>, pool = "acme-site"): Promise<string> {
  const r = await call(app.base, "/hooks/dni.php?action=lease", { method: "POST", json: { pool, visitor, ...body }, headers: { "x-forwarded-for": address() } });
  expect(r.body.fallback).toBe(false);
  await dniEngine(app.running.deps).flush();
  return r.body.number;
}

let phoneSeq = 5125558000;
const newPhone = () => String(phoneSeq++);
const intake = async (json: Record<string, unknown>, key = acmeKey) => {
  const r = await call(app.base, "/hooks/lead_intake.php", { method: "POST", key, json: { list_id: 101, ...json } });
  expect(r.status).toBe(200);
  return r.body.lead_id as number;
};
const report = async (json: Record<string, unknown>, key = acmeKey) => {
  const r = await call(app.base, "/hooks/calls.php", { method: "POST", key, json: { status: "ANSWERED", agent: "agent7", ...json } });
  expect(r.status).toBe(200);
  return r.body;
};
async function book(phone: string) {
  const slots = await call(app.base, "/book/api.php?action=slots&s=acme-estimate");
  const r = await call(app.base, "/book/api.php?action=book", {
    method: "POST",
    json: { slug: "acme-estimate", epoch: slots.body.slots[0].epoch, name: "Ann Lee", phone },
    headers: { "x-forwarded-for": address() },
  });
  expect(r.body.ok).toBe(true);
}

/** Chicago wall time of an instant (CST, UTC-6, in November). */
const chicago = (ms: number) => new Date(ms - 6 * 3_600_000).toISOString().slice(0, 19).replace("T", " ");

describe("the feed's content", () => {
  // What the scenario below converts, in time order.
  const expected: string[][] = [];
  let boltAt = 0;

  beforeAll(async () => {
    // Older than 90 days: never in the feed.
    clock.set(T0 - 91 * DAY);
    await lease("too-old", { gclid: "G-OLD" });
    await intake({ phone: newPhone(), dni_visitor: "too-old" });

    // A visit from a Google ad, a form, two calls from it and a booking, ten days ago.
    clock.set(T0 - 10 * DAY);
    const n1 = await lease("ann", { gclid: "G-ANN", utm: { source: "google" } });
    const annPhone = newPhone();
    await intake({ phone: annPhone, dni_visitor: "ann" });
    expected.push(["G-ANN", 'Lead "form"', chicago(clock.now()), "100", "USD"]);
    clock.advance(60_000);
    await report({ phone: annPhone, to_number: n1, secs: 400 });
    expected.push(["G-ANN", "Phone call", chicago(clock.now()), "0", "USD"], ["G-ANN", "Long call, 5 min", chicago(clock.now()), "1234.57", "EUR"]);
    clock.advance(60_000);
    // Too short for either call action.
    await report({ phone: annPhone, to_number: n1, secs: 59 });
    clock.advance(60_000);
    await book(annPhone);
    expected.push(["G-ANN", "Booking", chicago(clock.now()), "12.5", "USD"]);

    // A lead whose visit had no gclid, and its call: not Google Ads conversions.
    clock.advance(DAY);
    const n2 = await lease("bing-visitor", { msclkid: "MS-1", utm: { source: "bing" } });
    const bingPhone = newPhone();
    await intake({ phone: bingPhone, dni_visitor: "bing-visitor" });
    await report({ phone: bingPhone, to_number: n2, secs: 500 });

    // A call without a lead carries its own visitor's gclid; a click id that looks like a formula stays text.
    clock.advance(DAY);
    const n3 = await lease("caller", { gclid: '=HYPERLINK("http://x.example","y")' });
    clock.advance(1000);
    await report({ phone: "5125550999", to_number: n3, secs: 61 });
    expected.push(['\'=HYPERLINK("http://x.example","y")', "Phone call", chicago(clock.now()), "0", "USD"]);

    // Organization 2's conversions are in its own feed only.
    boltAt = clock.now();
    const b = await lease("bolt-visitor", { gclid: "G-BOLT" }, "bolt-site");
    expect(b).toBe("9035550101");
    const boltPhone = newPhone();
    await intake({ phone: boltPhone, list_id: 201, dni_visitor: "bolt-visitor" }, boltKey);
    await report({ phone: boltPhone, to_number: b, secs: 600 }, boltKey);

    // A call reported with a time ten minutes ahead is not a conversion until then.
    clock.set(T0);
    const n4 = await lease("early", { gclid: "G-FUTURE" });
    await report({ phone: "5125550998", to_number: n4, secs: 70, epoch: Math.floor((T0 + 600_000) / 1000) });
  });

  test("Google's format: the zone line, the header, one row per conversion and action, oldest first, in the organization's zone", async () => {
    const r = await fetchFeed("acme-ads.csv", basic("acme-ads", ACME_SECRET));
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(r.headers.get("cache-control")).toBe("no-store");
    const text = await r.text();
    expect(text.startsWith("Parameters:TimeZone=America/Chicago\r\nGoogle Click ID,Conversion Name,Conversion Time,Conversion Value,Conversion Currency\r\n")).toBe(true);
    const rows = parseCsv(text).slice(2);
    expect(rows).toEqual(expected);
    // RFC 4180 on the wire: the quoted name, and the formula-looking click id neutralised and quoted.
    expect(text).toContain(`G-ANN,"Lead ""form""",`);
    expect(text).toContain(`"'=HYPERLINK(""http://x.example"",""y"")",Phone call,`);
    for (const row of rows) for (const cell of row) expect(cell).not.toMatch(/^[=+\-@]/);
    for (const row of rows) expect(row[3]).toMatch(/^\d+(\.\d{1,2})?$/);
  });

  test("every fetch within the 90 days repeats the same conversions; a call reported ahead appears at its time; old ones leave the window", async () => {
    expect((await feedRows()).slice(2)).toEqual(expected);
    clock.set(T0 + 600_000);
    const later = (await feedRows()).slice(2);
    expect(later.slice(0, expected.length)).toEqual(expected);
    expect(later.slice(expected.length)).toEqual([["G-FUTURE", "Phone call", chicago(T0 + 600_000), "0", "USD"]]);
    // Eighty-one days on, Ann's conversions of ten days before T0 are 91 days old.
    clock.set(T0 + 81 * DAY);
    const gone = (await feedRows()).slice(2);
    expect(gone.some((r) => r[0] === "G-ANN")).toBe(false);
    expect(gone.some((r) => r[0] === "G-FUTURE")).toBe(true);
    clock.set(T0);
  });

  test("another organization's feed holds only its own conversions, in its own zone", async () => {
    const rows = await feedRows("bolt-ads", BOLT_SECRET);
    expect(rows[0]).toEqual(["Parameters:TimeZone=Europe/Berlin"]);
    // Berlin in November: UTC+1.
    expect(rows.slice(2)).toEqual([["G-BOLT", "Lead", new Date(boltAt + 3_600_000).toISOString().slice(0, 19).replace("T", " "), "3", "USD"]]);
  });
});

describe("HTTP Basic: the feed's id and secret", () => {
  test("missing, malformed or wrong credentials, an unknown feed, another feed's: 401 with the Basic challenge, nothing of the feed", async () => {
    const refused: [string, string | null][] = [
      ["acme-ads.csv", null],
      ["acme-ads.csv", "Basic"],
      ["acme-ads.csv", "Basic !!!"],
      ["acme-ads.csv", "Bearer " + ACME_SECRET],
      ["acme-ads.csv", "Basic " + Buffer.from("acme-ads" + ACME_SECRET).toString("base64")],
      ["acme-ads.csv", basic("acme-ads", ACME_SECRET.slice(0, -1))],
      ["acme-ads.csv", basic("acme-ads", ACME_SECRET + "x")],
      ["acme-ads.csv", basic("acme-ads", "")],
      ["acme-ads.csv", basic("bolt-ads", BOLT_SECRET)],
      ["acme-ads.csv", basic("ACME-ADS", ACME_SECRET)],
      ["bolt-ads.csv", basic("acme-ads", ACME_SECRET)],
      ["bolt-ads.csv", basic("bolt-ads", ACME_SECRET)],
      ["no-such-feed.csv", basic("no-such-feed", ACME_SECRET)],
      ["%00.csv", basic("\u0000", ACME_SECRET)],
    ];
    for (const [path, auth] of refused) {
      const r = await fetchFeed(path, auth);
      expect({ path, auth, status: r.status, challenge: r.headers.get("www-authenticate"), body: await r.json() }).toEqual({
        path, auth, status: 401, challenge: 'Basic realm="Leadline conversions", charset="UTF-8"', body: { ok: false, error: "unauthenticated" },
      });
    }
    // Not the feed's path: the contract's not_found.
    for (const path of ["acme-ads", "acme-ads.csvx", ".csv", "acme-ads.csv/x"]) {
      const r = await fetchFeed(path, basic("acme-ads", ACME_SECRET));
      expect({ path, status: r.status }).toEqual({ path, status: 404 });
    }
    expect((await fetchFeed("acme-ads.csv", basic("acme-ads", ACME_SECRET))).status).toBe(200);
  });

  test("an address refused 30 times in an hour is answered 429, even with the right secret; others are not", async () => {
    const ip = "203.0.113.77";
    for (let i = 0; i < 30; i++) expect((await fetchFeed("acme-ads.csv", basic("acme-ads", `guess-${i}`), ip)).status).toBe(401);
    expect((await fetchFeed("acme-ads.csv", basic("acme-ads", "guess-31"), ip)).status).toBe(429);
    expect((await fetchFeed("acme-ads.csv", basic("acme-ads", ACME_SECRET), ip)).status).toBe(429);
    expect((await fetchFeed("acme-ads.csv", basic("acme-ads", ACME_SECRET), "203.0.113.78")).status).toBe(200);
    // Fetches with the right credentials are never counted.
    for (let i = 0; i < 40; i++) expect((await fetchFeed("bolt-ads.csv", basic("bolt-ads", BOLT_SECRET), "203.0.113.79")).status).toBe(200);
  });

  test("the secret is stored only as its hash", async () => {
    const [row] = await db.sql`select to_jsonb(f)::text as t, length(secret_hash) as n from conversion_feeds f where id = 'acme-ads'`;
    expect(row.n).toBe(32);
    expect(row.t).not.toContain(ACME_SECRET);
    expect(row.t).not.toContain(Buffer.from(ACME_SECRET).toString("hex"));
  });
});

describe("a feed of many pages", () => {
  test("each conversion exactly once and in order across pages of time, on their bounds and in bursts too", async () => {
    const n = FEED_PAGE * 2 + 345;
    // Two or three leads on each whole second of 1,000 (page bounds fall on whole seconds), ids out
    // of time order, then a burst of 1,500 in one second after a quiet stretch.
    await db.sql`
      insert into leads (list_id, phone, created_at, attribution)
      select 201, '7375' || lpad(i::text, 6, '0'),
             ${new Date(T0 - 5 * DAY)}::timestamptz + ((i * 7) % 1000) * interval '1 second',
             jsonb_build_object('pool', 'bolt-site', 'visitor', 'bulk' || i, 'gclid', 'BULK-' || i)
      from generate_series(1, ${n}) i`;
    await db.sql`
      insert into leads (list_id, phone, created_at, attribution)
      select 201, '7376' || lpad(i::text, 6, '0'), ${new Date(T0 - 2 * DAY)}::timestamptz,
             jsonb_build_object('pool', 'bolt-site', 'visitor', 'burst' || i, 'gclid', 'BURST-' || i)
      from generate_series(1, 1500) i`;
    const rows = (await feedRows("bolt-ads", BOLT_SECRET)).slice(2);
    for (const [prefix, count] of [["BULK-", n], ["BURST-", 1500]] as const) {
      const mine = rows.filter((r) => r[0].startsWith(prefix));
      expect(mine).toHaveLength(count);
      expect(new Set(mine.map((r) => r[0])).size).toBe(count);
    }
    const times = rows.map((r) => r[2]);
    expect(times).toEqual([...times].sort());
    // Within one instant, in lead order.
    const bulk = rows.filter((r) => r[0].startsWith("BULK-"));
    const ids = bulk.filter((r) => r[2] === bulk[0][2]).map((r) => Number(r[0].slice(5)));
    expect(ids.length).toBeGreaterThan(1);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    // Read in-process with pages of 50: the same rows, in many pages, none over four pages' worth
    // but the one-second burst.
    const feed = (await findFeed(db.sql, "bolt-ads"))!;
    const pages: string[][][] = [];
    for await (const p of feedRowsOf(db.sql, feed, clock.now(), 50)) pages.push(p);
    expect(pages.flat()).toEqual(rows);
    expect(pages.length).toBeGreaterThan(40);
    expect(pages.filter((p) => p.length > 200).map((p) => p.length)).toEqual([1500]);
    // A conversion on a page's bound is the next page's, and only its.
    const at = T0 - 5 * DAY;
    const page = async (a: number, b: number) => (await conversionPage(db.sql, feed, new Date(a), new Date(b))).map((c) => c.id);
    const [before, after, both] = await Promise.all([page(at - 3_600_000, at), page(at, at + 3_600_000), page(at - 3_600_000, at + 3_600_000)]);
    const onBound = await db.sql<{ id: number }[]>`select id from leads where created_at = ${new Date(at)} order by id`;
    expect(onBound.length).toBeGreaterThan(0);
    expect(after.slice(0, onBound.length)).toEqual(onBound.map((r) => r.id));
    expect(before.some((id) => onBound.some((r) => r.id === id))).toBe(false);
    expect([...before, ...after]).toEqual(both);
  });
});

describe("provisioning conversion_feeds", () => {
  const feed = (over: Record<string, unknown> = {}) => ({ conversion_feeds: [{ id: "f1", org_id: 1, secret: "x".repeat(24), actions: [{ name: "Call", on: "call" }], ...over }] });
  const problems = (file: unknown) => fileProblems(file);

  test("each rule of operations.md §3, each problem named by its path", () => {
    expect(problems(feed())).toEqual([]);
    expect(problems(feed({ id: "bad id!" }))).toEqual(["conversion_feeds[0].id: expected feed id of letters, digits, _ and -, up to 64 characters"]);
    expect(problems(feed({ id: "x".repeat(65) }))).toEqual(["conversion_feeds[0].id: expected feed id of letters, digits, _ and -, up to 64 characters"]);
    expect(problems(feed({ secret: "x".repeat(23) }))).toEqual(["conversion_feeds[0].secret: must be at least 24 characters"]);
    expect(problems(feed({ org_id: null }))).toEqual(["conversion_feeds[0].org_id: cannot be null (it may not be empty)"]);
    expect(problems(feed({ actions: [] }))).toEqual(["conversion_feeds[0].actions: must not be empty"]);
    expect(problems(feed({ actions: [{ name: "Call", on: "visit" }] }))).toEqual(["conversion_feeds[0].actions[0].on: expected one of call, lead, booking"]);
    expect(problems(feed({ actions: [{ name: "Lead", on: "lead", min_secs: 30 }] }))).toEqual(["conversion_feeds[0].actions[0].min_secs: only a call action takes min_secs"]);
    expect(problems(feed({ actions: [{ name: "Call", on: "call", min_secs: -1 }] }))).toEqual(["conversion_feeds[0].actions[0].min_secs: must be at least 0"]);
    expect(problems(feed({ actions: [{ name: "Call", on: "call", value: -0.01 }] }))).toEqual(["conversion_feeds[0].actions[0].value: must be at least 0"]);
    expect(problems(feed({ actions: [{ name: "Call", on: "call", value: "5" }] }))).toEqual(["conversion_feeds[0].actions[0].value: expected number"]);
    expect(problems(feed({ actions: [{ name: "Call", on: "call", currency: "usd" }] }))).toEqual(["conversion_feeds[0].actions[0].currency: expected ISO 4217 currency code such as USD"]);
    expect(problems(feed({ actions: [{ name: "Call", on: "call", currency: "ABC" }] }))).toEqual(['conversion_feeds[0].actions[0].currency: unknown currency "ABC"']);
    expect(problems(feed({ actions: [{ name: "=cmd", on: "call" }] }))[0]).toStartWith("conversion_feeds[0].actions[0].name: must not start with =, +, - or @");
    expect(problems(feed({ actions: [{ name: "a\nb", on: "call" }] }))).toEqual(["conversion_feeds[0].actions[0].name: must not hold control characters or line breaks"]);
    expect(problems(feed({ actions: [{ name: "", on: "call" }] }))).toEqual(["conversion_feeds[0].actions[0].name: must not be empty"]);
    expect(problems(feed({ actions: [{ name: "Call", on: "call", conversion: 1 }] }))).toEqual(["conversion_feeds[0].actions[0].conversion: unknown field"]);
    expect(problems(feed({ url: "x" }))).toEqual(["conversion_feeds[0].url: unknown field"]);
    expect(problems({ conversion_feeds: [feed().conversion_feeds[0], feed().conversion_feeds[0]] })).toEqual(['conversion_feeds[1].id: duplicate "f1" (also conversion_feeds[0])']);
  });

  test("applied: an unknown organization refused; a second run changes nothing; a new secret replaces the old", async () => {
    await expect(applyProvisioning(db.sql, feed({ org_id: 99 }) as ProvisioningFile)).rejects.toThrow("conversion_feeds[0].org_id: org 99 does not exist");
    const file = { conversion_feeds: [{ ...FILE.conversion_feeds[1] }] } as ProvisioningFile;
    expect((await applyProvisioning(db.sql, file)).counts.conversion_feeds).toEqual({ created: 0, updated: 0, unchanged: 1 });
    const [stored] = await db.sql`select actions from conversion_feeds where id = 'bolt-ads'`;
    expect(stored.actions).toEqual([{ name: "Lead", on: "lead", min_secs: 0, value: 3, currency: "USD" }]);
    const rotated = "bolt-rotated-secret-000000000000";
    recordSecret("feed secret", rotated);
    const again = { conversion_feeds: [{ ...FILE.conversion_feeds[1], secret: rotated }] } as ProvisioningFile;
    expect((await applyProvisioning(db.sql, again)).counts.conversion_feeds).toEqual({ created: 0, updated: 1, unchanged: 0 });
    expect((await fetchFeed("bolt-ads.csv", basic("bolt-ads", BOLT_SECRET))).status).toBe(401);
    expect((await fetchFeed("bolt-ads.csv", basic("bolt-ads", rotated))).status).toBe(200);
    await applyProvisioning(db.sql, file);
  });
});
