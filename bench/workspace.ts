// The agents' workspace at scale (issue 29, docs/workspace.md), by hand (not part of `make bench`):
//
//   node_modules/.bin/bun bench/workspace.ts
//
// 1. Inbox reads: one organization with LEADS leads (default 1,000,000), CONVERSATIONS
//    conversations (200,000), OPEN of them open (20,000), MESSAGES messages (5,000,000) and 50
//    agents. Each read of the workspace (every view's first and a later page, the filters, the
//    navigation's counts, My work, an admin's view) is timed RUNS times on a connection set up as
//    the service's (src/db/client.ts: generic plans), client round trip, and its plan printed.
//    The console's page target is 99% within 50 ms of server time; these reads are a part of it.
//    Then (part `pages`) the console's pages themselves on that database, served by an instance:
//    the inbox's views, a later page, the reading pane, the lead's page and search, each loaded
//    RUNS times one after another, then all by CONCURRENT agents at once; server time from the
//    instance's histogram (its 50 ms bound), the share within it per page.
// 2. The live feed's fan-out: two served instances (A, B) in processes of their own, STREAMS
//    of the inbox's event streams (GET /console/inbox/stream, the real route: through the
//    pipeline with a console session, its heartbeat and session check) open on B, and inbound
//    texts posted to A's (then B's) Twilio callback, one every 100 ms: the time from the post to
//    each stream's event, p50/p99/max over every stream and text; B's resident memory per idle
//    stream (after a full GC, open minus before), and after every stream is closed.
//
// Sizes: LEADS, CONVERSATIONS, OPEN, MESSAGES, STREAMS, TEXTS, RUNS, CONCURRENT (environment); PARTS
// (reads, pages, fanout: default all). The table goes to stdout and bench/results/workspace.md;
// RESULTS.md's "Workspace" section is copied from it.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import type { Actor } from "../src/auth/actor";
import type { Sql } from "../src/db/client";
import { createSession } from "../src/console/sessions";
import { migrate } from "../src/db/migrate";
import { changesSince } from "../src/feed/queries";
import { inboxPage, viewCounts } from "../src/workspace/inbox";
import type { InboxFilter } from "../src/workspace/model";
import { myWork } from "../src/workspace/my-work";
import { signCallback } from "../test/harness/fake-twilio";
import { consoleServerTimes } from "./lib";
import { freePort, startCluster } from "./pg";

const n = (name: string, dflt: number) => (Number(process.env[name]) > 0 ? Number(process.env[name]) : dflt);
const LEADS = n("LEADS", 1_000_000);
const CONVERSATIONS = n("CONVERSATIONS", 200_000);
const OPEN = n("OPEN", 20_000);
const MESSAGES = n("MESSAGES", 5_000_000);
const STREAMS = n("STREAMS", 500);
const TEXTS = n("TEXTS", 40);
const RUNS = n("RUNS", 200);
const CONCURRENT = n("CONCURRENT", 4);
const AGENTS = 50;
const TOKEN = "bench-token";
const BASE_URL = "https://bench.example";
const FROM = "+15125550100";

/** The service's client settings (src/db/client.ts connect), with a statement log for the plans. */
function client(url: string, captured?: { query: string; params: unknown[] }[]): Sql {
  return postgres(url, {
    max: 2,
    onnotice: () => {},
    connection: { TimeZone: "UTC", plan_cache_mode: "force_generic_plan" },
    types: { bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) } },
    ...(captured ? { debug: (_c: number, query: string, params: unknown[]) => captured.push({ query, params }) } : {}),
  }) as unknown as Sql;
}

const lines: string[] = [];
const say = (s = "") => {
  console.log(s);
  lines.push(s);
};
const pctl = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};
const ms = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(2));

if (process.argv[2] === "--instance") await instance(process.argv[3]!, Number(process.argv[4]));
// Bun's fetch keeps at most 256 connections open at once unless told more when it starts: the
// streams need one each, so the bench runs itself again with room for them.
if (!process.env.BUN_CONFIG_MAX_HTTP_REQUESTS) {
  const self = Bun.spawn([process.execPath, import.meta.path], { env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: String(STREAMS + 64) }, stdout: "inherit", stderr: "inherit" });
  process.exit(await self.exited);
}
const PARTS = (process.env.PARTS ?? "reads,pages,fanout").split(",");

