// Call attribution from the hold history, and `leadline dni report`.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { UsageError } from "../src/errors";
import { systemActor } from "../src/auth/actor";
import { insertCall } from "../src/calls/queries";
import { dniCommand } from "../src/dni/command";
import { DniEngine } from "../src/dni/engine";
import type { VisitSource } from "../src/dni/engine";
import type { Visit } from "../src/dni/queries";
import { capture } from "./harness/capture";
import { testDatabase, type TestDatabase } from "./harness/db";
import { poolNumbers, provisionPools, testClock } from "./harness/dni";

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
});
afterAll(() => db?.drop());

const TTL = 1800_000;
const visit = (over: Partial<Visit> = {}): VisitSource => ({
  userAgent: "ua",
  ipHash: "h",
  attribution: () => ({
    utm_source: "", utm_medium: "", utm_campaign: "", utm_term: "", utm_content: "",
    gclid: "", gbraid: "", wbraid: "", fbclid: "", msclkid: "", landing: "", referrer: "", ...over,
  }),
});

/**
 * Reports a call to `toNumber` at `at` as calls.php records it (src/calls/queries.ts), by a reporter
 * of organization `orgId` (null: the house); the attribution it was given, or null.
 */
async function attributeCall(toNumber: string, at: number, orgId: number | null = null) {
  const report = { leadId: null, phone: "", dialId: null, status: "ANSWERED", secs: 0, agent: "a", recordingId: null, aiSummary: null, epoch: at / 1000, toNumber };
  const id = await insertCall(db.sql, systemActor("worker", "test", orgId), null, report, new Date(at));
  const [row] = await db.sql<{ visit_id: number | null; dni_pool: string | null; dni_visitor: string | null }[]>`
    select visit_id, dni_pool, dni_visitor from calls where id = ${id}`;
  return row.visit_id === null ? null : { id, ...row };
}

