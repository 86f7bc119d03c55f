// The data behind the console's Calls, Number insertion, KPI and Billing pages, against a real
// database with SQL-seeded rows: pool usage (peak concurrent holds, fallbacks, the size that would
// have sufficed) and its chart; fallbacks written behind by the engine; the call log's scope,
// filters and keyset pages; CSV cells; KPI series; the ledger's scope.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Actor } from "../src/auth/actor";
import { allCalls, listCalls, noCallFilter, parseCursor, type CallCursor, type CallFilter } from "../src/calls/log";
import { axisTicks, chart, chartSummary } from "../src/console/chart";
import { csvCell, csvLine } from "../src/console/csv";
import { dniBody } from "../src/console/dni";
import { DniEngine, type VisitSource } from "../src/dni/engine";
import { pruneFallbacks } from "../src/dni/fallbacks";
import { dniReport } from "../src/dni/report";
import { dniScriptTag } from "../src/dni/script";
import { firstHoldSince, poolsNow, poolUsage, usageByHour } from "../src/dni/usage";
import { kpiDimensions, kpiMetrics, kpiSeries } from "../src/kpi/queries";
import { billingOf, ledgerPage } from "../src/messages/ledger";
import { testDatabase, type TestDatabase } from "./harness/db";
import { provisionPools, testClock, T0 } from "./harness/dni";
import { makeKey, makeLead, seedWorld } from "./harness/factory";

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
});
afterAll(() => db?.drop());

const MIN = 60_000;
const HOUR = 60 * MIN;
const at = (iso: string) => new Date(iso);
const actor = (orgId: number | null, agent: string | null = null): Actor => ({ orgId, type: "operator", id: "u", agent, keyId: null });

async function hold(pool: string, number: string, from: string, to: string): Promise<number> {
  const [r] = await db.sql<{ id: number }[]>`
    insert into dni_hold_history (pool_key, number, visitor_id, started_at, expires_at)
    values (${pool}, ${number}, 0, ${at(from)}, ${at(to)}) returning id`;
  return r.id;
}