const cluster = await startCluster();
try {
  const commit = (() => {
    try {
      return readFileSync(join(import.meta.dir, "..", ".git", "HEAD"), "utf8").trim();
    } catch {
      return "";
    }
  })();
  say(`# Workspace (bench/workspace.ts), ${new Date().toISOString().slice(0, 16)}Z`);
  say();
  if (PARTS.includes("reads") || PARTS.includes("pages")) await inboxReads(cluster.url);
  if (PARTS.includes("fanout")) await fanOut(cluster.url);
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  writeFileSync(join(import.meta.dir, "results", "workspace.md"), lines.join("\n") + "\n");
  void commit;
} finally {
  cluster.stop();
}
process.exit(0);

async function database(adminUrl: string, name: string): Promise<string> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

// ------------------------------------------------------------------------------- inbox reads

async function inboxReads(adminUrl: string): Promise<void> {
  const url = await database(adminUrl, "workspace_reads");
  const captured: { query: string; params: unknown[] }[] = [];
  const sql = client(url, captured);
  await migrate(sql);
  const t0 = performance.now();
  await sql`insert into orgs (id, name, timezone, quiet_start, quiet_end) values (1, 'Acme', 'America/Chicago', '21:00', '08:00'), (2, 'Bolt', 'America/New_York', null, null)`;
  await sql`insert into campaigns (id, org_id) values ('A', 1), ('B', 2)`;
  await sql`insert into lists (id, campaign_id) values (1, 'A'), (2, 'B')`;
  await sql`insert into users (id, org_id, name, email, role)
            select 'agent' || g, 1, 'Agent ' || g, 'agent' || g || '@example.com', 'agent' from generate_series(1, ${AGENTS}) g`;
  await sql`insert into users (id, org_id, name, email, role) values ('root', null, 'Root', 'root@example.com', 'admin')`;
  // Leads of Acme (and a tenth as many of Bolt's), names from a few hundred, states from five.
  await sql`
    insert into leads (list_id, phone, first_name, last_name, state, created_at)
    select case when g <= ${LEADS} then 1 else 2 end, (2000000000 + g)::text, 'First' || (g % 500), 'Last' || (g % 997),
           (array['TX', 'CA', 'NY', 'IL', 'HI'])[1 + g % 5], timestamptz '2025-01-01' + (g::float / ${LEADS}) * interval '365 days'
    from generate_series(1, ${LEADS + Math.floor(LEADS / 10)}) g`;
  say(`seeded ${LEADS.toLocaleString("en-US")} leads (+${Math.floor(LEADS / 10).toLocaleString("en-US")} of another organization) in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  // Messages of the first CONVERSATIONS leads, written without the conversation trigger (the
  // conversations are written below as the trigger would have left them, in one statement).
  const t1 = performance.now();
  await sql`alter table messages disable trigger messages_conversation`;
  await sql`alter table conversations disable trigger conversations_feed`;
  const BATCH = 500_000;
  for (let from = 1; from <= MESSAGES; from += BATCH) {
    const to = Math.min(MESSAGES, from + BATCH - 1);
    await sql`
      insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, body, status, created_at)
      select 1 + (g % ${CONVERSATIONS}), 1, (array['sms', 'sms', 'email', 'note'])[1 + (g / ${CONVERSATIONS}) % 4],
             case when (g / ${CONVERSATIONS}) % 2 = 0 then 'in' else 'out' end, 'user', 'agent1',
             'Message ' || g || ', a sentence or two of text as an SMS would have.', 'delivered',
             timestamptz '2025-01-01' + (g::float / ${MESSAGES}) * interval '365 days'
      from generate_series(${from}::int, ${to}::int) g`;
  }
  // Conversations: OPEN open (15% unassigned, the rest over the agents), 5% snoozed, the rest
  // closed; activity spread over the year, independent of status.
  await sql`
    insert into conversations (lead_id, org_id, status, snoozed_until, assignee, last_activity_at, last_message_id,
                               last_channel, last_direction, snippet, waiting_since, created_at, updated_at)
    select g, 1, s.status, case when s.status = 'snoozed' then timestamptz '2026-02-01' end,
           case when s.status = 'closed' or g % 7 = 0 then null else 'agent' || (1 + g % ${AGENTS}) end,
           t.at, g, (array['sms', 'sms', 'email', 'note'])[1 + g % 4], case when g % 2 = 0 then 'in' else 'out' end,
           'Message ' || g || ', a sentence or two', case when g % 2 = 0 then t.at end, t.at, t.at
    from generate_series(1, ${CONVERSATIONS}) g
    cross join lateral (select case when g % ${Math.round(CONVERSATIONS / OPEN)} = 0 then 'open'
                                    when g % 20 = 1 then 'snoozed' else 'closed' end as status) s
    cross join lateral (select timestamptz '2025-01-01' + ((g * 7919) % ${CONVERSATIONS})::float / ${CONVERSATIONS} * interval '365 days' as at) t`;
  await sql`alter table messages enable trigger messages_conversation`;
  await sql`alter table conversations enable trigger conversations_feed`;
  await sql`insert into lead_channels (lead_id, channel, address, consent) select g, 'sms', (2000000000 + g)::text, 'out' from generate_series(1, ${CONVERSATIONS}::int, 50) g`;
  // Due callbacks: ten per agent, on conversations assigned to others.
  await sql`
    insert into callbacks (conversation_id, lead_id, assignee, due_at, status, created_at, fired_at)
    select c.id, c.lead_id, 'agent' || (1 + i % ${AGENTS}), now(), 'due', now(), now()
    from (select c.id, c.lead_id, row_number() over (order by c.id) as i from conversations c where c.status = 'open' limit ${AGENTS * 10}) c`;
  await sql`insert into dials (agent, queued_org_id, lead_id, phone, status) select 'agent' || (1 + g % ${AGENTS}), 1, g, (2000000000 + g)::text, 'pending' from generate_series(1, 2000) g`;
  // A day of the feed: 200,000 changes, a tenth of them another organization's.
  await sql`insert into workspace_changes (id, org_id, kind, conversation_id, lead_id, data, at, created_at)
            select g, case when g % 10 = 0 then 2 else 1 end, 'message', g % ${CONVERSATIONS} + 1, g % ${CONVERSATIONS} + 1,
                   jsonb_build_object('status', 'open', 'assignee', null, 'message_id', g, 'channel', 'sms', 'direction', 'in'), now(), now()
            from generate_series(1, 200000) g`;
  await sql`select setval('workspace_changes_id', 200000)`;
  await sql`vacuum analyze`;
  const [counts] = await sql<{ open: number; all: number; messages: number }[]>`
    select (select count(*)::int from conversations where status = 'open') as open, (select count(*)::int from conversations) as all,
           (select count(*)::int from messages) as messages`;
  say(`seeded ${counts!.messages.toLocaleString("en-US")} messages, ${counts!.all.toLocaleString("en-US")} conversations (${counts!.open.toLocaleString("en-US")} open) in ${((performance.now() - t1) / 1000).toFixed(0)} s`);
  say();

  const manager: Actor = { orgId: 1, type: "user", id: "mgr", agent: null, keyId: null };
  const agent: Actor = { orgId: 1, type: "user", id: "agent3", agent: "agent3", keyId: null };
  const root: Actor = { orgId: null, type: "user", id: "root", agent: null, keyId: null };
  const now = Date.parse("2026-01-14T17:00:00Z");
  /** A page's read, its cursor (for a later page) found once before the timing. */
  const page = async (actor: Actor, f: InboxFilter, later = false) => {
    let cursor = null;
    if (later) for (let i = 0; i < 3; i++) cursor = (await inboxPage(sql, actor, f, cursor, 50, now)).next;
    return () => inboxPage(sql, actor, f, cursor, 50, now);
  };
  const cases: [string, () => Promise<unknown>][] = [
    ["All open, page 1", await page(manager, { view: "open" })],
    ["All open, page 4 (keyset)", await page(manager, { view: "open" }, true)],
    ["Unassigned, page 1", await page(manager, { view: "unassigned" })],
    ["Mine (an agent: assigned + due callbacks), page 1", await page(agent, { view: "mine" })],
    ["Mine, page 4", await page(agent, { view: "mine" }, true)],
    ["Snoozed, page 1", await page(manager, { view: "snoozed" })],
    ["Closed, page 1", await page(manager, { view: "closed" })],
    ["Closed, page 4", await page(manager, { view: "closed" }, true)],
    ["All open, channel email", await page(manager, { view: "open", channel: "email" })],
    ["All open, assignee agent7", await page(manager, { view: "open", assignee: "agent7" })],
    ["Closed, assignee none", await page(manager, { view: "closed", assignee: "none" })],
    ["admin: All open (every organization)", await page(root, { view: "open" })],
    ["counts of the five views (capped at 999)", () => viewCounts(sql, agent)],
    ["My work (an agent)", () => myWork(sql, agent, now)],
    ["feed: a tab's read of the last 50 changes (200,000 kept)", () => changesSince(sql, 1, 199_945, 200)],
  ];
  say(`## Inbox reads at ${LEADS.toLocaleString("en-US")} leads, ${CONVERSATIONS.toLocaleString("en-US")} conversations (${OPEN.toLocaleString("en-US")} open), ${MESSAGES.toLocaleString("en-US")} messages`);
  say();
  say(`Client round trip on one connection set up as the service's (generic plans), ${RUNS} runs each after 10 warm-up runs; the machine's 2 cores shared with other work.`);
  say();
  say("| read | p50 ms | p99 ms | max ms | statements |");
  say("|---|---:|---:|---:|---:|");
  const plans: string[] = [];
  for (const [name, run] of cases) {
    for (let i = 0; i < 10; i++) await run();
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const s = performance.now();
      await run();
      times.push(performance.now() - s);
    }
    captured.length = 0;
    await run();
    const own = captured.filter((c) => !/^\s*(begin|commit)\b/i.test(c.query));
    say(`| ${name} | ${ms(pctl(times, 50))} | ${ms(pctl(times, 99))} | ${ms(Math.max(...times))} | ${own.length} |`);
    for (const stmt of own) plans.push(`### ${name}\n\n${(await genericPlan(sql, stmt.query, stmt.params)).map((l) => `    ${l}`).join("\n")}\n`);
  }
  say();
  console.log(plans.join("\n"));
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  writeFileSync(join(import.meta.dir, "results", "workspace-plans.md"), plans.join("\n"));
  if (PARTS.includes("pages")) await pageLoads(url, sql);
  await (sql as unknown as postgres.Sql).end({ timeout: 5 });
}

