// The Today page (/console/today) and its CSV, over HTTP on the served app with a session as a
// browser sends it: managers land on it from /console, agents keep the inbox; each figure beside the
// day before and the same weekday a week before; a manager sees only their organization's, an admin
// picks one. The figures themselves are proven in reports-today.test.ts; here, what the page shows.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { ManualClock } from "./harness/clock";
import { makeUser, signIn, type ConsoleClient } from "./harness/console";
import { testDatabase, type TestDatabase } from "./harness/db";
import { startApp, type TestApp } from "./harness/app";
import { seedWorld } from "./harness/factory";
import { talkTime } from "../src/console/calls";

setDefaultTimeout(60_000);
let db: TestDatabase;
let app: TestApp;
// 2026-11-23 12:00 in New York (17:00 UTC): a Monday.
const clock = new ManualClock(Date.UTC(2026, 10, 23, 17));
const as: Record<"admin" | "manager" | "manager2" | "agent", ConsoleClient> = {} as never;

/** The cells of the figure's row in the day's table: the day, the day before, a week before. */
function row(body: string, figure: string): string[] {
  const table = /<table class="data" id="today-figures">([\s\S]*?)<\/table>/.exec(body);
  if (!table) throw new Error("no figures table on the page");
  for (const tr of table[1].split("<tr")) {
    const th = /<th scope="row">(?:<span class="muted">of which <\/span>)?([^<]*)<\/th>/.exec(tr);
    if (th && th[1] === figure) return [...tr.matchAll(/<td class="num">([^<]*)<\/td>/g)].map((m) => m[1]);
  }
  throw new Error(`no row ${figure}`);
}