describe("pool usage", () => {
  beforeAll(async () => {
    await provisionPools(db.sql, [{ numbers: ["5125550101", "5125550102"] }]);
    await provisionPools(db.sql, [{ key: "bolt-site", org_id: 2, numbers: ["7375550101"], fallback: "7375550100", placeholder: "7375550199" }]);
    // Written in start order, as allocation writes them (ids follow start times: src/dni/usage.ts).
    // Nov 20, 10:00 UTC hour: A, B, C overlap 10:30-10:40 (three at once); E starts the instant A
    // ends (spans are half-open: still three, not four). B runs on into the 11:00 hour.
    // D began before the window (Oct 24, 13:00 UTC) and ended inside it; F lies wholly before it;
    // G began more than the lookback (7 days) before the window: left out though it overlaps.
    // Another organization's pool, at the same time as A-E: never counted for acme-site.
    const holds: [string, string, string, string][] = [
      ["acme-site", "5125550107", "2026-10-10T00:00:00Z", "2026-10-26T00:00:00Z"], // G
      ["acme-site", "5125550106", "2026-10-16T00:00:00Z", "2026-10-17T00:00:00Z"], // F
      ["acme-site", "5125550105", "2026-10-20T00:00:00Z", "2026-10-30T00:00:00Z"], // D
      ...Array.from({ length: 5 }, (): [string, string, string, string] => ["bolt-site", "7375550101", "2026-11-20T10:00:00Z", "2026-11-20T10:59:00Z"]),
      ["acme-site", "5125550101", "2026-11-20T10:10:00Z", "2026-11-20T10:40:00Z"], // A
      ["acme-site", "5125550102", "2026-11-20T10:20:00Z", "2026-11-20T11:30:00Z"], // B
      ["acme-site", "5125550103", "2026-11-20T10:30:00Z", "2026-11-20T10:50:00Z"], // C
      ["acme-site", "5125550104", "2026-11-20T10:40:00Z", "2026-11-20T10:45:00Z"], // E
    ];
    for (const [pool, number, from, to] of holds) await hold(pool, number, from, to);
    // The current hold of 0101 (live expiry in dni_holds), held at T0 (Nov 23 12:00 UTC).
    const live = await hold("acme-site", "5125550101", "2026-11-23T11:55:00Z", "2026-11-23T12:05:00Z");
    await db.sql`update dni_holds set hold_id = ${live}, visitor_id = 0, expires_at = ${at("2026-11-23T12:25:00Z")} where number = '5125550101'`;
    await db.sql`
      insert into dni_fallbacks (pool_key, hour, visitor, served) values
        ('acme-site', '2026-11-20T10:00:00Z', 'v1', 3), ('acme-site', '2026-11-20T10:00:00Z', 'v2', 1),
        ('acme-site', '2026-11-21T15:00:00Z', 'v3', 1), ('acme-site', '2026-10-01T15:00:00Z', 'old', 9),
        ('bolt-site', '2026-11-20T10:00:00Z', 'b1', 50)`;
  });

  test("held and free now, per pool, confined to the organization", async () => {
    expect(await poolsNow(db.sql, 1, new Date(T0))).toEqual([{ key: "acme-site", name: "site", org_id: 1, numbers: 2, held: 1, free: 1 }]);
    expect((await poolsNow(db.sql, null, new Date(T0))).map((p) => p.key)).toEqual(["acme-site", "bolt-site"]);
    expect(await poolsNow(db.sql, 3, new Date(T0))).toEqual([]);
  });

  test("the first hold started since a time, by bisection over the ids (gaps included)", async () => {
    // F is wholly before the window: removing it (as the retention would) leaves a gap in the ids.
    await db.sql`delete from dni_hold_history where number = '5125550106'`;
    const ids = await db.sql<{ id: number; started_at: Date }[]>`select id, started_at from dni_hold_history order by id`;
    const expected = (t: Date) => ids.find((r) => r.started_at >= t)?.id ?? null;
    for (const t of ["2026-10-01", "2026-10-12", "2026-10-16", "2026-10-17", "2026-11-20T10:00:00Z", "2026-11-20T10:00:01Z", "2026-11-23T11:55:00Z", "2026-11-24"]) {
      expect(await firstHoldSince(db.sql, at(t))).toBe(expected(at(t)));
    }
  });

  test("each hour's peak of concurrent holds, and the refusals beside it", async () => {
    const hours = (await usageByHour(db.sql, ["acme-site", "bolt-site"], at("2026-11-20T09:00:00Z"), at("2026-11-20T13:00:00Z")))
      .filter((h) => h.pool_key === "acme-site");
    expect(hours.map((h) => [h.hour.toISOString(), h.peak, h.refused, h.served])).toEqual([
      ["2026-11-20T09:00:00.000Z", 0, 0, 0],
      ["2026-11-20T10:00:00.000Z", 3, 2, 4],
      ["2026-11-20T11:00:00.000Z", 1, 0, 0],
      ["2026-11-20T12:00:00.000Z", 0, 0, 0],
    ]);
  });

  test("30 days by day in the organization's zone; the size that would have sufficed is the worst hour's peak plus its refused visitors", async () => {
    const usage = await poolUsage(db.sql, "acme-site", T0, "America/New_York");
    expect(usage.days.length).toBe(31); // 30 × 24 hours, which straddle 31 New York days
    const byDay = new Map(usage.days.map((d) => [d.day, d]));
    expect(byDay.get("2026-11-20")).toEqual({ day: "2026-11-20", peak: 3, served: 4 });
    expect(byDay.get("2026-11-21")).toEqual({ day: "2026-11-21", peak: 0, served: 1 });
    expect(byDay.get("2026-11-23")).toEqual({ day: "2026-11-23", peak: 1, served: 0 });
    expect(byDay.get("2026-10-24")!.peak).toBe(1); // D, begun before the window (G is past the lookback)
    expect(byDay.get("2026-10-29")!.peak).toBe(1);
    expect(byDay.get("2026-10-31")!.peak).toBe(0);
    expect(usage.served).toBe(5); // October 1st's are outside the window
    expect(usage.sufficient).toEqual({ size: 5, hour: at("2026-11-20T10:00:00Z"), peak: 3, refused: 2 });
    const bolt = await poolUsage(db.sql, "bolt-site", T0, "America/New_York");
    // One visitor refused 50 times is one number short, not fifty.
    expect(bolt.sufficient).toEqual({ size: 6, hour: at("2026-11-20T10:00:00Z"), peak: 5, refused: 1 });
    expect(bolt.served).toBe(50);
  });

  test("the page's chart, table and warning carry those numbers", async () => {
    const [pool] = await poolsNow(db.sql, 1, new Date(T0));
    const usage = await poolUsage(db.sql, "acme-site", T0, "America/New_York");
    const page = dniBody({
      pools: [{ pool, usage, zone: "America/New_York", tag: dniScriptTag("https://leads.example/", "acme-site") }],
      report: [], from: "2026-10-25", to: "2026-11-23", reportPool: null, org: 1, orgs: [],
    }).html;
    expect(page).toContain("A pool of 5 numbers would have sufficed</strong> (it has 2 now: 3 more)");
    expect(page).toContain("In the hour from Nov 20, 2026, 5:00 AM, 2 visitors got the fallback number");
    expect(page).toContain("<tr><th scope=\"row\">2026-11-20</th><td class=\"num\">3</td><td class=\"num\">4</td></tr>");
    expect(page).toContain("Peak held at once: highest 3 on Nov 20. Fallbacks served: highest 4 on Nov 20, total 5.");
    expect(page).toContain("&lt;script src=&quot;https://leads.example/dni.js&quot; data-pool=&quot;acme-site&quot; async&gt;&lt;/script&gt;");
    expect(page).not.toContain("style=");
  });
});

