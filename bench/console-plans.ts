// The console's lead search at 1,000,000 leads: seeds a throwaway cluster, then prints each
// search's plan (EXPLAIN ANALYZE, BUFFERS) and its median time over repeated runs, the inbox
// count's too (the inbox's pages of conversations are measured by bench/workspace.ts).
// Run: node_modules/.bin/bun bench/console-plans.ts  (LEADS=… to change the size).
// The statements are captured from the real functions (postgres.js `debug`), not copied.
import postgres from "postgres";
import { migrate } from "../src/db/migrate";
import type { Sql } from "../src/db/client";
import { inboxCount } from "../src/console/inbox-count";
import { leadTimeline } from "../src/conversations/timeline";
import { searchLeads, type LeadFilter } from "../src/leads/search";
import { startCluster } from "./pg";

const N = Number(process.env.LEADS ?? 1_000_000);
const cluster = await startCluster();
const captured: { query: string; params: unknown[] }[] = [];
const sql = postgres(cluster.url, { max: 2, connection: { plan_cache_mode: "force_generic_plan" }, onnotice: () => {}, types: { bigint: postgres.BigInt }, debug: (_c, query, params) => captured.push({ query, params: params as unknown[] }) }) as unknown as Sql;
try {
  await migrate(sql);
  const t0 = performance.now();
  await sql`insert into orgs (id, name, timezone) values (1, 'Acme', 'America/Chicago'), (2, 'Bolt', 'America/New_York')`;
  await sql`insert into campaigns (id, org_id) select 'C' || g, 1 + (g % 2) from generate_series(1, 10) g`;
  await sql`insert into lists (id, campaign_id) select g, 'C' || (1 + g % 10) from generate_series(1, 50) g`;
  // Names from 200 first and 2,500 last names, a third with an email, statuses from NEW (most)
  // to DNC (1%), created over two years, each drawn independently of the list (and so of the org).
  await sql`select setseed(0.17)`;
  await sql`
    insert into leads (list_id, phone, first_name, last_name, email, status, created_at)
    select 1 + floor(random() * 50)::int, (2000000000 + g * 7)::text,
           (array['james','mary','john','patricia','robert','jennifer','michael','linda','william','elizabeth'])[1 + floor(random() * 10)::int] || floor(random() * 20)::int,
           'last' || floor(random() * 500)::int || (array['son','man','ez','ski','ton'])[1 + floor(random() * 5)::int],
           case when g % 3 = 0 then 'user' || g || '@example.com' else '' end,
           (array['NEW','NEW','NEW','NEW','CALLBK','SALE'])[1 + floor(random() * 6)::int] || case when random() < 0.01 then 'DNC' else '' end,
           timestamptz '2025-01-01' + (g::float / ${N}) * interval '730 days'
    from generate_series(1, ${N}) g`;
  // 2,000 leads of org 2 named Bolt: a name common elsewhere and absent from org 1.
  await sql`update leads set first_name = 'bolt' || id where id in (select id from leads where org_id = 2 limit 2000)`;
  await sql`insert into messages (lead_id, org_id, channel, direction, body, status, handled_at)
    select l.id, l.org_id, 'sms', 'in', 'hi', 'received', case when l.id % 100 = 0 then null else now() end
    from leads l where l.id % 10 = 0`;
  const [lead] = await sql<{ id: number }[]>`select id from leads where org_id = 1 order by id limit 1`;
  await sql`insert into messages (lead_id, org_id, channel, direction, body, status, created_at)
    select ${lead.id}, 1, 'sms', 'out', 'text ' || g, 'sent', now() - g * interval '1 minute' from generate_series(1, 300) g`;
  await sql`insert into lead_events (lead_id, event, label, created_at)
    select ${lead.id}, 'note', 'e' || g, now() - g * interval '1 minute' from generate_series(1, 300) g`;
  await sql`vacuum analyze`;
  console.log(`seeded ${N} leads in ${((performance.now() - t0) / 1000).toFixed(0)} s\n`);

  const base: LeadFilter = { q: "", campaign: null, list: null, status: null, from: null, to: null, zone: "America/Chicago" };
  const page1 = await searchLeads(sql, 1, base, null, 50);
  const cases: [string, () => Promise<unknown>][] = [
    ["org, no filter, page 1", () => searchLeads(sql, 1, base, null, 50)],
    ["org, no filter, a later page (keyset)", () => searchLeads(sql, 1, base, page1.next, 50)],
    ["org, phone (last 10)", () => searchLeads(sql, 1, { ...base, q: "(200) 000-0014" }, null, 50)],
    ["org, name one word (common prefix 'mary')", () => searchLeads(sql, 1, { ...base, q: "mary" }, null, 50)],
    ["org, name two words", () => searchLeads(sql, 1, { ...base, q: "james10 last10" }, null, 50)],
    ["org, name absent from the org, common elsewhere", () => searchLeads(sql, 1, { ...base, q: "bolt" }, null, 50)],
    ["org, rare name prefix", () => searchLeads(sql, 1, { ...base, q: "last499s" }, null, 50)],
    ["org, name prefix of 2% ('last49')", () => searchLeads(sql, 1, { ...base, q: "last49" }, null, 50)],
    ["org, name prefix of 0.5% ('mary19')", () => searchLeads(sql, 1, { ...base, q: "mary19" }, null, 50)],
    ["org, name prefix of 5% ('james1')", () => searchLeads(sql, 1, { ...base, q: "james1" }, null, 50)],
    ["org, email prefix", () => searchLeads(sql, 1, { ...base, q: "user3000@" }, null, 50)],
    ["org, campaign", () => searchLeads(sql, 1, { ...base, campaign: "C2" }, null, 50)],
    ["org, another org's campaign", () => searchLeads(sql, 1, { ...base, campaign: "C3" }, null, 50)],
    ["org, list", () => searchLeads(sql, 1, { ...base, list: 7 }, null, 50)],
    ["org, status (common)", () => searchLeads(sql, 1, { ...base, status: "CALLBK" }, null, 50)],
    ["org, status (rare: 1 in 600)", () => searchLeads(sql, 1, { ...base, status: "SALEDNC" }, null, 50)],
    ["org, created range (a month, a year ago)", () => searchLeads(sql, 1, { ...base, from: "2025-06-01", to: "2025-06-30" }, null, 50)],
    ["admin, no filter", () => searchLeads(sql, null, base, null, 50)],
    ["admin, phone", () => searchLeads(sql, null, { ...base, q: "2000000014" }, null, 50)],
    ["admin, name", () => searchLeads(sql, null, { ...base, q: "linda" }, null, 50)],
    ["inbox count (org)", () => inboxCount(sql, { orgId: 1, type: "user" as never, id: "u", agent: null, keyId: null })],
    ["lead timeline (600 rows, 50 kept)", () => leadTimeline(sql, 1, lead.id, 50)],
  ];
  for (const [name, run] of cases) {
    const times: number[] = [];
    for (let i = 0; i < 7; i++) {
      const s = performance.now();
      await run();
      times.push(performance.now() - s);
    }
    times.sort((a, b) => a - b);
    captured.length = 0;
    await run();
    // The search's own statement (not its transaction's begin, set or commit), explained as it ran:
    // generically planned, as the service plans, unless it ran under force_custom_plan.
    const own = captured.filter((c) => !/^\s*(begin|commit|set local)\b/i.test(c.query));
    const stmt = own[own.length - 1];
    const custom = captured.some((c) => /force_custom_plan/.test(c.query));
    const explain = (q: Sql) => q.unsafe(`explain (analyze, buffers, costs off) ${stmt.query}`, stmt.params as never[]);
    const plan = custom
      ? await sql.begin(async (tx) => {
          await tx`set local plan_cache_mode = force_custom_plan`;
          return explain(tx as unknown as Sql);
        })
      : await explain(sql);
    console.log(`## ${name}: median ${times[3].toFixed(2)} ms (client round trip)`);
    console.log(plan.map((r) => `    ${r["QUERY PLAN"]}`).join("\n") + "\n");
  }
} finally {
  await (sql as unknown as postgres.Sql).end({ timeout: 5 });
  cluster.stop();
}