// ------------------------------------------------------------------------------- page loads

/** The console's answers so far within 50 ms of server time (the instance's histogram), and all. */
async function consoleTimes(api: string): Promise<{ in50: number; all: number }> {
  const t = await consoleServerTimes(api, ["0.05"]);
  return { in50: t.within["0.05"], all: t.all };
}

/**
 * Whole pages of the console at the reads' size, served by an instance in a process of its own:
 * each page loaded RUNS times one after another (its server time alone), then every page by
 * CONCURRENT agents at once for 20 s. Server time is the instance's own histogram (its 50 ms bound).
 */
async function pageLoads(url: string, sql: Sql): Promise<void> {
  await sql`insert into users (id, org_id, name, email, role) values ('mgr', 1, 'Manager', 'mgr@example.com', 'manager')`;
  const agentCookie = `leadline_session=${(await createSession(sql, "agent3", "bench", Date.now())).token}`;
  const mgrCookie = `leadline_session=${(await createSession(sql, "mgr", "bench", Date.now())).token}`;
  const [open] = await sql<{ id: number; lead_id: number }[]>`select id, lead_id from conversations where status = 'open' and org_id = 1 order by last_activity_at desc limit 1`;
  const port = await freePort();
  const child = Bun.spawn([process.execPath, import.meta.path, "--instance", url, String(port)], { stdout: "pipe", stderr: "inherit" });
  try {
    const reader = child.stdout.getReader();
    const { value } = await reader.read();
    if (!new TextDecoder().decode(value).includes("ready")) throw new Error("the instance did not start");
    reader.releaseLock();
    const api = ((await (await fetch(`http://127.0.0.1:${port}/stats`)).json()) as { api: string }).api;
    // A later page of All open: the cursor its third page's "older" link carries.
    const later = async () => {
      let path = "/console/inbox?view=open";
      for (let i = 0; i < 3; i++) {
        const html = await (await fetch(api + path, { headers: { cookie: mgrCookie } })).text();
        const m = /href="(\/console\/inbox\?[^"]*after=[^"]*)"/.exec(html);
        if (!m) return null;
        path = m[1]!.replaceAll("&amp;", "&");
      }
      return path;
    };
    const laterPath = await later();
    const pages: [string, string, string][] = [
      ["Inbox, an agent's default view (Mine)", "/console/inbox", agentCookie],
      ["Inbox, All open", "/console/inbox?view=open", mgrCookie],
      ["Inbox, Unassigned", "/console/inbox?view=unassigned", mgrCookie],
      ["Inbox, Snoozed", "/console/inbox?view=snoozed", mgrCookie],
      ["Inbox, Closed", "/console/inbox?view=closed", mgrCookie],
      ["Inbox, All open, channel email", "/console/inbox?view=open&channel=email", mgrCookie],
      ...(laterPath ? [["Inbox, All open, page 4 (keyset)", laterPath, mgrCookie] as [string, string, string]] : []),
      ["Inbox with a conversation in the reading pane", `/console/inbox?view=open&open=${open!.id}`, mgrCookie],
      ["The lead's page (its conversation)", `/console/leads/${open!.lead_id}`, mgrCookie],
      ["Search: a name", "/console/search?q=first42", mgrCookie],
      ["Search: a phone's last 4 digits", "/console/search?q=0123", mgrCookie],
      ["Search: message text, a word in every message", "/console/search?q=sentence", mgrCookie],
      ["Search: message text, a word in none", "/console/search?q=xylophone", mgrCookie],
    ];
    say(`## Console page loads at ${LEADS.toLocaleString("en-US")} leads, ${CONVERSATIONS.toLocaleString("en-US")} conversations, ${MESSAGES.toLocaleString("en-US")} messages`);
    say();
    say(`One served instance (the app in a process of its own, 4 database connections) on the seeded database. Each page loaded ${RUNS} times one after another after 10 warm-ups (server time from the instance's duration histogram, its 50 ms bound; client round trip beside it), then all of them by ${CONCURRENT} agents at once for 20 s.`);
    say();
    say("| page | bytes | client p50 ms | client p99 ms | server time ≤ 50 ms |");
    say("|---|---:|---:|---:|---:|");
    const load = async (path: string, cookie: string) => {
      const res = await fetch(api + path, { headers: { cookie } });
      const body = await res.text();
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
      return body.length;
    };
    let all = { in50: 0, all: 0 };
    for (const [name, path, cookie] of pages) {
      for (let i = 0; i < 10; i++) await load(path, cookie);
      const before = await consoleTimes(api);
      const times: number[] = [];
      let bytes = 0;
      for (let i = 0; i < RUNS; i++) {
        const s = performance.now();
        bytes = await load(path, cookie);
        times.push(performance.now() - s);
      }
      const after = await consoleTimes(api);
      const d = { in50: after.in50 - before.in50, all: after.all - before.all };
      all = { in50: all.in50 + d.in50, all: all.all + d.all };
      say(`| ${name} | ${bytes.toLocaleString("en-US")} | ${ms(pctl(times, 50))} | ${ms(pctl(times, 99))} | ${((d.in50 / d.all) * 100).toFixed(2)}% of ${d.all} |`);
    }
    say(`| **every page, one at a time** | | | | **${((all.in50 / all.all) * 100).toFixed(2)}%** of ${all.all} |`);
    const before = await consoleTimes(api);
    const until = performance.now() + 20_000;
    const times: number[] = [];
    await Promise.all(
      Array.from({ length: CONCURRENT }, async (_, a) => {
        for (let i = a; performance.now() < until; i++) {
          const [, path, cookie] = pages[i % pages.length]!;
          const s = performance.now();
          await load(path, cookie);
          times.push(performance.now() - s);
        }
      }),
    );
    const after = await consoleTimes(api);
    const d = { in50: after.in50 - before.in50, all: after.all - before.all };
    say(`| **every page, ${CONCURRENT} agents at once** (${(times.length / 20).toFixed(0)} pages/s) | | ${ms(pctl(times, 50))} | ${ms(pctl(times, 99))} | **${((d.in50 / d.all) * 100).toFixed(2)}%** of ${d.all} |`);
    say();
  } finally {
    child.kill();
  }
}