describe("call attribution and the report", () => {
  const clock = testClock(Date.UTC(2026, 10, 20, 12, 0, 0));
  const t0 = clock.now();
  let engine: DniEngine;

  beforeAll(async () => {
    await db.sql`insert into orgs (id, name) values (2, 'Bolt')`;
    await provisionPools(db.sql, [{ numbers: ["5125550101"] }]);
    await provisionPools(db.sql, [{ key: "bolt-site", org_id: 2, numbers: ["7375550101"], fallback: "7375550100", placeholder: "7375550199" }]);
    engine = new DniEngine(db.sql, clock);
    const acme = (await engine.pools.get("acme-site"))!;
    const bolt = (await engine.pools.get("bolt-site"))!;
    // alice holds 0101 from t0 for one ttl; bob takes it after her hold lapses.
    await engine.lease(acme, "alice", visit({ utm_source: "google", utm_medium: "cpc", utm_campaign: "spring", utm_term: "roof repair",
      utm_content: "ad1", gclid: "G-1", landing: "https://acme.example/roofs" }));
    engine.event(acme, "alice", { kind: "pageview", name: "/roofs", value: 0, meta: null });
    engine.event(acme, "alice", { kind: "form", name: "quote", value: 0, meta: null });
    engine.event(acme, "alice", { kind: "custom", name: "x", value: 1, meta: null });
    clock.set(t0 + TTL + 60_000);
    await engine.lease(acme, "bob", visit({ utm_source: "bing", utm_medium: "cpc", utm_campaign: "spring" }));
    engine.event(acme, "bob", { kind: "pageview", name: "/", value: 0, meta: null });
    engine.event(acme, "bob", { kind: "pageview", name: "/b", value: 0, meta: null });
    engine.event(acme, "stranger", { kind: "pageview", name: "/", value: 0, meta: null });
    await engine.lease(bolt, "carol", visit());
    await engine.flush();
  });

  test("a call to a pool number is attributed to whoever held it then, also after the hold expired", async () => {
    const during = await attributeCall("5125550101", t0 + 600_000);
    expect(during).toEqual({ id: expect.any(Number), visit_id: expect.any(Number), dni_pool: "acme-site", dni_visitor: "alice" });
    const [row] = await db.sql`select * from calls where id = ${during!.id}`;
    expect(row).toMatchObject({
      dni_pool: "acme-site", dni_visitor: "alice", utm_source: "google", utm_medium: "cpc", utm_campaign: "spring",
      utm_term: "roof repair", utm_content: "ad1", gclid: "G-1", landing: "https://acme.example/roofs",
    });
    const [alice] = await db.sql`select id from dni_visitors where visitor = 'alice'`;
    expect(row.visit_id).toBe(alice.id);
    // After alice's hold: the gap before bob's is nobody's; bob's span is bob's.
    expect(await attributeCall("5125550101", t0 + TTL + 30_000)).toBeNull();
    expect((await attributeCall("5125550101", t0 + TTL + 120_000))?.dni_visitor).toBe("bob");
    // Before any hold, or to a number that is no pool's: nothing.
    expect(await attributeCall("5125550101", t0 - 1000)).toBeNull();
    expect(await attributeCall("9995550101", t0 + 1000)).toBeNull();
  });

  test("a tenant's call report attributes only to its own organization's pools", async () => {
    expect(await attributeCall("7375550101", t0 + TTL + 120_000, 1)).toBeNull();
    expect((await attributeCall("7375550101", t0 + TTL + 120_000, 2))?.dni_visitor).toBe("carol");
  });

  test("dni report --json: visitors, page views, forms and calls per pool and UTM", async () => {
    const r = await capture(() => dniCommand(db.sql, ["report", "--pool", "acme-site", "--json"]));
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.out);
    expect(rows).toEqual([
      { pool: "acme-site", utm_source: "", utm_medium: "", utm_campaign: "", visitors: 0, pageviews: 1, forms: 0, calls: 0 },
      { pool: "acme-site", utm_source: "bing", utm_medium: "cpc", utm_campaign: "spring", visitors: 1, pageviews: 2, forms: 0, calls: 1 },
      { pool: "acme-site", utm_source: "google", utm_medium: "cpc", utm_campaign: "spring", visitors: 1, pageviews: 1, forms: 1, calls: 1 },
    ]);
  });

  test("dni report prints a table with totals; --since counts only what happened from that day", async () => {
    const all = await capture(() => dniCommand(db.sql, ["report"]));
    const lines = all.out.trimEnd().split("\n");
    expect(lines[0].split(/\s+/)).toEqual(["POOL", "SOURCE", "MEDIUM", "CAMPAIGN", "VISITORS", "PAGEVIEWS", "FORMS", "CALLS"]);
    expect(lines.some((l) => l.split(/\s+/).join(" ") === "acme-site google cpc spring 1 1 1 1")).toBe(true);
    expect(lines.some((l) => l.split(/\s+/).join(" ") === "bolt-site - - - 1 0 0 1")).toBe(true);
    expect(lines.at(-1)!.split(/\s+/)).toEqual(["total", "3", "4", "1", "3"]);
    const later = await capture(() => dniCommand(db.sql, ["report", "--since=2026-11-21", "--json"]));
    expect(JSON.parse(later.out)).toEqual([]);
    const none = await capture(() => dniCommand(db.sql, ["report", "--since", "2026-11-21"]));
    expect(none.out).toBe("");
    expect(none.err).toContain("no visitors");
  });

  test("bad arguments are usage errors", async () => {
    for (const args of [[], ["nope"], ["report", "--since", "2026-02-30"], ["report", "--since", "yesterday"], ["report", "--pool"],
      ["report", "--json", "--json"], ["report", "--bogus"], ["report", "extra"]]) {
      await expect(dniCommand(db.sql, args)).rejects.toBeInstanceOf(UsageError);
    }
  });
});
