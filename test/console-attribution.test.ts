// The attribution report (/console/reports/attribution and its CSV) over HTTP with a session: per
// first touch, visitors, calls, answered calls, leads and appointments booked in the period, each
// organization's own (pools, calls, leads and calendars of another organization never counted).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { poolNumbers, provisionPools } from "./harness/dni";
import { makeKey, seedWorld } from "./harness/factory";

setDefaultTimeout(60_000);
let db: TestDatabase;
let app: TestApp;
const clock = new ManualClock(Date.UTC(2026, 10, 23, 17));
const as: Record<"admin" | "manager" | "manager2", ConsoleClient> = {} as never;

const touch = (source: string, campaign: string) => ({ source, medium: "cpc", campaign, landing: "https://acme.example/roof" });

/** The table's rows as [source, medium, campaign, landing, visitors, calls, answered, leads, appointments, value]. */
const rows = (body: string) =>
  [...((/<table class="data" id="attribution">[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(body)?.[1] ?? "").matchAll(/<tr>([\s\S]*?)<\/tr>/g))].map((m) =>
    [...m[1].matchAll(/<t[hd][^>]*>(?:<span class="muted">)?([^<]*)/g)].map((c) => c[1]),
  );

beforeAll(async () => {
  db = await testDatabase();
  const sql = db.sql;
  await seedWorld(sql);
  await provisionPools(sql, [{ key: "acme-site", numbers: poolNumbers(2) }, { key: "bolt-site", org_id: 2, numbers: poolNumbers(2, 10) }]);
  await sql`update orgs set timezone = 'America/New_York'`;
  const visitor = (pool: string, source: string, campaign: string, at: string) => sql`
    insert into dni_visitors (pool_key, visitor, utm_source, utm_medium, utm_campaign, landing, first_visit_at, last_visit_at)
    values (${pool}, ${randomBytes(8).toString("hex")}, ${source}, 'cpc', ${campaign}, 'https://acme.example/roof', ${at}, ${at})`;
  await visitor("acme-site", "google", "spring", "2026-11-20T15:00:00Z");
  await visitor("acme-site", "google", "spring", "2026-11-21T15:00:00Z");
  await visitor("acme-site", "bing", "fall", "2026-11-21T15:00:00Z");
  await visitor("acme-site", "google", "spring", "2026-09-01T15:00:00Z"); // before the period
  await visitor("bolt-site", "google", "spring", "2026-11-21T15:00:00Z"); // another organization's
  const [ann] = await sql<{ id: number }[]>`insert into leads (list_id, phone, source, attribution, created_at)
    values (101, '5125551000', 'web', ${sql.json(touch("google", "spring"))}, '2026-11-21T16:00:00Z') returning id`;
  const [bob] = await sql<{ id: number }[]>`insert into leads (list_id, phone, source, attribution, created_at)
    values (201, '7375551000', 'web', ${sql.json(touch("google", "spring"))}, '2026-11-21T16:00:00Z') returning id`;
  await sql`insert into leads (list_id, phone, created_at) values (101, '5125551001', '2026-11-21T16:00:00Z')`; // no touch
  await sql`insert into calls (lead_id, phone, status, secs, agent, occurred_at) values
    (${ann.id}, '5125551000', 'ANSWERED', 60, 'agent7', '2026-11-21T17:00:00Z'),
    (${ann.id}, '5125551000', 'NO ANSWER', 0, 'agent7', '2026-11-22T17:00:00Z'),
    (${bob.id}, '7375551000', 'ANSWERED', 60, 'agent9', '2026-11-21T17:00:00Z')`;
  await sql`insert into calls (phone, status, secs, agent, occurred_at, attribution, key_id)
    values ('5125559999', 'ANSWERED', 30, 'agent7', '2026-11-22T18:00:00Z', ${sql.json(touch("bing", "fall"))},
            ${(await makeKey(sql, { scopes: ["calls:write"], org: 1 })).id})`;
  await sql`insert into calendars (id, org_id, name, timezone, capacity) values (1, 1, 'Acme', 'America/New_York', 10), (2, 2, 'Bolt', 'America/New_York', 10)`;
  for (const [cal, lead] of [[1, ann.id], [2, bob.id]]) {
    await sql`insert into appointments (calendar_id, link_slug, slot_epoch, name, phone, status, token_selector, token_hash, created_at, updated_at, lead_id)
      values (${cal}, 'link', ${Date.UTC(2026, 10, 25) / 1000}, 'X', '5125550000', 'pending', ${randomBytes(32)}, ${randomBytes(32)}, '2026-11-22T12:00:00Z', '2026-11-22T12:00:00Z', ${lead})`;
  }
  app = await startApp(db.url, { BASE_URL: "https://leads.example" }, { clock });
  const users = {
    admin: await makeUser(sql, { role: "admin", orgId: null }),
    manager: await makeUser(sql, { role: "manager", orgId: 1 }),
    manager2: await makeUser(sql, { role: "manager", orgId: 2 }),
  };
  for (const [role, u] of Object.entries(users)) as[role as keyof typeof as] = await signIn(app.base, u.email, u.password);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("the attribution report", () => {
  test("per first touch over the default 30 days: visitors, calls, answered, leads, appointments", async () => {
    const r = await as.manager.get("/console/reports/attribution");
    expect(r.status).toBe(200);
    expect(rows(r.body as string)).toEqual([
      ["google", "cpc", "spring", "https://acme.example/roof", "2", "2", "1", "1", "1", "0.00"],
      ["bing", "cpc", "fall", "https://acme.example/roof", "1", "1", "1", "0", "0", "0.00"],
    ]);
  });

  test("a period; presets", async () => {
    const day = rows((await as.manager.get("/console/reports/attribution?from=2026-11-22&to=2026-11-22")).body as string);
    expect(day).toEqual([
      ["bing", "cpc", "fall", "https://acme.example/roof", "0", "1", "1", "0", "0", "0.00"],
      ["google", "cpc", "spring", "https://acme.example/roof", "0", "1", "0", "0", "1", "0.00"],
    ]);
    const today = (await as.manager.get("/console/reports/attribution?preset=today")).body as string;
    expect(today).toContain("No visitors, calls, leads or appointments");
    const bad = await as.manager.get("/console/reports/attribution?from=nonsense&to=2026-13-45&preset=x");
    expect(bad.status).toBe(200);
  });

  test("confined to the organization: a manager whatever `org` says, an admin picks one", async () => {
    const two = rows((await as.manager2.get("/console/reports/attribution")).body as string);
    expect(two).toEqual([["google", "cpc", "spring", "https://acme.example/roof", "1", "1", "1", "1", "1", "0.00"]]);
    expect(rows((await as.manager.get("/console/reports/attribution?org=2")).body as string)[0][4]).toBe("2");
    expect((await as.admin.get("/console/reports/attribution")).body as string).toContain("Pick an organization");
    expect(rows((await as.admin.get("/console/reports/attribution?org=2")).body as string)).toEqual(two);
  });

  test("CSV", async () => {
    const r = await as.manager.get("/console/reports/attribution.csv?from=2026-11-01&to=2026-11-23");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-disposition")).toBe('attachment; filename="attribution-2026-11-01-2026-11-23.csv"');
    expect((r.body as string).trim().split(/\r?\n/)).toEqual([
      "source,medium,campaign,landing,visitors,calls,answered,leads,appointments,value,currency",
      "google,cpc,spring,https://acme.example/roof,2,2,1,1,1,0.00,",
      "bing,cpc,fall,https://acme.example/roof,1,1,1,0,0,0.00,",
    ]);
  });
});

describe("value and the CSV", () => {
  const feed = (id: string, org: number, actions: Record<string, unknown>[]) =>
    db.sql`insert into conversion_feeds (id, org_id, secret_hash, actions) values (${id}, ${org}, ${Buffer.alloc(32)}, ${db.sql.json(actions as never)})`;
  const PERIOD = "from=2026-11-01&to=2026-11-23";

  test("per first touch, the conversions feeds' values of its calls, leads and appointments, in the organization's currency", async () => {
    const usd = (name: string, on: string, value: number, min_secs = 0) => ({ name, on, min_secs, value, currency: "USD" });
    // A call of 60 s counts for both call actions, one of 30 s for the short one only; the lead
    // action named in two feeds counts once; organization 2's feed never reaches organization 1.
    await feed("acme-ads", 1, [usd("Call", "call", 100, 60), usd("Short call", "call", 10, 30), usd("Lead", "lead", 25), usd("Booked", "booking", 50)]);
    await feed("acme-ads-2", 1, [usd("Lead", "lead", 25)]);
    await feed("bolt-ads", 2, [{ name: "Lead", on: "lead", min_secs: 0, value: 1000, currency: "EUR" }]);
    const body = (await as.manager.get(`/console/reports/attribution?${PERIOD}`)).body as string;
    expect(body).toContain('<th scope="col" class="num">Value (USD)</th>');
    expect(rows(body)).toEqual([
      ["google", "cpc", "spring", "https://acme.example/roof", "2", "2", "1", "1", "1", "$185.00"],
      ["bing", "cpc", "fall", "https://acme.example/roof", "1", "1", "1", "0", "0", "$10.00"],
    ]);
    expect(rows((await as.manager2.get(`/console/reports/attribution?${PERIOD}`)).body as string)[0][9]).toBe("€1,000.00");
    expect(rows((await as.manager.get(`/console/reports/attribution?${PERIOD}&org=2`)).body as string)[0][9]).toBe("$185.00");
  });

  test("the CSV's rows are the page's table for the same query", async () => {
    for (const q of [PERIOD, "from=2026-11-22&to=2026-11-22", "preset=7"]) {
      const page = rows((await as.manager.get(`/console/reports/attribution?${q}`)).body as string);
      const csv = ((await as.manager.get(`/console/reports/attribution.csv?${q}`)).body as string).trim().split("\r\n").slice(1).map((l) => l.split(","));
      expect(csv.map((c) => c.slice(0, 9))).toEqual(page.map((r) => r.slice(0, 9)));
      // The value as a number with two decimals and its currency in a column of its own.
      expect(csv.map((c) => `$${Number(c[9]).toLocaleString("en-US", { minimumFractionDigits: 2 })} ${c[10]}`)).toEqual(page.map((r) => `${r[9]} USD`));
    }
  });

  test("a source named like a formula comes out as text", async () => {
    await db.sql`insert into leads (list_id, phone, source, attribution, created_at)
      values (101, '5125551077', 'web', ${db.sql.json(touch("=HYPERLINK(\"x\")", "-1+1"))}, '2026-11-21T16:00:00Z')`;
    const csv = (await as.manager.get(`/console/reports/attribution.csv?${PERIOD}`)).body as string;
    expect(csv).toContain(`"'=HYPERLINK(""x"")",cpc,'-1+1,https://acme.example/roof,0,0,0,1,0,25.00,USD`);
  });

  test("several currencies: plain numbers with two decimals", async () => {
    await feed("acme-ads-eur", 1, [{ name: "Lead EUR", on: "lead", min_secs: 0, value: 1.5, currency: "EUR" }]);
    const body = (await as.manager.get(`/console/reports/attribution?${PERIOD}`)).body as string;
    expect(body).toContain('<th scope="col" class="num">Value</th>');
    expect(rows(body)[0][9]).toBe("186.50");
    expect(((await as.manager.get(`/console/reports/attribution.csv?${PERIOD}`)).body as string).split("\r\n")[1]).toBe("google,cpc,spring,https://acme.example/roof,2,2,1,1,1,186.50,");
  });
});