/** A SQL literal of a statement's parameter, for EXECUTE. */
function literal(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  if (v instanceof Date) return `'${v.toISOString()}'`;
  if (Array.isArray(v)) return `'{${v.map((x) => JSON.stringify(String(x))).join(",")}}'`;
  return `'${String(v).replaceAll("'", "''")}'`;
}

/**
 * The plan the service runs: its connections plan every statement generically, so the statement
 * is prepared and executed under force_generic_plan (EXPLAIN of the text with its values would
 * show a plan made for those values instead).
 */
async function genericPlan(sql: Sql, query: string, params: unknown[]): Promise<string[]> {
  const conn = await (sql as unknown as postgres.Sql).reserve();
  try {
    await conn.unsafe(`prepare ws_plan as ${query}`);
    const rows = await conn.unsafe(`explain (analyze, buffers, costs off) execute ws_plan${params.length ? `(${params.map(literal).join(", ")})` : ""}`);
    return rows.map((r) => String(r["QUERY PLAN"]));
  } catch (err) {
    return [`(no generic plan: ${(err as Error).message})`];
  } finally {
    await conn.unsafe("deallocate ws_plan").catch(() => {});
    conn.release();
  }
}

// ------------------------------------------------------------------------------- fan-out

/** Child process: one served instance on `dbUrl`, and its figures (memory, subscribers) on `port`. */
async function instance(dbUrl: string, port: number): Promise<never> {
  const { startApp } = await import("../test/harness/app");
  const app = await startApp(dbUrl, { BASE_URL }, {});
  const hub = app.running.deps.feed;
  Bun.serve({
    port,
    hostname: "127.0.0.1",
    fetch() {
      Bun.gc(true);
      const rss = Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0);
      return Response.json({ rss_kib: rss, heap_kib: Math.round(process.memoryUsage().heapUsed / 1024), subscribers: hub.subscribers, api: app.base });
    },
  });
  console.log("ready");
  await new Promise(() => {});
  throw new Error("unreachable");
}