describe("fallbacks written behind by the engine", () => {
  const visit = (holder = "h1"): VisitSource => ({
    userAgent: "ua",
    ipHash: holder,
    holderHash: holder,
    attribution: () => ({ utm_source: "", utm_medium: "", utm_campaign: "", utm_term: "", utm_content: "", gclid: "", gbraid: "", wbraid: "", fbclid: "", msclkid: "", landing: "", referrer: "" }),
  });

  test("a visitor the pool had no number for is kept per hour with its count; one refused by the address cap is not", async () => {
    await provisionPools(db.sql, [{ key: "tiny", numbers: ["5125550201", "5125550202"], fallback: "5125550200", placeholder: "5125550299" }]);
    const clock = testClock(Date.UTC(2026, 10, 22, 9, 59, 0));
    const engine = new DniEngine(db.sql, clock, { maxHoldsPerAddress: 1 });
    const pool = (await engine.pools.get("tiny"))!;
    expect((await engine.lease(pool, "first", visit("h1"))).fallback).toBe(false);
    // h1 already holds its one number while one is free: capped, not a refusal of the pool.
    expect((await engine.lease(pool, "capped", visit("h1"))).fallback).toBe(true);
    expect((await engine.lease(pool, "second", visit("h2"))).fallback).toBe(false);
    expect((await engine.lease(pool, "third", visit("h3"))).fallback).toBe(true);
    expect((await engine.lease(pool, "third", visit("h3"))).fallback).toBe(true);
    clock.set(Date.UTC(2026, 10, 22, 10, 1, 0));
    expect((await engine.lease(pool, "third", visit("h3"))).fallback).toBe(true);
    await engine.flush();
    const rows = await db.sql`select hour, visitor, served from dni_fallbacks where pool_key = 'tiny' order by hour, visitor`;
    expect(rows.map((r) => [r.hour.toISOString(), r.visitor, r.served])).toEqual([
      ["2026-11-22T09:00:00.000Z", "third", 2],
      ["2026-11-22T10:00:00.000Z", "third", 1],
    ]);
    // A second batch adds to the same row.
    expect((await engine.lease(pool, "third", visit("h3"))).fallback).toBe(true);
    await engine.flush();
    const [r] = await db.sql`select served from dni_fallbacks where pool_key = 'tiny' and hour = '2026-11-22T10:00:00Z'`;
    expect(r.served).toBe(2);
  });

  test("pruned with the hold history's retention", async () => {
    const before = await db.sql`select count(*)::int as n from dni_fallbacks where hour < '2026-11-01'`;
    expect(before[0].n).toBe(1);
    expect(await pruneFallbacks(db.sql, at("2026-11-01T00:00:00Z"), 1)).toBe(1);
    const after = await db.sql`select count(*)::int as n from dni_fallbacks where hour < '2026-11-01'`;
    expect(after[0].n).toBe(0);
  });
});

