// Find anything (src/search/workspace.ts) at scale: one organization with LEADS leads (default
// 1,000,000) and MESSAGES messages and notes (default 5,000,000) over a fifth of them (the
// conversations), on a throwaway cluster. Times each kind of search through the real function
// (names with and without accents, phone suffixes, an email's local part, message words from
// common to rare, tag suggestions), many inputs each, and prints p50 / p99 / max; then the message
// statement's plans, and the same words through a trigram index (pg_trgm, `like '%word%'`) for the
// comparison the choice of full-text search rests on (bench/RESULTS.md).
// Run: node_modules/.bin/bun bench/search.ts   (LEADS=… MESSAGES=… to change the size)
import postgres from "postgres";
import type { Actor } from "../src/auth/actor";
import type { Sql } from "../src/db/client";
import { migrate } from "../src/db/migrate";
import { suggestTags } from "../src/leads/tags";
import { messageRead, newestFirst, readSettings } from "../src/search/messages";
import { searchWorkspace } from "../src/search/workspace";
import { startCluster } from "./pg";

const N = Number(process.env.LEADS ?? 1_000_000);
const M = Number(process.env.MESSAGES ?? 5_000_000);
const RUNS = Number(process.env.RUNS ?? 40);
const cluster = await startCluster();
const captured: { query: string; params: unknown[] }[] = [];
const sql = postgres(cluster.url, {
  max: 2,
  // As the service's connections plan (src/db/client.ts).
  connection: { plan_cache_mode: "force_generic_plan" },
  onnotice: () => {},
  types: { bigint: postgres.BigInt },
  debug: (_c, query, params) => captured.push({ query, params: params as unknown[] }),
}) as unknown as Sql;
const actor: Actor = { orgId: 1, type: "user", id: "bench", agent: null, keyId: null };
const secs = (t0: number) => ((performance.now() - t0) / 1000).toFixed(0);

// Words of the messages with known shares, on top of a skewed vocabulary of 20,000 filler words.
const WORDS: [string, number][] = [
  ["roof", 0.1],
  ["estimate", 0.01],
  ["warranty", 0.001],
  ["skylight", 0.00001],
];

