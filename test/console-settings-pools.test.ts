// The console's DNI pool settings through HTTP, across two organizations: each form goes through
// the provisioning service (validation, merge, audit with previous and new values), a pool's
// numbers are written as its whole active list with one change, deactivating asks for a
// confirmation, a number active in another organization's pool is refused without naming that
// pool, and a manager of one organization neither reads nor changes another's pool.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { provisionPools, testClock } from "./harness/dni";
import { seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);

let db: TestDatabase;
let app: TestApp;
let acme: ConsoleClient;
let bolt: ConsoleClient;
let agent: ConsoleClient;
let admin: ConsoleClient;

const BOLT_POOL = "bolt-hidden-pool";
const BOLT_NUMBER = "5125559901";

const pool = async (key: string) =>
  (await db.sql<{ name: string; fallback: string; placeholder: string; ttl_seconds: number; org_id: number }[]>`select name, fallback, placeholder, ttl_seconds, org_id::float8 as org_id from dni_pools where key = ${key}`)[0]!;
const active = async (key: string) => (await db.sql<{ number: string }[]>`select number from dni_numbers where pool_key = ${key} and active order by number`).map((r) => r.number);
const audits = (target: string) =>
  db.sql<{ action: string; actor_id: string; org_id: number | null; details: { changes: Record<string, { from: unknown; to: unknown }> } }[]>`select * from audit_log where target = ${target} and action = 'pool.update' order by id`;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await provisionPools(db.sql, [
    { key: "acme-site", org_id: 1, numbers: ["5125550101", "5125550102"] },
    { key: BOLT_POOL, org_id: 2, numbers: [BOLT_NUMBER], fallback: "5125559900", placeholder: "5125559999" },
  ]);
  // One hour of Nov 20 with three holds at once and two visitors refused: the exhaustion warning.
  for (const [from, to] of [["10:10", "10:40"], ["10:20", "11:30"], ["10:30", "10:50"]]) {
    await db.sql`insert into dni_hold_history (pool_key, number, visitor_id, started_at, expires_at)
      values ('acme-site', '5125550101', 0, ${new Date(`2026-11-20T${from}:00Z`)}, ${new Date(`2026-11-20T${to}:00Z`)})`;
  }
  await db.sql`insert into dni_fallbacks (pool_key, hour, visitor, served) values ('acme-site', '2026-11-20T10:00:00Z', 'v1', 3), ('acme-site', '2026-11-20T10:00:00Z', 'v2', 1)`;
  app = await startApp(db.url, {}, { clock: testClock() });
  const [m, b, a, s] = await Promise.all([
    makeUser(db.sql, { role: "manager", orgId: 1 }),
    makeUser(db.sql, { role: "manager", orgId: 2 }),
    makeUser(db.sql, { role: "agent", orgId: 1 }),
    makeUser(db.sql, { role: "admin", orgId: null }),
  ]);
  [acme, bolt, agent, admin] = await Promise.all([
    signIn(app.base, m.email, m.password),
    signIn(app.base, b.email, b.password),
    signIn(app.base, a.email, a.password),
    signIn(app.base, s.email, s.password),
  ]);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("DNI pool settings", () => {
  test("the list shows the organization's pools with the number-insertion page's exhaustion warning, and no other organization's", async () => {
    const r = await acme.get("/console/settings/pools");
    expect(r.status).toBe(200);
    expect(r.body).toContain('href="/console/settings/pools/acme-site"');
    expect(r.body).toContain("Pool exhausted");
    expect(r.body).toContain("A pool of 5 numbers would have sufficed");
    expect(r.body).not.toContain(BOLT_POOL);
    const all = await admin.get("/console/settings/pools");
    expect(all.body).toContain("acme-site");
    expect(all.body).toContain(BOLT_POOL);
    expect((await agent.get("/console/settings/pools")).status).toBe(404);
  });

  test("edit: name, fallback, placeholder and hold TTL through the provisioning service, audited pool.update", async () => {
    const form = await acme.get("/console/settings/pools/acme-site");
    expect(form.status).toBe(200);
    expect(form.body).toContain('value="5125550100"');
    expect(form.body).toContain("Pool exhausted");
    const bad = await acme.post("/console/settings/pools/acme-site", { name: "Site", fallback: "12", placeholder: "5125550199", ttl_seconds: "5" });
    expect(bad.status).toBe(422);
    expect(bad.body).toContain("fallback:");
    expect(bad.body).toContain("ttl_seconds:");
    expect((await pool("acme-site")).ttl_seconds).toBe(1800);
    const r = await acme.post("/console/settings/pools/acme-site", { name: "Main site", fallback: "(512) 555-0111", placeholder: "", ttl_seconds: "900" });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe("/console/settings/pools/acme-site?done=saved");
    expect(await pool("acme-site")).toMatchObject({ name: "Main site", fallback: "5125550111", placeholder: "", ttl_seconds: 900 });
    const [entry] = await audits("pool:acme-site");
    expect(entry).toMatchObject({ action: "pool.update", org_id: 1 });
    expect(entry!.details.changes.ttl_seconds).toEqual({ from: 1800, to: 900 });
    expect(entry!.details.changes.fallback).toEqual({ from: "5125550100", to: "5125550111" });
    expect(entry!.details.changes.numbers).toBeUndefined();
    // The same form again changes nothing.
    const again = await acme.post("/console/settings/pools/acme-site", { name: "Main site", fallback: "5125550111", placeholder: "", ttl_seconds: "900" });
    expect(again.headers.get("location")).toBe("/console/settings/pools/acme-site?done=unchanged");
  });

  test("add a number: the pool's whole list with it, the others kept; audited with the list before and after", async () => {
    const r = await acme.post("/console/settings/pools/acme-site/numbers", { number: "512-555-0103" });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe("/console/settings/pools/acme-site?done=added");
    expect(await active("acme-site")).toEqual(["5125550101", "5125550102", "5125550103"]);
    const rows = await audits("pool:acme-site");
    expect(rows.at(-1)!.details.changes.numbers).toEqual({ from: ["5125550101", "5125550102"], to: ["5125550101", "5125550102", "5125550103"] });
    const bad = await acme.post("/console/settings/pools/acme-site/numbers", { number: "call me" });
    expect(bad.status).toBe(422);
    expect(bad.body).toContain("number: ");
    expect(await active("acme-site")).toEqual(["5125550101", "5125550102", "5125550103"]);
    // Typed with the US country code, it is the same 10-digit number, already in the pool.
    const plus1 = await acme.post("/console/settings/pools/acme-site/numbers", { number: "+1 (512) 555-0103" });
    expect(plus1.headers.get("location")).toBe("/console/settings/pools/acme-site?done=unchanged");
    expect(await active("acme-site")).toEqual(["5125550101", "5125550102", "5125550103"]);
  });

  test("two numbers added at the same moment are both kept", async () => {
    const [a, b] = await Promise.all([
      acme.post("/console/settings/pools/acme-site/numbers", { number: "5125550104" }),
      acme.post("/console/settings/pools/acme-site/numbers", { number: "5125550105" }),
    ]);
    expect([a.status, b.status]).toEqual([303, 303]);
    expect(await active("acme-site")).toEqual(["5125550101", "5125550102", "5125550103", "5125550104", "5125550105"]);
  });

  test("a number active in another organization's pool is refused without naming that pool", async () => {
    const r = await acme.post("/console/settings/pools/acme-site/numbers", { number: BOLT_NUMBER });
    expect(r.status).toBe(422);
    expect(r.body).toContain("this number is in use by another pool");
    expect(r.body).not.toContain(BOLT_POOL);
    expect(await active("acme-site")).not.toContain(BOLT_NUMBER);
    expect(await active(BOLT_POOL)).toEqual([BOLT_NUMBER]);
  });

  test("deactivate: a post without the confirmation changes nothing; with it the number is deactivated, not deleted; audited", async () => {
    const confirm = await acme.get("/console/settings/pools/acme-site/deactivate?number=5125550102");
    expect(confirm.status).toBe(200);
    expect(confirm.body).toContain('name="confirm"');
    const unconfirmed = await acme.post("/console/settings/pools/acme-site/deactivate", { number: "5125550102" });
    expect(unconfirmed.status).toBe(303);
    expect(unconfirmed.headers.get("location")).toBe("/console/settings/pools/acme-site/deactivate?number=5125550102");
    expect(await active("acme-site")).toContain("5125550102");
    const r = await acme.post("/console/settings/pools/acme-site/deactivate", { number: "5125550102", confirm: "1" });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe("/console/settings/pools/acme-site?done=deactivated");
    expect(await active("acme-site")).toEqual(["5125550101", "5125550103", "5125550104", "5125550105"]);
    const [row] = await db.sql<{ active: boolean }[]>`select active from dni_numbers where pool_key = 'acme-site' and number = '5125550102'`;
    expect(row!.active).toBe(false);
    const last = (await audits("pool:acme-site")).at(-1)!;
    expect(last.action).toBe("pool.update");
    expect((last.details.changes.numbers!.to as string[]).includes("5125550102")).toBe(false);
    // A number not active in the pool has no confirmation page.
    expect((await acme.get("/console/settings/pools/acme-site/deactivate?number=5125550102")).status).toBe(404);
  });

  test("another organization's manager neither reads nor changes the pool (the 404 page)", async () => {
    const before = await pool("acme-site");
    const numbers = await active("acme-site");
    expect((await bolt.get("/console/settings/pools/acme-site")).status).toBe(404);
    expect((await bolt.get("/console/settings/pools/acme-site/deactivate?number=5125550101")).status).toBe(404);
    expect((await bolt.post("/console/settings/pools/acme-site", { name: "Stolen", ttl_seconds: "30" })).status).toBe(404);
    expect((await bolt.post("/console/settings/pools/acme-site/numbers", { number: "5125550199" })).status).toBe(404);
    expect((await bolt.post("/console/settings/pools/acme-site/deactivate", { number: "5125550101", confirm: "1" })).status).toBe(404);
    expect((await bolt.get("/console/settings/pools")).body).not.toContain("acme-site");
    expect(await pool("acme-site")).toEqual(before);
    expect(await active("acme-site")).toEqual(numbers);
    expect((await acme.get(`/console/settings/pools/${BOLT_POOL}`)).status).toBe(404);
  });

  test("an admin edits any organization's pool", async () => {
    const r = await admin.post(`/console/settings/pools/${BOLT_POOL}`, { name: "Bolt site", ttl_seconds: "600" });
    expect(r.status).toBe(303);
    expect(await pool(BOLT_POOL)).toMatchObject({ name: "Bolt site", ttl_seconds: 600, org_id: 2, fallback: "5125559900" });
    const [entry] = await audits(`pool:${BOLT_POOL}`);
    expect(entry).toMatchObject({ action: "pool.update", org_id: 2 });
  });

  test("add a pool: create-only, in the manager's own organization whatever org is posted, audited pool.create", async () => {
    const r = await acme.post("/console/settings/pools", { key: "acme-landing", name: "Landing", fallback: "5125550177", placeholder: "", ttl_seconds: "", org: "2" });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe("/console/settings/pools/acme-landing?done=created");
    expect(await pool("acme-landing")).toMatchObject({ org_id: 1, name: "Landing", fallback: "5125550177", placeholder: "", ttl_seconds: 1800 });
    expect(await active("acme-landing")).toEqual([]);
    const [entry] = await db.sql<{ actor_id: string; org_id: number }[]>`select actor_id, org_id from audit_log where action = 'pool.create' and target = 'pool:acme-landing'`;
    expect(entry!.org_id).toBe(1);
    expect((await acme.get("/console/settings/pools/acme-landing")).status).toBe(200);
    const bad = await acme.post("/console/settings/pools", { key: "no spaces here", name: "x" });
    expect(bad.status).toBe(422);
    expect(bad.body).toContain("key:");
  });

  test("a pool key in use anywhere is refused with one answer that never says whose", async () => {
    const theirs = await acme.post("/console/settings/pools", { key: BOLT_POOL, name: "Mine now" });
    const ours = await acme.post("/console/settings/pools", { key: "acme-site", name: "Mine now" });
    for (const r of [theirs, ours]) {
      expect(r.status).toBe(422);
      expect(r.body).toContain("this key is in use: choose another");
      expect(r.body).not.toContain("does not exist");
      expect(r.body).not.toContain("exists already");
    }
    expect((await pool(BOLT_POOL)).org_id).toBe(2);
    expect((await pool(BOLT_POOL)).name).not.toBe("Mine now");
    expect((await pool("acme-site")).name).not.toBe("Mine now");
  });

  test("an admin adds a pool for an organization they choose", async () => {
    const r = await admin.post("/console/settings/pools", { key: "bolt-second", org: "2", name: "Second" });
    expect(r.status).toBe(303);
    expect((await pool("bolt-second")).org_id).toBe(2);
    expect((await bolt.get("/console/settings/pools/bolt-second")).status).toBe(200);
    expect((await acme.get("/console/settings/pools/bolt-second")).status).toBe(404);
  });

  test("bad input of every kind is the form's refusal or the 404 page, never a 500", async () => {
    for (const key of ["%00", "a%00b", "x".repeat(65), "%E2%80%AE", "..%2F..%2Fetc"]) {
      expect((await acme.get(`/console/settings/pools/${key}`)).status).toBe(404);
      expect((await acme.post(`/console/settings/pools/${key}/numbers`, { number: "5125550199" })).status).toBe(404);
    }
    const forms: Record<string, string>[] = [{ name: "a\u0000b" }, { ttl_seconds: "1e9" }, { ttl_seconds: "99999999999" }, { fallback: "\u0000" }, { name: "x".repeat(100_000) }];
    for (const form of forms) {
      const r = await acme.post("/console/settings/pools/acme-site", form);
      expect([303, 422]).toContain(r.status);
    }
    for (const number of ["", "\u0000", "5".repeat(1000), "+44 20 7946 0958", "2 512 555 0199"]) {
      expect((await acme.post("/console/settings/pools/acme-site/numbers", { number })).status).toBe(422);
    }
    expect((await acme.get("/console/settings/pools/acme-site/deactivate?number=%00")).status).toBe(404);
    expect((await acme.post("/console/settings/pools/acme-site/deactivate", { number: "\u0000", confirm: "1" })).status).toBe(303);
    expect((await acme.post("/console/settings/pools", { key: "a\u0000b" })).status).toBe(422);
  });
});