describe("the call log", () => {
  let ids: Record<string, number>;
  beforeAll(async () => {
    const acmeKey = await makeKey(db.sql, { scopes: ["calls:write"], org: 1 });
    const houseKey = await makeKey(db.sql, { scopes: ["calls:write"] });
    const acmeLead = await makeLead(db.sql, { phone: "5125551000", first: "Ann", last: "Lee" });
    const boltLead = await makeLead(db.sql, { list: 201, phone: "7375551000" });
    const ins = async (o: { lead?: number; key?: number; agent: string; at: string; status?: string; phone?: string; pool?: string; source?: string }) => {
      // An attributed call's first touch, given to its lead too (as calls.php does): what the log shows.
      const touch = o.pool ? db.sql.json({ pool: o.pool, visitor: "v", source: o.source ?? null, medium: "cpc", campaign: "spring", landing: "https://acme.example/" }) : null;
      const [r] = await db.sql<{ id: number }[]>`
        insert into calls (lead_id, key_id, phone, status, secs, agent, occurred_at, dni_pool, utm_source, utm_medium, utm_campaign, landing, attribution)
        values (${o.lead ?? null}, ${o.key ?? null}, ${o.phone ?? "5125551000"}, ${o.status ?? "ANSWERED"}, 75, ${o.agent}, ${at(o.at)},
                ${o.pool ?? null}, ${o.source ?? null}, ${o.pool ? "cpc" : null}, ${o.pool ? "spring" : null}, ${o.pool ? "https://acme.example/" : null}, ${touch})
        returning id`;
      if (touch && o.lead) await db.sql`update leads set attribution = coalesce(attribution, ${touch}) where id = ${o.lead}`;
      return r.id;
    };
    ids = {
      a1: await ins({ lead: acmeLead, agent: "agent7", at: "2026-11-20T10:00:00Z", pool: "acme-site", source: "google" }),
      // Same instant as a1: the keyset must still visit both, once.
      a2: await ins({ lead: acmeLead, agent: "other", at: "2026-11-20T10:00:00Z", status: "NO ANSWER", phone: "=HYPERLINK(\"x\")" }),
      a3: await ins({ key: acmeKey.id, agent: "agent7", at: "2026-11-21T10:00:00Z" }),
      b1: await ins({ lead: boltLead, agent: "agent9", at: "2026-11-21T11:00:00Z", pool: "bolt-site", source: "bing" }),
      h1: await ins({ key: houseKey.id, agent: "house1", at: "2026-11-22T10:00:00Z" }),
    };
  });
  const list = async (a: Actor, f: Partial<CallFilter> = {}) => (await listCalls(db.sql, a, { ...noCallFilter, ...f }, null, 50)).map((r) => r.id);

  test("confined in SQL: a manager sees the organization's (by lead, else reporting key); an agent its own; an admin all or one organization", async () => {
    expect(await list(actor(1))).toEqual([ids.a3, ids.a2, ids.a1]);
    expect(await list(actor(2))).toEqual([ids.b1]);
    expect(await list(actor(1, "agent7"))).toEqual([ids.a3, ids.a1]);
    expect(await list(actor(1, "agent9"))).toEqual([]);
    expect(await list(actor(null))).toEqual([ids.h1, ids.b1, ids.a3, ids.a2, ids.a1]);
    expect(await list(actor(null), { org: 2 })).toEqual([ids.b1]);
    // A confined viewer's org filter changes nothing.
    expect(await list(actor(1), { org: 2 })).toEqual([ids.a3, ids.a2, ids.a1]);
  });

  test("filters: range, agent, pool, source, status", async () => {
    expect(await list(actor(1), { from: at("2026-11-21T00:00:00Z") })).toEqual([ids.a3]);
    expect(await list(actor(1), { to: at("2026-11-21T00:00:00Z") })).toEqual([ids.a2, ids.a1]);
    expect(await list(actor(1), { agent: "other" })).toEqual([ids.a2]);
    expect(await list(actor(1), { pool: "acme-site" })).toEqual([ids.a1]);
    expect(await list(actor(1), { pool: "bolt-site" })).toEqual([]);
    expect(await list(actor(null), { source: "bing" })).toEqual([ids.b1]);
    expect(await list(actor(1), { status: "NO ANSWER" })).toEqual([ids.a2]);
  });

  test("rows carry the attribution, the lead and the zone", async () => {
    const [row] = await listCalls(db.sql, actor(1), { ...noCallFilter, pool: "acme-site" }, null, 10);
    expect(row).toMatchObject({
      org_id: 1, timezone: "America/New_York", lead_name: "Ann Lee", agent: "agent7", agent_name: "Dana Diaz", secs: 75,
      dni_pool: "acme-site", utm_source: "google", utm_medium: "cpc", utm_campaign: "spring", landing: "https://acme.example/",
    });
  });

  test("the cursor carries the time to the microsecond; a malformed one is no cursor", async () => {
    await db.sql`update calls set occurred_at = occurred_at + interval '123456 microseconds' where id = ${ids.h1}`;
    const [row] = await listCalls(db.sql, actor(null), noCallFilter, null, 1);
    expect(row.cursor).toBe(`${BigInt(Date.parse("2026-11-22T10:00:00Z")) * 1000n + 123456n}.${ids.h1}`);
    expect((await listCalls(db.sql, actor(null), noCallFilter, parseCursor(row.cursor), 1))[0].id).toBe(ids.b1);
    for (const bad of ["", "12", "1.2.3", "-1.2", "x.1", "1.x"]) expect(parseCursor(bad)).toBeNull();
  });

  test("keyset pages of one visit every call once, in order, ties included", async () => {
    const seen: number[] = [];
    let after: CallCursor | null = null;
    for (;;) {
      const rows = await listCalls(db.sql, actor(null), noCallFilter, after, 1);
      seen.push(rows[0].id);
      if (rows.length <= 1) break;
      after = parseCursor(rows[0].cursor);
    }
    expect(seen).toEqual([ids.h1, ids.b1, ids.a3, ids.a2, ids.a1]);
    const batches: number[][] = [];
    for await (const b of allCalls(db.sql, actor(1), noCallFilter, 2)) batches.push(b.map((r) => r.id));
    expect(batches).toEqual([[ids.a3, ids.a2], [ids.a1]]);
  });
});