async function fanOut(adminUrl: string): Promise<void> {
  const url = await database(adminUrl, "workspace_fanout");
  const sql = client(url);
  await migrate(sql);
  await sql`insert into orgs (id, name, timezone, sms) values (1, 'Acme', 'America/Chicago',
            ${sql.json({ base_url: "sink:", account_sid: "ACbench", auth_token: TOKEN, from: FROM })}), (2, 'Bolt', 'UTC', null)`;
  await sql`insert into campaigns (id, org_id) values ('A', 1), ('B', 2)`;
  await sql`insert into lists (id, campaign_id) values (1, 'A'), (2, 'B')`;
  await sql`insert into leads (list_id, phone, first_name) select 1, (3000000000 + g)::text, 'L' || g from generate_series(1, ${2 * TEXTS + 10}) g`;
  const ports = { a: await freePort(), b: await freePort() };
  // One agent of the streams' organization, signed in once: every stream (tab) sends its cookie.
  await sql`insert into users (id, org_id, name, email, role) values ('agent1', 1, 'Agent One', 'agent1@bench.example', 'agent')`;
  const { token } = await createSession(sql, "agent1", "bench", Date.now());
  const cookie = `leadline_session=${token}`;
  const spawn = (port: number) => Bun.spawn([process.execPath, import.meta.path, "--instance", url, String(port)], { stdout: "pipe", stderr: "inherit" });
  const children = [spawn(ports.a), spawn(ports.b)];
  try {
    for (const child of children) {
      const reader = child.stdout.getReader();
      const { value } = await reader.read();
      if (!new TextDecoder().decode(value).includes("ready")) throw new Error("an instance did not start");
      reader.releaseLock();
    }
    const stats = async () => (await fetch(`http://127.0.0.1:${ports.b}/stats`)).json() as Promise<{ rss_kib: number; heap_kib: number; subscribers: number; api: string }>;
    const apiA = ((await (await fetch(`http://127.0.0.1:${ports.a}/stats`)).json()) as { api: string }).api;
    const before = await stats();
    const apiB = before.api;
    const [{ head }] = await sql<{ head: number }[]>`select coalesce(max(id), 0)::int as head from workspace_changes`;
    // The streams: each a reader of B's inbox stream, noting when each lead's message event arrives.
    const sent = new Map<number, number>();
    const arrivals: number[] = [];
    let signedOut = 0;
    const controllers: AbortController[] = [];
    const done: Promise<void>[] = [];
    for (let i = 0; i < STREAMS; i++) {
      const ac = new AbortController();
      controllers.push(ac);
      const res = await fetch(`${apiB}/console/inbox/stream?after=${head}`, { signal: ac.signal, headers: { cookie, accept: "text/event-stream" } });
      if (res.status !== 200 || !(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) throw new Error(`stream answered ${res.status}`);
      const reader = res.body!.getReader();
      done.push(
        (async () => {
          const dec = new TextDecoder();
          let buf = "";
          try {
            for (;;) {
              const { value, done: end } = await reader.read();
              if (end) return;
              buf += dec.decode(value, { stream: true });
              let at;
              while ((at = buf.indexOf("\n\n")) >= 0) {
                const event = buf.slice(0, at);
                buf = buf.slice(at + 2);
                if (event.includes("event: signed-out")) signedOut++;
                const m = /^event: change$/m.test(event) ? /^data: \{"kind":"message","conversation":\d+,"lead":(\d+),/m.exec(event) : null;
                const t = m ? sent.get(Number(m[1])) : undefined;
                if (t !== undefined) arrivals.push(performance.now() - t);
              }
            }
          } catch {
            // aborted
          }
        })(),
      );
    }
    await Bun.sleep(2000);
    const open = await stats();
    say(`## Live feed fan-out: ${STREAMS} event streams open on instance B`);
    say();
    say(`Each stream is the inbox's event stream (GET /console/inbox/stream) of one signed-in agent, on B. Texts are posted to Twilio's inbound callback of an instance, one every 100 ms, each to a new lead of the streams' organization; latency is from the post to each stream's event. Instances, streams and PostgreSQL on the same 2 shared cores.`);
    say();
    say("| texts posted to | texts | stream events | p50 ms | p99 ms | max ms | events missing |");
    say("|---|---:|---:|---:|---:|---:|---:|");
    let lead = 1;
    for (const [label, api] of [["A (the streams on B: across instances)", apiA], ["B (the streams' own instance)", apiB]] as const) {
      arrivals.length = 0;
      for (let i = 0; i < TEXTS; i++) {
        const params = { From: `+1${3000000000 + lead}`, To: FROM, Body: "hello", MessageSid: `SMbench${lead}`, AccountSid: "ACbench" };
        const path = "/hooks/sms_inbound.php";
        sent.set(lead, performance.now());
        lead++;
        const r = await fetch(api + path, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signCallback(TOKEN, BASE_URL + path, params) },
          body: new URLSearchParams(params).toString(),
        });
        if (r.status !== 200) throw new Error(`inbound answered ${r.status}`);
        await r.text();
        await Bun.sleep(100);
      }
      for (let i = 0; i < 100 && arrivals.length < TEXTS * STREAMS; i++) await Bun.sleep(50);
      say(`| ${label} | ${TEXTS} | ${arrivals.length} | ${ms(pctl(arrivals, 50))} | ${ms(pctl(arrivals, 99))} | ${ms(Math.max(...arrivals))} | ${TEXTS * STREAMS - arrivals.length} |`);
    }
    if (signedOut > 0) throw new Error(`${signedOut} streams were told signed-out`);
    for (const ac of controllers) ac.abort();
    await Promise.all(done);
    await Bun.sleep(1000);
    const closed = await stats();
    say();
    say(
      `Instance B's memory (after a full GC), before the streams / with ${STREAMS} idle streams open (${open.subscribers} subscribers) / after every stream closed (${closed.subscribers} subscribers left): ` +
        `resident ${(before.rss_kib / 1024).toFixed(1)} / ${(open.rss_kib / 1024).toFixed(1)} / ${(closed.rss_kib / 1024).toFixed(1)} MiB, ` +
        `JavaScript heap ${(before.heap_kib / 1024).toFixed(1)} / ${(open.heap_kib / 1024).toFixed(1)} / ${(closed.heap_kib / 1024).toFixed(1)} MiB: ` +
        `**${((open.rss_kib - before.rss_kib) / STREAMS).toFixed(1)} KiB resident and ${((open.heap_kib - before.heap_kib) / STREAMS).toFixed(1)} KiB of heap per idle stream**.`,
    );
    say();
  } finally {
    for (const child of children) child.kill();
    await (sql as unknown as postgres.Sql).end({ timeout: 5 });
  }
}
