// The leads list's Source column and filter (issue 30): each lead's source as intake took it, with
// its first touch (DNI attribution source / medium) under it; a select of the organization's sources
// seen (never another organization's); the filter kept by keyset pages and the export. Over HTTP on
// the served app with a session, across two organizations.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);
let db: TestDatabase;
let app: TestApp;
const clock = new ManualClock(Date.UTC(2026, 10, 23, 17));
const as: Record<"admin" | "manager" | "manager2", ConsoleClient> = {} as never;

/** The leads table's rows: [name, source cell's text]. */
const rows = (body: string) =>
  [...((/<table class="data leads-table">[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(body)?.[1] ?? "").matchAll(/<tr>([\s\S]*?)<\/tr>/g))].map((m) => {
    const cells = [...m[1].matchAll(/<td>([\s\S]*?)<\/td>/g)].map((c) => c[1].replace(/<br>/g, " | ").replace(/<[^>]*>/g, "").trim());
    return [cells[0], cells[4]];
  });
const options = (body: string) => [...(/<select id="source" name="source">([\s\S]*?)<\/select>/.exec(body)?.[1] ?? "").matchAll(/<option value="([^"]*)"[^>]*>([^<]*)</g)].map((m) => [m[1], m[2]]);
const next = (body: string) => /<a href="([^"]*)" rel="next">/.exec(body)?.[1]?.replaceAll("&amp;", "&") ?? null;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  const t0 = Date.UTC(2026, 10, 20, 15);
  // 60 web leads (paged), 2 from a vendor (one with a first touch), 1 with no source; org 2's own source.
  await db.sql`insert into leads (list_id, phone, first_name, source, created_at)
    select 101, '51255520' || lpad(i::text, 2, '0'), 'Web' || i, 'web', ${new Date(t0)}::timestamptz + i * interval '1 minute' from generate_series(1, 60) i`;
  await db.sql`insert into leads (list_id, phone, first_name, source, attribution, created_at) values
    (101, '5125553001', 'Vera', 'vendor-a', ${db.sql.json({ pool: "acme-site", visitor: "v1", source: "google", medium: "cpc", campaign: "roofs" })}, ${new Date(t0 + 3_600_000)}),
    (102, '5125553002', 'Vic', 'vendor-a', null, ${new Date(t0 + 3_660_000)}),
    (102, '5125553003', 'Nora', '', null, ${new Date(t0 + 3_720_000)}),
    (102, '5125553004', 'Eve', '=HYPERLINK("x")', null, ${new Date(t0 + 3_780_000)})`;
  await db.sql`insert into leads (list_id, phone, first_name, source) values (201, '5125554001', 'Bolt', 'bolt-secret-source')`;
  app = await startApp(db.url, { BASE_URL: "https://leads.example" }, { clock });
  const users = {
    admin: await makeUser(db.sql, { role: "admin", orgId: null }),
    manager: await makeUser(db.sql, { role: "manager", orgId: 1 }),
    manager2: await makeUser(db.sql, { role: "manager", orgId: 2 }),
  };
  for (const [role, u] of Object.entries(users)) as[role as keyof typeof as] = await signIn(app.base, u.email, u.password);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("the leads list's Source", () => {
  test("a column: intake's source, the first touch under it, '(no source)' for none", async () => {
    const body = (await as.manager.get("/console/leads")).body as string;
    expect(body).toContain('<th scope="col">Source</th>');
    expect(rows(body).slice(0, 5)).toEqual([
      ["Eve", '=HYPERLINK(&quot;x&quot;)'],
      ["Nora", "(no source)"],
      ["Vic", "vendor-a"],
      ["Vera", "vendor-a | first touch: google / cpc"],
      ["Web60", "web"],
    ]);
  });

  test("the filter offers the organization's sources seen, never another's", async () => {
    const mine = options((await as.manager.get("/console/leads")).body as string);
    expect(mine).toEqual([["", "Any"], ["(none)", "(no source)"], ['=HYPERLINK(&quot;x&quot;)', '=HYPERLINK(&quot;x&quot;)'], ["vendor-a", "vendor-a"], ["web", "web"]]);
    const bolt = options((await as.manager2.get("/console/leads")).body as string);
    expect(bolt).toEqual([["", "Any"], ["bolt-secret-source", "bolt-secret-source"]]);
    expect(options((await as.admin.get("/console/leads")).body as string).map((o) => o[0])).toContain("bolt-secret-source");
  });

  test("filtering by a source; `(none)` is the leads without one; the selection is kept", async () => {
    const vendor = (await as.manager.get("/console/leads?source=vendor-a")).body as string;
    expect(rows(vendor).map((r) => r[0])).toEqual(["Vic", "Vera"]);
    expect(vendor).toContain('<option value="vendor-a" selected>vendor-a</option>');
    expect(rows((await as.manager.get("/console/leads?source=(none)")).body as string).map((r) => r[0])).toEqual(["Nora"]);
    expect(rows((await as.manager.get(`/console/leads?source=${encodeURIComponent('=HYPERLINK("x")')}`)).body as string).map((r) => r[0])).toEqual(["Eve"]);
    // Another organization's source finds nothing of it for a manager of organization 1.
    expect((await as.manager.get("/console/leads?source=bolt-secret-source")).body as string).toContain("No lead matches.");
    expect(rows((await as.admin.get("/console/leads?source=bolt-secret-source")).body as string).map((r) => r[0])).toEqual(["Bolt"]);
  });

  test("keyset pages keep the filter and visit each of its leads once", async () => {
    const seen: string[] = [];
    let path: string | null = "/console/leads?source=web";
    while (path) {
      const body = (await as.manager.get(path)).body as string;
      seen.push(...rows(body).map((r) => r[0]));
      path = next(body);
      if (path) expect(path).toContain("source=web");
    }
    expect(seen).toHaveLength(60);
    expect(new Set(seen).size).toBe(60);
    expect(seen[0]).toBe("Web60");
    expect(seen.every((n) => n.startsWith("Web"))).toBe(true);
  });

  test("the export takes the same filter and audits it", async () => {
    const body = (await as.manager.get("/console/leads?source=vendor-a")).body as string;
    expect(body).toContain('href="/console/leads.csv?source=vendor-a"');
    const csv = (await as.manager.get("/console/leads.csv?source=vendor-a")).body as string;
    expect(csv.trim().split("\r\n").slice(1).map((l) => l.split(",")[1])).toEqual(["Vic", "Vera"]);
    const [row] = await db.sql<{ details: { filter: Record<string, unknown> } }[]>`select details from audit_log where action = 'export.leads' order by id desc limit 1`;
    expect(row.details.filter).toEqual({ source: "vendor-a" });
  });

  test("bad input is no filter or no match, never an error", async () => {
    for (const q of ["source=%00", "source=" + "x".repeat(5000), "source=%ff%fe", "source="]) {
      const r = await as.manager.get(`/console/leads?${q}`);
      expect(r.status).toBe(200);
    }
    expect(rows((await as.manager.get("/console/leads?source=")).body as string)).toHaveLength(50);
  });
});