try {
  await migrate(sql);
  let t0 = performance.now();
  await sql`insert into orgs (id, name, timezone) values (1, 'Acme', 'America/Chicago'), (2, 'Bolt', 'America/New_York')`;
  await sql`insert into campaigns (id, org_id) values ('C1', 1), ('C2', 2)`;
  await sql`insert into lists (id, campaign_id) values (1, 'C1'), (2, 'C2')`;
  await sql`select setseed(0.29)`;
  // Names: 120 first names (a tenth accented), 2,400 last names (Núñez, Peña, … among them).
  await sql`
    insert into leads (list_id, phone, first_name, last_name, email, created_at)
    select 1, lpad((2000000000 + floor(random() * 7999999999))::bigint::text, 10, '0'),
           (array['José','María','Zoë','André','Renée','Chloé','Iñaki','Łukasz','Ángel','Sofía','james','mary','john','patricia','robert',
                  'jennifer','michael','linda','william','elizabeth','david','barbara','richard','susan','joseph','jessica'])[1 + floor(random() * 26)::int]
             || case when random() < 0.5 then '' else floor(random() * 5)::int::text end,
           (array['Núñez','Peña','Muñoz','Gómez','Ibáñez','smith','johnson','brown','garcia','miller'])[1 + floor(random() * 10)::int]
             || floor(random() * 240)::int::text,
           case when g % 3 = 0 then 'user' || g || '@example.com' else '' end,
           timestamptz '2025-01-01' + (g::float / ${N}) * interval '700 days'
    from generate_series(1, ${N}) g`;
  console.log(`seeded ${N} leads in ${secs(t0)} s`);
  t0 = performance.now();
  // 100,000 distinct bodies of 6 to 20 filler words, then each message one of them with the
  // measured words appended at their shares; messages go to a fifth of the leads, newest last.
  await sql`create temporary table bodies as
    select b, (select string_agg('w' || floor(power(random(), 3) * 20000)::int, ' ') from generate_series(1, 6 + (b % 15)) where b > 0) as body
    from generate_series(1, 100000) b`;
  await sql`create index on bodies (b)`;
  // The full-text column and index made after the rows, as the migration makes them on an existing installation.
  await sql`drop index messages_search`;
  await sql`alter table messages drop column search`;
  const extra = WORDS.map(([w, share]) => sql`case when random() < ${share} then ${" " + w} else '' end`);
  const [first] = await sql<{ id: number }[]>`select min(id) as id from leads`;
  await sql`
    insert into messages (lead_id, org_id, channel, direction, body, status, created_at)
    select ${first.id} + floor(random() * ${N / 5})::bigint * 5, 1,
           case when g % 10 = 0 then 'note' else 'sms' end, case when g % 2 = 0 then 'in' else 'out' end,
           (select body from bodies where b = 1 + (g::bigint * 7919) % 100000) ${extra.map((e) => sql`|| ${e}`)},
           'sent', timestamptz '2025-01-01' + (g::float / ${M}) * interval '700 days'
    from generate_series(1, ${M}) g`;
  console.log(`seeded ${M} messages in ${secs(t0)} s`);
  t0 = performance.now();
  await sql`alter table messages add column search tsvector generated always as (to_tsvector('simple', leadline_fold(subject || ' ' || body))) stored`;
  await sql`alter table messages alter column search set statistics 1000`;
  console.log(`full-text column (sql/0026 messages.search) added in ${secs(t0)} s`);
  t0 = performance.now();
  await sql`create index messages_search on messages using gin (search)`;
  console.log(`its index (messages_search) built in ${secs(t0)} s`);
  const shares = await sql<{ w: string; n: number }[]>`
    select w, (select count(*) from messages where search @@ to_tsquery('simple', w))::int as n
    from unnest(${WORDS.map(([w]) => w)}::text[]) w`;
  console.log(`messages holding each word: ${shares.map((s) => `${s.w} ${s.n}`).join(", ")}`);
  // Tags on a tenth of the leads, through the triggers that count them.
  await sql`insert into lead_tags (lead_id, org_id, tag, tag_key)
    select id, 1, t, lower(t) from (select id, (array['VIP','Spanish','roof leak','warranty claim','repeat caller','commercial'])[1 + (id % 6)::int] || case when id % 7 = 0 then ' ' || (id % 500) else '' end as t
    from leads where id % 10 = 0) x`;
  t0 = performance.now();
  await sql`vacuum analyze`;
  console.log(`vacuum analyze in ${secs(t0)} s\n`);

  const cases: [string, (i: number) => Promise<unknown>][] = [
    ["name, one word, accents typed without ('jose', 'nunez', …)", (i) => searchWorkspace(sql, actor, ["jose", "nunez", "maria", "zoe", "pena", "chloe"][i % 6], { messages: false })],
    ["name, one word, as stored ('José', 'Núñez4', …)", (i) => searchWorkspace(sql, actor, ["José", `Núñez${i % 240}`, "Muñoz1", "smith2"][i % 4], { messages: false })],
    ["name, two words ('jose nunez12', …)", (i) => searchWorkspace(sql, actor, `jose nunez${i % 240}`, { messages: false })],
    ["phone, last 4 digits", (i) => searchWorkspace(sql, actor, String(1000 + ((i * 7919) % 9000)))],
    ["phone, last 7 digits", (i) => searchWorkspace(sql, actor, `555-${String(1000 + ((i * 7919) % 9000))}`)],
    ["phone, in full", (i) => searchWorkspace(sql, actor, `(512) 555-${String(1000 + i)}`)],
    ["email, local part ('user3000…')", (i) => searchWorkspace(sql, actor, `user${3000 + i * 3}`, { messages: false })],
    ["email, with the domain", (i) => searchWorkspace(sql, actor, `user${3000 + i * 3}@example.com`)],
    ...WORDS.map(([w, share]): [string, (i: number) => Promise<unknown>] => [`message text, a word in ${1 / share} ('${w}')`, () => searchWorkspace(sql, actor, w)]),
    ["message text, two words ('roof estimate')", () => searchWorkspace(sql, actor, "roof estimate")],
    ["message text, a filler word ('w1234', rare)", (i) => searchWorkspace(sql, actor, `w${15000 + i}`)],
    ["message text, nothing matches", (i) => searchWorkspace(sql, actor, `zzqx${i}`)],
    ["names + messages ('jose')", () => searchWorkspace(sql, actor, "jose")],
    ["tag suggestions, empty prefix", () => suggestTags(sql, actor, 1, "")],
    ["tag suggestions, 'r'", () => suggestTags(sql, actor, 1, "r")],
  ];
  console.log("| Search | p50 | p99 | max |\n|---|---|---|---|");
  for (const [name, run] of cases) {
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const s = performance.now();
      await run(i);
      times.push(performance.now() - s);
    }
    times.sort((a, b) => a - b);
    const q = (p: number) => times[Math.min(times.length - 1, Math.ceil(p * times.length) - 1)].toFixed(1);
    console.log(`| ${name} | ${q(0.5)} ms | ${q(0.99)} ms | ${times[times.length - 1].toFixed(1)} ms |`);
  }

  console.log("\n## The message statement's plans (the read messageRead chose, planned with its values)\n");
  for (const w of [...WORDS.map(([w]) => w), "roof estimate"]) {
    captured.length = 0;
    await searchWorkspace(sql, actor, w);
    const stmt = captured.find((c) => /to_tsquery/.test(c.query))!;
    const read = await messageRead(sql, w.split(" "));
    const plan = await sql.begin(async (tx) => {
      await readSettings(tx, read);
      return tx.unsafe(`explain (analyze, buffers, costs off) ${stmt.query}`, stmt.params as never[]);
    });
    console.log(`### '${w}' (read: ${read})\n${plan.map((r) => `    ${r["QUERY PLAN"]}`).join("\n")}\n`);
  }

  // TRIGRAM=0 leaves the comparison out (it builds a second index over every message).
  if (process.env.TRIGRAM !== "0") {
    console.log("## Trigram instead (pg_trgm on the folded body; substring, not word-start, matches)\n");
    t0 = performance.now();
    await sql`create extension if not exists pg_trgm`;
    await sql`create index messages_trgm on messages using gin (leadline_fold(body) gin_trgm_ops)`;
    const [size] = await sql<{ fts: string; trgm: string }[]>`
      select pg_size_pretty(pg_relation_size('messages_search')) as fts, pg_size_pretty(pg_relation_size('messages_trgm')) as trgm`;
    console.log(`trigram index built in ${secs(t0)} s; sizes: full-text ${size.fts}, trigram ${size.trgm}\n`);
    console.log("| Word | full-text p50 | trigram p50 |\n|---|---|---|");
    for (const w of [...WORDS.map(([w]) => w), "w15001"]) {
      const timeOf = async (run: () => Promise<unknown>) => {
        const times: number[] = [];
        for (let i = 0; i < 7; i++) {
          const s = performance.now();
          await run();
          times.push(performance.now() - s);
        }
        return times.sort((a, b) => a - b)[3].toFixed(1);
      };
      const read = await messageRead(sql, [w]);
      const fts = await timeOf(() => sql.begin(async (tx) => {
        await readSettings(tx, read);
        return tx`select m.id from messages m join leads l on l.id = m.lead_id
          where m.search @@ to_tsquery('simple', leadline_fold(${w + ":*"})) and l.org_id = 1
          order by ${newestFirst(tx, read)} limit 200`;
      }));
      const trgm = await timeOf(() => sql.begin(async (tx) => {
        await tx`set local plan_cache_mode = force_custom_plan`;
        return tx`select m.id from messages m join leads l on l.id = m.lead_id
          where leadline_fold(m.body) like ${"%" + w + "%"} and l.org_id = 1
          order by m.id desc limit 200`;
      }));
      console.log(`| ${w} | ${fts} ms | ${trgm} ms |`);
    }
  }
} finally {
  await (sql as unknown as postgres.Sql).end({ timeout: 5 });
  cluster.stop();
}