async function lead(phone: string, source: string, at: string, first = ""): Promise<number> {
  const [r] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, source, created_at) values (101, ${phone}, ${first}, ${source}, ${at}) returning id`;
  return r.id;
}

beforeAll(async () => {
  db = await testDatabase();
  const sql = db.sql;
  await seedWorld(sql);
  await sql`update orgs set timezone = 'America/New_York'`;
  // Organization 1: two leads from google today, one yesterday, one from bing a week before.
  const ann = await lead("5125551000", "google", "2026-11-23T15:00:00Z", "Ann");
  await lead("5125551001", "google", "2026-11-23T16:00:00Z");
  const al = await lead("5125551002", "google", "2026-11-22T16:00:00Z");
  await lead("5125551003", "bing", "2026-11-16T16:00:00Z");
  await sql`insert into calls (lead_id, phone, status, secs, agent, occurred_at) values
    (${ann}, '5125551000', 'ANSWERED', 3700, 'agentx', '2026-11-23T15:30:00Z'),
    (${ann}, '5125551000', 'NO ANSWER', 0, 'agentx', '2026-11-23T15:40:00Z'),
    (${al}, '5125551002', 'ANSWERED', 65, 'agentx', '2026-11-22T16:30:00Z')`;
  // Organization 2: 1,234 leads today from "secret-source".
  await sql`insert into leads (list_id, phone, source, created_at)
    select 201, '737555' || lpad(i::text, 4, '0'), 'secret-source', timestamptz '2026-11-23T15:00:00Z' from generate_series(1, 1234) i`;

  app = await startApp(db.url, { BASE_URL: "https://leads.example" }, { clock });
  const users = {
    admin: await makeUser(db.sql, { role: "admin", orgId: null }),
    manager: await makeUser(db.sql, { role: "manager", orgId: 1 }),
    manager2: await makeUser(db.sql, { role: "manager", orgId: 2 }),
    agent: await makeUser(db.sql, { role: "agent", orgId: 1, id: "agentx", name: "Alex Agent" }),
  };
  for (const [role, u] of Object.entries(users)) as[role as keyof typeof as] = await signIn(app.base, u.email, u.password);
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await db?.drop();
});

describe("the Today page", () => {
  test("/console lands managers and admins on Today, agents on the inbox", async () => {
    for (const [who, home] of [["manager", "/console/today"], ["admin", "/console/today"], ["agent", "/console/inbox"]] as const) {
      const r = await as[who].get("/console");
      expect(r.status).toBe(303);
      expect(r.headers.get("location")).toBe(home);
    }
    expect((await as.agent.get("/console/today")).status).toBe(404);
    expect((await as.agent.get("/console/today.csv")).status).toBe(404);
    const nav = (await as.agent.get("/console/inbox")).body as string;
    expect(nav).not.toContain('href="/console/today"');
  });

  test("each figure beside the day before and the same weekday a week before, numbers formatted", async () => {
    const r = await as.manager.get("/console/today");
    expect(r.status).toBe(200);
    const body = r.body as string;
    expect(body).toContain('<th scope="col" class="num">2026-11-23<br><span class="muted">the day</span></th>');
    expect(row(body, "New leads")).toEqual(["2", "1", "1"]);
    expect(row(body, "google")).toEqual(["2", "1", "0"]);
    expect(row(body, "bing")).toEqual(["0", "0", "1"]);
    expect(row(body, "Calls answered")).toEqual(["1", "1", "0"]);
    expect(row(body, "Calls missed")).toEqual(["1", "0", "0"]);
    expect(row(body, "Talk time")).toEqual(["1:01:40", "1:05", "0:00"]);
    // The chart is drawn by the server, its numbers in a table beside it; the people table.
    expect(body).toContain('<figure class="chart">');
    // Its summary names each series' highest day; three days a week apart have no total.
    expect(body).toContain("New leads: highest 2 on Nov 23.");
    expect(body).not.toMatch(/New leads: [^<]*, total/);
    expect(body).toMatch(/<table class="data" id="today-agents">[\s\S]*Alex Agent[\s\S]*1:01:40/);
    expect(body).toContain('href="/console/today.csv?day=2026-11-23"');
    // Another organization's figures are nowhere on the page.
    expect(body).not.toContain("secret-source");
    expect(body).not.toContain("1,234");
  });

  test("a chosen day; a day that is not one reads as today", async () => {
    const body = (await as.manager.get("/console/today?day=2026-11-22")).body as string;
    expect(row(body, "New leads")).toEqual(["1", "0", "0"]);
    expect(body).toContain('2026-11-22<br><span class="muted">the day</span>');
    for (const bad of ["2026-02-30", "yesterday", "2026-11-23'--", "x".repeat(5000)]) {
      const r = await as.manager.get(`/console/today?day=${encodeURIComponent(bad)}`);
      expect(r.status).toBe(200);
      expect(r.body as string).toContain('2026-11-23<br><span class="muted">the day</span>');
    }
  });

  test("the organization's today refreshes its figures (as polls, by today.js); another day does not", async () => {
    const live = (await as.manager.get("/console/today")).body as string;
    expect(live).toContain(`<div id="today-refresh" hidden hx-get="/console/today?day=2026-11-23" hx-trigger="today:refresh" hx-swap="none" hx-select-oob="#today-live" hx-headers='{"x-leadline-poll": "1"}'></div>`);
    expect(live).toMatch(/<script src="\/console\/assets\/today\.js\?v=[0-9a-f]{12}"/);
    expect(live).toContain('<p class="muted" id="today-as-of">As of 12:00 PM; the figures refresh every minute.</p>');
    // The same day named: still today.
    expect((await as.manager.get("/console/today?day=2026-11-23")).body as string).toContain('id="today-refresh"');
    const past = (await as.manager.get("/console/today?day=2026-11-22")).body as string;
    for (const part of ['id="today-refresh"', 'id="today-as-of"', "today.js", "htmx.min.js"]) expect(past).not.toContain(part);
    // An admin's refresher asks for the organization they picked.
    expect((await as.admin.get("/console/today?org=2")).body as string).toContain('hx-get="/console/today?day=2026-11-23&amp;org=2"');
  });

  test("a manager's organization whatever `org` says; an admin picks one", async () => {
    const other = (await as.manager.get("/console/today?org=2")).body as string;
    expect(other).not.toContain("secret-source");
    expect(row(other, "New leads")[0]).toBe("2");
    const own2 = (await as.manager2.get("/console/today")).body as string;
    expect(row(own2, "New leads")[0]).toBe("1,234");
    expect(row(own2, "secret-source")[0]).toBe("1,234");
    const pick = (await as.admin.get("/console/today")).body as string;
    expect(pick).toContain("Pick an organization");
    expect(pick).not.toContain("today-figures");
    const admin2 = (await as.admin.get("/console/today?org=2")).body as string;
    expect(row(admin2, "New leads")[0]).toBe("1,234");
    expect((await as.admin.get("/console/today?org=999")).status).toBe(404);
    expect((await as.admin.get("/console/today?org=abc")).body as string).toContain("Pick an organization");
  });

  test("CSV: every figure of the page, the organization's own", async () => {
    const r = await as.manager.get("/console/today.csv?day=2026-11-23");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/csv");
    expect(r.headers.get("content-disposition")).toBe('attachment; filename="today-2026-11-23.csv"');
    const lines = (r.body as string).trim().split(/\r?\n/);
    expect(lines[0]).toBe("day,section,item,figure,value");
    expect(lines).toContain("2026-11-23,leads,google,new,2");
    expect(lines).toContain("2026-11-22,calls,,talk_secs,65");
    expect(lines).toContain("2026-11-23,agent,agentx,talk_secs,3700");
    expect(r.body as string).not.toContain("secret-source");
    expect((await as.manager.get("/console/today.csv?org=2")).body as string).not.toContain("secret-source");
    expect((await as.admin.get("/console/today.csv")).status).toBe(404);
    expect((await as.admin.get("/console/today.csv?org=2")).body as string).toContain("secret-source,new,1234");
  });

  test("CSV: each cell of the page's table is the CSV's figure for that day; a formula-like source comes out as text", async () => {
    await lead("5125551009", '=HYPERLINK("x")', "2026-11-23T16:30:00Z");
    const body = (await as.manager.get("/console/today?day=2026-11-23")).body as string;
    const csv = ((await as.manager.get("/console/today.csv?day=2026-11-23")).body as string).trim().split("\r\n");
    expect(csv).toContain(`2026-11-23,leads,"'=HYPERLINK(""x"")",new,1`);
    const value = new Map(
      csv.slice(1).map((l) => {
        const cells = [...l.matchAll(/(?:^|,)(?:"((?:[^"]|"")*)"|([^,]*))/g)].map((m) => (m[1] !== undefined ? m[1].replaceAll('""', '"') : m[2]));
        return [cells.slice(0, 4).join("|").replace("|'=", "|="), cells[4]];
      }),
    );
    const count = (v: string) => Number(v).toLocaleString("en-US");
    const secs = (v: string) => talkTime(Math.round(Number(v)));
    const money = (v: string) => `$${Number(v).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 4 })}`;
    const figures: [string, string, (v: string) => string][] = [
      ["New leads", "leads||new", count],
      ["google", "leads|google|new", count],
      ["bing", "leads|bing|new", count],
      ['=HYPERLINK(&quot;x&quot;)', 'leads|=HYPERLINK("x")|new', count],
      ["Calls answered", "calls||answered", count],
      ["Calls missed", "calls||missed", count],
      ["Talk time", "calls||talk_secs", secs],
      ["First responses", "first_response||responses", count],
      ["Median time to first response", "first_response||median_secs", secs],
      ["90th percentile time to first response", "first_response||p90_secs", secs],
      ["Still waiting for a first response", "first_response||waiting", count],
      ["Appointments booked", "appointments||booked", count],
      ["Appointments confirmed", "appointments||confirmed", count],
      ["No-shows", "appointments||no_show", count],
      ["Messages sent", "messages||sent", count],
      ["SMS", "messages|sms|sent", count],
      ["Email", "messages|email|sent", count],
      ["Messages&#39; cost", "messages||cost", money],
      ["Inbound messages", "messages||inbound", count],
      ["Conversations handled", "conversations||handled", count],
    ];
    // Every row of the page's table is one of these.
    const names = [...(/<table class="data" id="today-figures">([\s\S]*?)<\/table>/.exec(body)?.[1] ?? "").matchAll(/<th scope="row">(?:<span class="muted">of which <\/span>)?([^<]*)<\/th>/g)].map((m) => m[1]);
    expect(names.sort()).toEqual(figures.map((f) => f[0]).sort());
    for (const [name, key, show] of figures) {
      const expected = ["2026-11-23", "2026-11-22", "2026-11-16"].map((day) => {
        const v = value.get(`${day}|${key}`);
        return v === undefined || v === "" ? (key.startsWith("leads|") && key !== "leads||new" ? "0" : "–") : show(v);
      });
      expect([name, ...row(body, name)]).toEqual([name, ...expected]);
    }
  });
});

describe("the day before's percentiles, kept in memory between pages", () => {
  test("a late answer to a lead of the day before moves its median on the next page", async () => {
    const before = (await as.manager.get("/console/today")).body as string;
    expect(row(before, "Median time to first response")[1]).toBe("30:00");
    expect(row(before, "First responses")[1]).toBe("1");
    // Recorded now, about the day before: a lead of the evening and its answered call ten minutes on.
    const late = await lead("5125551009", "google", "2026-11-22T23:00:00Z");
    await db.sql`insert into calls (lead_id, phone, status, secs, agent, occurred_at)
      values (${late}, '5125551009', 'ANSWERED', 40, 'agentx', '2026-11-22T23:10:00Z')`;
    const after = (await as.manager.get("/console/today")).body as string;
    expect(row(after, "First responses")[1]).toBe("2");
    // Nearest rank of 10:00 and 30:00: the median is the first, the 90th percentile the second.
    expect(row(after, "Median time to first response")[1]).toBe("10:00");
    expect(row(after, "90th percentile time to first response")[1]).toBe("30:00");
  });
});