describe("CSV cells", () => {
  test("formula starts are neutralised, quotes and separators quoted, numbers kept", () => {
    expect(csvCell("=HYPERLINK(\"x\")")).toBe("\"'=HYPERLINK(\"\"x\"\")\"");
    for (const s of ["+1", "-2", "@SUM(A1)", "\tx", "\rx"]) expect(csvCell(s).replace(/^"/, "").startsWith("'")).toBe(true);
    expect(csvCell("a,b")).toBe("\"a,b\"");
    expect(csvCell("line\nbreak")).toBe("\"line\nbreak\"");
    expect(csvCell(-5)).toBe("-5");
    expect(csvCell(null)).toBe("");
    expect(csvCell(new Date(Date.UTC(2026, 0, 2)))).toBe("2026-01-02T00:00:00.000Z");
    expect(csvLine(["a", 1, null])).toBe("a,1,\r\n");
  });

  test("a ; or , followed by = + - @ makes the whole value a formula too (locales that split on ;): prefixed and quoted", () => {
    expect(csvCell("Smith;=HYPERLINK(\"x\")")).toBe("\"'Smith;=HYPERLINK(\"\"x\"\")\"");
    for (const s of ["a;+1", "a;-2", "a;@SUM(A1)", "a,=1+1", "a, -2", "a;  =cmd|' /C calc'!A0", "x,@y"]) {
      const cell = csvCell(s);
      expect({ s, cell }).toEqual({ s, cell: `"'${s}"` });
    }
    // A ; alone is quoted, so the value stays one cell where ; separates cells; nothing else changes.
    expect(csvCell("Smith; Jones")).toBe("\"Smith; Jones\"");
    for (const s of ["a-b", "a@b.example", "Smith, Jr", "1+1", "x=y"]) expect(csvCell(s).replace(/^"/, "").startsWith("'")).toBe(false);
  });
});

describe("the chart", () => {
  test("axis top, summary and the numbers table", () => {
    expect(axisTicks(3, true)).toEqual([0, 1, 2, 3]);
    expect(axisTicks(7, true)).toEqual([0, 2, 4, 6, 8]);
    expect(axisTicks(10, true)).toEqual([0, 5, 10]);
    expect(axisTicks(1107, true)).toEqual([0, 500, 1000, 1500]);
    expect(axisTicks(0.3, false)).toEqual([0, 0.1, 0.2, 0.3]);
    expect(axisTicks(0, true)).toEqual([0, 1]);
    const spec = { id: "c", title: "Calls", labels: ["2026-11-01", "2026-11-02", "2026-11-03"], series: [{ name: "Calls", values: [2, null, 7] }], kind: "line" as const };
    expect(chartSummary(spec)).toBe("Calls: highest 7 on Nov 3, total 9.");
    const out = chart(spec).html;
    expect(out).toContain("<title id=\"c-title\">Calls</title>");
    expect(out).toContain("aria-labelledby=\"c-title c-desc\"");
    expect(out).toContain("<td class=\"num\">–</td>");
    expect(out).not.toContain("style=");
    // The y axis tops out at 8 (ticks 0, 2, … 8): the 7 sits 7/8 up the plot (top 12, height 192 → y = 12 + 192 / 8).
    expect(out).toContain("cy=\"36\"");
  });
});

describe("KPI series and billing", () => {
  beforeAll(async () => {
    await db.sql`insert into kpi_metrics (key, label) values ('leads', 'Leads'), ('spend', 'Ad spend')`;
    await db.sql`
      insert into kpi_points (org_id, metric_key, day, dim_key, value) values
        (1, 'leads', '2026-11-01', '', 4), (1, 'leads', '2026-11-01', 'google', 3), (1, 'leads', '2026-11-03', 'google', 5),
        (2, 'leads', '2026-11-01', '', 100), (null, 'leads', '2026-11-01', '', 1000), (2, 'spend', '2026-11-01', '', 9)`;
    await db.sql`insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost) values (1, 'active', 'active', 12.5, 0.01, 0.001), (2, 'frozen', 'none', 3, 0.02, 0)`;
    await db.sql`
      insert into credit_ledger (org_id, kind, amount, balance) values (1, 'charge', -0.01, 12.51), (2, 'charge', -1, 3), (1, 'charge', -0.01, 12.5)`;
  });

  test("a metric by day: the organization's points, every dimension summed or one", async () => {
    const q = { metric: "leads", from: "2026-11-01", to: "2026-11-30" };
    expect(await kpiSeries(db.sql, { ...q, orgId: 1, dim: null })).toEqual([{ day: "2026-11-01", value: 7 }, { day: "2026-11-03", value: 5 }]);
    expect(await kpiSeries(db.sql, { ...q, orgId: 1, dim: "" })).toEqual([{ day: "2026-11-01", value: 4 }]);
    expect(await kpiSeries(db.sql, { ...q, orgId: 2, dim: null })).toEqual([{ day: "2026-11-01", value: 100 }]);
    expect(await kpiSeries(db.sql, { ...q, orgId: null, dim: null })).toEqual([{ day: "2026-11-01", value: 1107 }, { day: "2026-11-03", value: 5 }]);
    expect(await kpiSeries(db.sql, { ...q, orgId: 1, dim: null, to: "2026-11-02" })).toEqual([{ day: "2026-11-01", value: 7 }]);
    expect(await kpiMetrics(db.sql, 1)).toEqual([{ key: "leads", label: "Leads" }]);
    expect(await kpiDimensions(db.sql, 1, "leads")).toEqual(["", "google"]);
  });

  test("credits and the ledger, confined to the organization, in keyset pages", async () => {
    expect((await billingOf(db.sql, 1)).map((b) => [b.org_id, b.credits])).toEqual([[1, 12.5]]);
    expect((await billingOf(db.sql, null)).map((b) => b.org_id)).toEqual([1, 2]);
    const page = await ledgerPage(db.sql, 1, null, 1);
    expect(page.map((e) => [e.org_id, e.balance])).toEqual([[1, 12.5], [1, 12.51]]);
    expect((await ledgerPage(db.sql, 1, page[0].id, 1)).map((e) => e.balance)).toEqual([12.51]);
    expect((await ledgerPage(db.sql, null, null, 10)).length).toBe(3);
  });
});

describe("the attribution report over a range, per organization", () => {
  test("until and orgId bound what counts", async () => {
    const all = await dniReport(db.sql, { pool: null, since: null });
    expect(all.some((r) => r.pool === "bolt-site")).toBe(true);
    const acme = await dniReport(db.sql, { pool: null, since: null, orgId: 1 });
    expect(acme.every((r) => r.pool !== "bolt-site")).toBe(true);
    expect(acme.find((r) => r.utm_source === "google")?.calls).toBe(1);
    const before = await dniReport(db.sql, { pool: null, since: null, until: at("2026-11-20T10:00:00Z"), orgId: 1 });
    expect(before.find((r) => r.utm_source === "google")).toBeUndefined();
  });
});
