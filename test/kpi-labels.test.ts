// KPI labels (src/kpi/labels.ts): an organization's label for a metric key replaces the key where
// a person reads it, confined to that organization; an admin sets a platform default; agents may not.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Actor } from "../src/auth/actor";
import { setKpiLabel } from "../src/kpi/labels";
import { kpiMetrics } from "../src/kpi/queries";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

let db: TestDatabase;
const now = new Date("2026-03-08T12:00:00Z");
const manager = (orgId: number): Actor => ({ orgId, type: "user", id: `manager${orgId}`, agent: null, keyId: null });
const admin: Actor = { orgId: null, type: "user", id: "admin", agent: null, keyId: null };

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await db.sql`insert into kpi_metrics (key, label) values ('calls_made', 'calls_made')`;
  await db.sql`insert into kpi_points (org_id, metric_key, day, dim_key, value) values (1, 'calls_made', '2026-03-08', '', 3), (2, 'calls_made', '2026-03-08', '', 4)`;
}, 60_000);
afterAll(async () => {
  await db?.drop();
});

describe("KPI labels", () => {
  test("a manager's label shows for their organization only; an empty label removes it", async () => {
    expect(await setKpiLabel(db.sql, manager(1), { metric: "calls_made", label: "  Calls made " }, now)).toEqual({ ok: true, org: 1, metric: "calls_made", label: "Calls made" });
    expect(await kpiMetrics(db.sql, 1)).toEqual([{ key: "calls_made", label: "Calls made" }]);
    expect(await kpiMetrics(db.sql, 2)).toEqual([{ key: "calls_made", label: "calls_made" }]);
    // A manager of organization 2 naming organization 1 still writes organization 2's label.
    expect(await setKpiLabel(db.sql, manager(2), { org: 1, metric: "calls_made", label: "Dials" }, now)).toMatchObject({ ok: true, org: 2 });
    expect(await kpiMetrics(db.sql, 1)).toEqual([{ key: "calls_made", label: "Calls made" }]);
    expect(await setKpiLabel(db.sql, manager(1), { metric: "calls_made", label: "" }, now)).toMatchObject({ ok: true, label: null });
    expect(await kpiMetrics(db.sql, 1)).toEqual([{ key: "calls_made", label: "calls_made" }]);
    const [a] = await db.sql`select count(*)::int as n from audit_log where action = 'kpi.label'`;
    expect(a.n).toBe(3);
  });
  test("an admin sets the default of every organization, or one organization's label", async () => {
    expect(await setKpiLabel(db.sql, admin, { org: null, metric: "calls_made", label: "Outbound calls" }, now)).toMatchObject({ ok: true, org: null });
    expect(await kpiMetrics(db.sql, 1)).toEqual([{ key: "calls_made", label: "Outbound calls" }]);
    expect(await kpiMetrics(db.sql, 2)).toEqual([{ key: "calls_made", label: "Dials" }]);
    expect(await setKpiLabel(db.sql, admin, { org: 9999, metric: "calls_made", label: "x" }, now)).toEqual({ ok: false, reason: "not_found" });
  });
  test("bad input and agents are refused as values", async () => {
    const agent: Actor = { ...manager(1), agent: "agent7" };
    expect(await setKpiLabel(db.sql, agent, { metric: "calls_made", label: "x" }, now)).toEqual({ ok: false, reason: "not_allowed" });
    expect(await setKpiLabel(db.sql, manager(1), { metric: "bad key!", label: "x" }, now)).toEqual({ ok: false, reason: "bad_metric_key" });
    expect(await setKpiLabel(db.sql, manager(1), { metric: "calls_made", label: "x".repeat(81) }, now)).toEqual({ ok: false, reason: "bad_label" });
    expect(await setKpiLabel(db.sql, manager(1), { metric: "calls_made", label: "a\u0007b" }, now)).toEqual({ ok: false, reason: "bad_label" });
  });
});
