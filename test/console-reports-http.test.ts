// The console's Calls, Number insertion, KPI and Billing pages over HTTP, per role: what each
// viewer sees, that another organization's rows never show, that agents get the 404 page where
// the issue says so, the CSV export, and keyset pages.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { ManualClock } from "./harness/clock";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { provisionPools, T0 } from "./harness/dni";
import { startApp, type TestApp } from "./harness/app";
import { makeKey, makeLead, seedWorld } from "./harness/factory";


setDefaultTimeout(60_000);
let db: TestDatabase;
let app: TestApp;
const clock = new ManualClock(T0); // Nov 23 2026, 12:00 UTC
const as: Record<"admin" | "manager" | "manager2" | "agent" | "agent2", ConsoleClient> = {} as never;

async function seed(): Promise<void> {
  const sql = db.sql;
  await seedWorld(sql);
  await provisionPools(sql, [{ numbers: ["5125550101", "5125550102"] }]);
  await provisionPools(sql, [{ key: "bolt-site", org_id: 2, numbers: ["7375550101"], fallback: "7375550100", placeholder: "7375550199" }]);
  const ann = await makeLead(sql, { phone: "5125551000", first: "Ann", last: "Acme" });
  const bob = await makeLead(sql, { list: 201, phone: "7375551000", first: "Bob", last: "Bolt" });
  const acmeKey = await makeKey(sql, { scopes: ["calls:write"], org: 1 });
  // 55 calls of Ann's to agent c2agent (one page is 50), one to another agent, and Bob's in org 2.
  await sql`
    insert into calls (lead_id, phone, status, secs, agent, occurred_at, dni_pool, utm_source, utm_medium, utm_campaign, landing)
    select ${ann}, '5125551000', 'ANSWERED', 60 + i, 'c2agent', ${new Date(T0 - 86_400_000)}::timestamptz - i * interval '1 minute',
           'acme-site', 'google', 'cpc', 'spring', 'https://acme.example/roofs'
    from generate_series(1, 55) i`;
  await sql`insert into calls (lead_id, phone, status, secs, agent, occurred_at) values
    (${ann}, '=cmd|'' /C calc''!A0', 'NO ANSWER', 0, 'agent7', ${new Date(T0 - 3_600_000)})`;
  await sql`insert into calls (key_id, phone, status, secs, agent, occurred_at) values (${acmeKey.id}, '5125559999', 'ANSWERED', 5, 'agent7', ${new Date(T0 - 7_200_000)})`;
  await sql`insert into calls (lead_id, phone, status, secs, agent, occurred_at, dni_pool, utm_source) values
    (${bob}, '7375551000', 'ANSWERED', 30, 'c2agent2', ${new Date(T0 - 3_600_000)}, 'bolt-site', 'bing')`;
  // The first touch each lead was given (src/dni/attribution.ts): what the call log shows for its calls.
  await sql`update leads set attribution = ${sql.json({ pool: "acme-site", visitor: "va", source: "google", medium: "cpc", campaign: "spring", landing: "https://acme.example/roofs" })} where id = ${ann}`;
  await sql`update leads set attribution = ${sql.json({ pool: "bolt-site", visitor: "vb", source: "bing" })} where id = ${bob}`;
  // Pool history: three holds at once in one hour of Nov 20, and two visitors refused then.
  for (const [from, to] of [["10:10", "10:40"], ["10:20", "11:30"], ["10:30", "10:50"]]) {
    await sql`insert into dni_hold_history (pool_key, number, visitor_id, started_at, expires_at)
      values ('acme-site', '5125550101', 0, ${new Date(`2026-11-20T${from}:00Z`)}, ${new Date(`2026-11-20T${to}:00Z`)})`;
  }
  await sql`insert into dni_fallbacks (pool_key, hour, visitor, served) values
    ('acme-site', '2026-11-20T10:00:00Z', 'v1', 3), ('acme-site', '2026-11-20T10:00:00Z', 'v2', 1), ('bolt-site', '2026-11-20T10:00:00Z', 'b1', 7)`;
  await sql`insert into dni_visitors (pool_key, visitor, utm_source, utm_medium, utm_campaign, first_visit_at, last_visit_at) values
    ('acme-site', 'va', 'google', 'cpc', 'spring', ${new Date(T0 - 86_400_000)}, ${new Date(T0 - 86_400_000)}),
    ('bolt-site', 'vb', 'bolt-only-source', 'cpc', 'x', ${new Date(T0 - 86_400_000)}, ${new Date(T0 - 86_400_000)})`;
  await sql`insert into kpi_metrics (key, label) values ('acme.leads', 'Acme leads'), ('bolt.leads', 'Bolt leads')`;
  await sql`insert into kpi_points (org_id, metric_key, day, dim_key, value) values
    (1, 'acme.leads', '2026-11-20', 'google', 17), (1, 'acme.leads', '2026-11-20', 'bing', 4), (1, 'acme.leads', '2026-11-21', 'google', 9),
    (2, 'bolt.leads', '2026-11-20', '', 333)`;
  await sql`insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost) values
    (1, 'active', 'active', 12.5, 0.01, 0.001), (2, 'frozen', 'none', 777, 0.02, 0)`;
  await sql`insert into credit_ledger (org_id, kind, amount, balance)
    select 1, 'charge', -0.01, 13 - i * 0.01 from generate_series(1, 52) i`;
  await sql`insert into credit_ledger (org_id, kind, amount, balance) values (2, 'charge', -1, 777)`;
}

beforeAll(async () => {
  db = await testDatabase();
  await seed();
  app = await startApp(db.url, { BASE_URL: "https://leads.example" }, { clock });
  const users = {
    admin: await makeUser(db.sql, { role: "admin", orgId: null }),
    manager: await makeUser(db.sql, { role: "manager", orgId: 1 }),
    manager2: await makeUser(db.sql, { role: "manager", orgId: 2 }),
    agent: await makeUser(db.sql, { role: "agent", orgId: 1, id: "c2agent" }),
    agent2: await makeUser(db.sql, { role: "agent", orgId: 2, id: "c2agent2" }),
  };
  for (const [role, u] of Object.entries(users)) as[role as keyof typeof as] = await signIn(app.base, u.email, u.password);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

/** Lead links in a page: how many rows name a lead. */
const leadLinks = (body: string) => (body.match(/href="\/console\/leads\/\d+"/g) ?? []).length;

describe("Calls", () => {
  test("a manager sees the organization's calls with their attribution, 50 a page, and the next page by keyset", async () => {
    const r = await as.manager.get("/console/calls");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/html");
    const body = r.body as string;
    expect(body).toContain("<h1>Calls</h1>");
    expect(body).toContain("Ann Acme");
    expect(body).not.toContain("Bob Bolt");
    expect(body).toContain("google / cpc / spring");
    expect(body).toContain("https://acme.example/roofs");
    // Newest first: the unanswered call and the reporting key's (no lead), then 48 of the 55.
    expect(leadLinks(body)).toBe(49);
    expect(body).toContain("(512) 555-9999");
    const next = body.match(/href="(\/console\/calls\?after=\d+\.\d+)" rel="next"/);
    expect(next).not.toBeNull();
    const page2 = await as.manager.get(next![1].replace(/&amp;/g, "&"));
    expect(leadLinks(page2.body)).toBe(7);
    expect(page2.body).not.toContain("(512) 555-9999");
    expect(page2.body).not.toContain('rel="next"');
  });

  test("an agent sees only its own calls; the other organization's agent only its own", async () => {
    const mine = await as.agent.get("/console/calls?agent=agent7");
    expect(mine.status).toBe(200);
    expect(mine.body).not.toContain("NO ANSWER");
    expect(mine.body).not.toContain("(512) 555-9999");
    expect(leadLinks(mine.body)).toBe(50);
    const other = await as.agent2.get("/console/calls");
    expect(leadLinks(other.body)).toBe(1);
    expect(other.body).toContain("Bob Bolt");
    expect(other.body).not.toContain("Ann Acme");
  });

  test("a page's cursor is a time and an id: another organization's call ids position nothing", async () => {
    const [bob] = await db.sql<{ id: number }[]>`select c.id from calls c join leads l on l.id = c.lead_id where l.org_id = 2`;
    const first = await as.manager.get("/console/calls");
    // An id alone (the old form, or another organization's call) is no cursor: the first page.
    expect((await as.manager.get(`/console/calls?after=${bob.id}`)).body).toBe(first.body);
  });

  test("filters: another organization's pool or agent shows nothing of it; an admin sees every organization or one", async () => {
    const pool = await as.manager.get("/console/calls?pool=bolt-site");
    expect(leadLinks(pool.body)).toBe(0);
    expect(pool.body).not.toContain("Bob Bolt");
    const status = await as.manager.get("/console/calls?status=NO+ANSWER");
    expect(leadLinks(status.body)).toBe(1);
    const range = await as.manager.get("/console/calls?from=2026-11-23&to=2026-11-23");
    // Nov 23 in New York: the two calls of the last hours (the 55 are a day earlier).
    expect(leadLinks(range.body)).toBe(1);
    expect(range.body).toContain("(512) 555-9999");
    const all = await as.admin.get("/console/calls?source=bing");
    expect(all.body).toContain("Bob Bolt");
    const one = await as.admin.get("/console/calls?org=2");
    expect(one.body).toContain("Bob Bolt");
    expect(one.body).not.toContain("Ann Acme");
  });

  test("CSV export: the filtered set, streamed, formulas neutralised, another organization's calls absent", async () => {
    const r = await as.manager.get("/console/calls.csv");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(r.headers.get("content-disposition")).toContain("attachment");
    const lines = (r.body as string).trimEnd().split("\r\n");
    expect(lines[0]).toBe("call_id,occurred_at,org_id,lead_id,lead_name,phone,to_number,agent,agent_name,secs,status,dni_pool,utm_source,utm_medium,utm_campaign,landing,gclid");
    expect(lines.length).toBe(1 + 57);
    expect(r.body).not.toContain("Bob Bolt");
    expect(r.body).toContain(`,'=cmd|' /C calc'!A0,`);
    expect(r.body).not.toMatch(/,=cmd/);
    // An agent exports only where the organization grants it, and then only its own calls.
    expect((await as.agent.get("/console/calls.csv")).status).toBe(404);
    expect((await as.agent.get("/console/calls")).body).not.toContain("Export these calls");
    expect((await as.manager.get("/console/calls")).body).toContain("Export these calls");
    await db.sql`update orgs set agents_export = true where id = 1`;
    const agent = await as.agent.get("/console/calls.csv");
    expect((agent.body as string).trimEnd().split("\r\n").length).toBe(1 + 55);
    expect((await as.agent.get("/console/calls")).body).toContain("Export these calls");
    await db.sql`update orgs set agents_export = false where id = 1`;
  });
});

describe("Number insertion", () => {
  test("a manager sees its pools: held and free, the chart, the warning with the size that would have sufficed, the script tag", async () => {
    const r = await as.manager.get("/console/dni");
    expect(r.status).toBe(200);
    const body = r.body as string;
    expect(body).toContain("<h1>Number insertion</h1>");
    expect(body).toContain("acme-site");
    expect(body).not.toContain("bolt-site");
    expect(body).toContain("<svg");
    expect(body).toContain("A pool of 5 numbers would have sufficed</strong> (it has 2 now: 3 more)");
    expect(body).toContain("<tr><th scope=\"row\">2026-11-20</th><td class=\"num\">3</td><td class=\"num\">4</td></tr>");
    expect(body).toContain("&lt;script src=&quot;https://leads.example/dni.js&quot; data-pool=&quot;acme-site&quot; async&gt;&lt;/script&gt;");
    // The report: its own pool's source, never the other organization's.
    expect(body).toContain("google");
    expect(body).not.toContain("bolt-only-source");
  });

  test("the report's range and pool; another organization's pool key reports nothing of it", async () => {
    const none = await as.manager.get("/console/dni?from=2026-11-01&to=2026-11-10");
    expect(none.body).toContain("No visitors, page views, forms or calls in this range.");
    const foreign = await as.manager.get("/console/dni?pool=bolt-site");
    expect(foreign.body).not.toContain("bolt-only-source");
    const admin = await as.admin.get("/console/dni");
    expect(admin.body).toContain("bolt-site");
    expect(admin.body).toContain("bolt-only-source");
    expect((await as.admin.get("/console/dni?org=1")).body).not.toContain("bolt-only-source");
  });

  test("agents get the 404 page", async () => {
    expect((await as.agent.get("/console/dni")).status).toBe(404);
  });
});

describe("KPIs", () => {
  test("a manager sees its metrics by day, every dimension summed or one", async () => {
    const r = await as.manager.get("/console/kpi?from=2026-11-19&to=2026-11-22");
    expect(r.status).toBe(200);
    expect(r.body).toContain("Acme leads");
    expect(r.body).not.toContain("Bolt leads");
    expect(r.body).toContain("<tr><th scope=\"row\">2026-11-20</th><td class=\"num\">21</td>");
    expect(r.body).toContain("<tr><th scope=\"row\">2026-11-19</th><td class=\"num\">–</td>");
    const bing = await as.manager.get("/console/kpi?metric=acme.leads&dim=bing&from=2026-11-19&to=2026-11-22");
    expect(bing.body).toContain("<tr><th scope=\"row\">2026-11-20</th><td class=\"num\">4</td>");
    // Another organization's metric by name: not offered, not shown.
    const foreign = await as.manager.get("/console/kpi?metric=bolt.leads&from=2026-11-19&to=2026-11-22");
    expect(foreign.body).not.toContain("333");
  });

  test("an admin picks the organization; the other organization's manager sees only its own", async () => {
    const bolt = await as.admin.get("/console/kpi?org=2&from=2026-11-19&to=2026-11-22");
    expect(bolt.body).toContain("Bolt leads");
    expect(bolt.body).toContain("<tr><th scope=\"row\">2026-11-20</th><td class=\"num\">333</td>");
    const own = await as.manager2.get("/console/kpi?org=1&metric=acme.leads&from=2026-11-19&to=2026-11-22");
    expect(own.body).toContain("Bolt leads");
    expect(own.body).not.toContain("Acme leads");
  });

  test("agents get the 404 page", async () => {
    expect((await as.agent.get("/console/kpi")).status).toBe(404);
  });
});

describe("Billing", () => {
  test("a manager sees its credits and ledger, 50 a page", async () => {
    const r = await as.manager.get("/console/billing");
    expect(r.status).toBe(200);
    expect(r.body).toContain("12.50");
    expect(r.body).not.toContain("777");
    const next = (r.body as string).match(/href="(\/console\/billing\?before=\d+)" rel="next"/);
    expect(next).not.toBeNull();
    const page2 = await as.manager.get(next![1]);
    expect((page2.body as string).match(/<td>charge<\/td>/g)?.length).toBe(2);
    expect(page2.body).not.toContain("777");
  });

  test("an admin sees every organization, or one", async () => {
    expect((await as.admin.get("/console/billing")).body).toContain("777");
    expect((await as.admin.get("/console/billing?org=1")).body).not.toContain("777");
    expect((await as.manager2.get("/console/billing")).body).toContain("777");
  });

  test("agents get the 404 page", async () => {
    expect((await as.agent.get("/console/billing")).status).toBe(404);
  });
});

test("not signed in: every page sends to the sign-in page", async () => {
  for (const path of ["/console/calls", "/console/calls.csv", "/console/dni", "/console/kpi", "/console/billing"]) {
    const r = await fetch(app.base + path, { redirect: "manual" });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toStartWith("/console/login?next=");
  }
});
