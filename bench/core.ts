// The core API suite (bench/README.md): get lead, CTI lookup, conversation, intake, KPI batches
// and an over-limit key against dist/leadline, beside the baselines of bench/baseline.ts.
//
//   node_modules/.bin/bun bench/core.ts      (or `make bench`; options in bench/README.md)
//
// Suite options: BENCH_ONLY (scenario ids, e.g. `2,7`; the baselines always run),
// BENCH_READ_KEYS (keys for get lead and CTI lookup, default 3000).
import { join } from "node:path";
import { answerChecks, expectStatus, median, num, options, pct, POOL, type Result, type Row, type Server, type Sql, Suite } from "./lib";

const suite = new Suite("core", "Core API", ["b", "2", "3", "8", "4", "5", "6", "a", "7"]);
const { duration: DURATION, warmup: WARMUP, rounds: ROUNDS, conns: CONNS, threads: THREADS } = options;

const LEADS = 10_000;
const CONV_ROWS = 200; // per source: messages, calls, lead_events
const LIMITS = { api_v1: 300, intake: 120, kpi: 600 };
// Enough keys that none reaches its hourly limit in warm-up + run (checked after each scenario),
// few enough that the warm-up uses each once, so the measured window sees the key cache warm.
// BENCH_READ_KEYS sets the count for get lead and CTI lookup: each key's rate counter is a sequence,
// and PostgreSQL's cost per nextval() grows with how many distinct sequences the backends touch.
const READ_KEYS = num("BENCH_READ_KEYS", 3000);
const KEY_COUNTS = { lead: READ_KEYS, cti: READ_KEYS, dial: 1000, conv: 300, intake: 2000, kpi: 40 };

async function seed(sql: Sql): Promise<{ convLead: number; overKeyId: number; overKey: string }> {
  await suite.seedAccount();
  // The agent the dial keys are bound to (a dial needs a key with an agent).
  await sql`insert into users (id, org_id, name) values ('agent7', 1, 'Agent Seven')`;
  // Leads 1..LEADS with phones 5550000001.. (ids are fresh bigserials, so id i has phone i).
  await sql`
    insert into leads (list_id, phone, first_name, last_name, email, city, state, postal_code)
    select 101, '555' || lpad(i::text, 7, '0'), 'First' || i, 'Last' || i, 'lead' || i || '@example.com',
           'Springfield', 'IL', '62701'
    from generate_series(1, ${LEADS}) as i`;
  const [{ id: convLead }] = await sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, last_name) values (101, '5559990000', 'Conver', 'Sation')
    returning id::int`;
  await sql`
    insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, body, status, created_at)
    select ${convLead}, 1, 'sms', case when i % 2 = 0 then 'out' else 'in' end, 'user', 'agent7',
           'Message body number ' || i || ', a sentence or two of text as an SMS would have.', 'delivered',
           now() - make_interval(mins => i * 3)
    from generate_series(1, ${CONV_ROWS}) as i`;
  await sql`
    insert into calls (lead_id, phone, to_number, status, secs, agent, occurred_at)
    select ${convLead}, '5559990000', '5551112222', 'ANSWERED', 30 + i, 'agent7', now() - make_interval(mins => i * 3 + 1)
    from generate_series(1, ${CONV_ROWS}) as i`;
  await sql`
    insert into lead_events (lead_id, event, label, actor, actor_role, note, created_at)
    select ${convLead}, 'appointment_booked', 'Appointment ' || i, 'agent7', 'agent', 'note ' || i,
           now() - make_interval(mins => i * 3 + 2)
    from generate_series(1, ${CONV_ROWS}) as i`;
  const { keys: over } = await suite.keys("overlimit", 1, ["leads:read"]);
  const [{ id: overKeyId }] = await sql<{ id: number }[]>`
    select id::int from api_keys where key_prefix = ${over[0].slice(0, 10)} and name = 'bench-overlimit'`;
  // Only the seeded tables: statistics that call an empty table empty make plans that scan it once it fills.
  await sql`vacuum analyze leads, messages, calls, lead_events`;
  return { convLead, overKeyId, overKey: over[0] };
}


interface Scenario {
  id: string;
  name: string;
  to: Server;
  args: Record<string, string | number>;
  conns?: number;
  expect: "2xx" | "refused";
  keys?: { n: number; limit: number };
  sample?: () => Promise<string | null>;
  before?: () => Promise<unknown>;
  after?: (r: Result, state: any) => Promise<string[]>;
  baseline?: string;
  target?: (ratio: number | undefined, r: Result) => { text: string; pass: boolean };
}

const ratioTarget = (min: number) => (ratio: number | undefined) => ({
  text: `≥ ${Math.round(min * 100)}% of baseline`,
  pass: ratio !== undefined && ratio >= min,
});

await suite.run(async () => {
  const sql = await suite.database();
  const t0 = Date.now();
  const { convLead, overKeyId, overKey } = await seed(sql);
  const keys = {
    lead: await suite.keys("lead", KEY_COUNTS.lead, ["leads:read"]),
    cti: await suite.keys("cti", KEY_COUNTS.cti, ["cti"]),
    dial: await suite.keys("dial", KEY_COUNTS.dial, ["cti"]),
    conv: await suite.keys("conv", KEY_COUNTS.conv, ["conversations:read"]),
    intake: await suite.keys("intake", KEY_COUNTS.intake, ["leads:write"]),
    kpi: await suite.keys("kpi", KEY_COUNTS.kpi, ["metrics:write"]),
  };
  await sql`update api_keys set agent = 'agent7' where name = 'bench-dial'`;
  await sql`analyze api_keys`;
  suite.say(`seeded ${LEADS + 1} leads, ${3 * CONV_ROWS} conversation rows, ${Object.values(KEY_COUNTS).reduce((a, b) => a + b, 1)} keys in ${Date.now() - t0} ms`);

  const svc = await suite.service();
  const base = await suite.baseline();
  suite.say(`leadline on ${svc.url}, baseline on ${base.url}; ${WARMUP}s warm-up + ${DURATION}s per scenario, -t${THREADS} -c${CONNS}`);

  const H = (key: string) => ({ headers: { "X-Api-Key": key } });
  const leadCount = async () => Number((await sql`select count(*)::int as n from leads`)[0].n);
  const statsRc = async () => {
    // Backends report table stats when idle for a second; wait for that, then read fresh stats.
    await Bun.sleep(1500);
    const [s] = await sql`
      select n_tup_ins::int as ins, n_tup_upd::int as upd, n_tup_hot_upd::int as hot
      from pg_stat_user_tables where relname = 'rate_windows'`;
    // Hits drawn from the key's sequence.
    const [c] = await sql`select last_value::int as n from ${sql(`rate_seq_${overKeyId}`)}`;
    return { ins: Number(s.ins), upd: Number(s.upd), hot: Number(s.hot), n: Number(c.n) };
  };

  const scenarios: Scenario[] = [
    {
      id: "b",
      name: "baseline (b): bare Elysia + 1 indexed SELECT",
      to: base,
      args: { mode: "base_lead", leads: LEADS, key: "none" },
      expect: "2xx",
      sample: () => expectStatus(`${base.url}/lead?id=7`, {}, 200, (b) => (b?.lead?.lead_id === 7 ? null : `unexpected body ${JSON.stringify(b)}`)),
    },
    {
      id: "2",
      name: "get lead `r=leads/{id}`",
      to: svc,
      args: { mode: "lead", leads: LEADS, keys: keys.lead.file },
      keys: { n: KEY_COUNTS.lead, limit: LIMITS.api_v1 },
      expect: "2xx",
      sample: () =>
        expectStatus(`${svc.url}/hooks/api_v1.php?r=leads/7`, H(keys.lead.keys[0]), 200, (b) =>
          b?.lead?.lead_id === 7 && b?.lead?.phone === "5550000007" ? null : `unexpected body ${JSON.stringify(b)}`),
      baseline: "b",
      target: ratioTarget(0.8),
    },
    {
      id: "3",
      name: "CTI lookup `r=cti/lookup&phone=`",
      to: svc,
      args: { mode: "cti", phones: LEADS, keys: keys.cti.file },
      keys: { n: KEY_COUNTS.cti, limit: LIMITS.api_v1 },
      expect: "2xx",
      sample: () =>
        expectStatus(`${svc.url}/hooks/api_v1.php?r=cti/lookup&phone=5550000042`, H(keys.cti.keys[0]), 200, (b) =>
          b?.found === true && b?.lead_id === 42 ? null : `unexpected body ${JSON.stringify(b)}`),
      baseline: "b",
      target: ratioTarget(0.8),
    },
    {
      id: "8",
      name: "CTI dial `POST r=cti/dial` (queues a dial)",
      to: svc,
      args: { mode: "dial", phones: LEADS, keys: keys.dial.file },
      keys: { n: KEY_COUNTS.dial, limit: LIMITS.api_v1 },
      expect: "2xx",
      sample: () =>
        expectStatus(
          `${svc.url}/hooks/api_v1.php?r=cti/dial`,
          { method: "POST", headers: { "X-Api-Key": keys.dial.keys[0], "Content-Type": "application/json" }, body: JSON.stringify({ phone: "5550000042" }) },
          200,
          (b) => (b?.ok === true && b?.lead_id === 42 ? null : `unexpected body ${JSON.stringify(b)}`),
        ),
      before: async () => Number((await sql`select count(*)::int as n from dials`)[0].n),
      after: async (r, before: number) => {
        const n = Number((await sql`select count(*)::int as n from dials`)[0].n) - before;
        return n >= r.requests ? [`${n} dials queued`] : [`FAIL: ${n} dials queued for ${r.requests} requests`];
      },
      baseline: "b",
    },
    {
      id: "4",
      name: `conversation (${3 * CONV_ROWS} rows behind it)`,
      to: svc,
      args: { mode: "conv", id: convLead, keys: keys.conv.file },
      keys: { n: KEY_COUNTS.conv, limit: LIMITS.api_v1 },
      expect: "2xx",
      sample: () =>
        expectStatus(`${svc.url}/hooks/api_v1.php?r=conversations/${convLead}`, H(keys.conv.keys[0]), 200, (b) =>
          b?.ok === true && b?.entries?.length === 200 ? null : `expected 200 entries, got ${b?.entries?.length}`),
      baseline: "b",
    },
    {
      id: "5",
      name: "lead intake `POST lead_intake.php` (new phone each)",
      to: svc,
      args: { mode: "intake", keys: keys.intake.file },
      keys: { n: KEY_COUNTS.intake, limit: LIMITS.intake },
      expect: "2xx",
      sample: () =>
        expectStatus(
          `${svc.url}/hooks/lead_intake.php`,
          {
            method: "POST",
            headers: { "X-Api-Key": keys.intake.keys[0], "Content-Type": "application/json" },
            body: JSON.stringify({ phone: "(777) 000-0001", list_id: 101, first_name: "Sample" }),
          },
          200,
          (b) => (b?.ok === true && b?.deduped === false && typeof b?.lead_id === "number" ? null : `unexpected body ${JSON.stringify(b)}`),
        ),
      before: leadCount,
      after: async (r, before: number) => {
        const made = (await leadCount()) - before;
        return made >= r.requests ? [`${made} leads created`] : [`FAIL: only ${made} leads created for ${r.requests} requests`];
      },
      baseline: "b",
    },
    {
      id: "6",
      name: "KPI batch, 500 points (-c4)",
      to: svc,
      conns: 4,
      args: { mode: "kpi", points: 500, keys: keys.kpi.file },
      keys: { n: KEY_COUNTS.kpi, limit: LIMITS.kpi },
      expect: "2xx",
      sample: async () => {
        const points = Array.from({ length: 500 }, (_, j) => ({ metric_key: `bench_m${j % 10}`, value: j, day: "2026-11-22", dim_key: `sample-${j}` }));
        return expectStatus(
          `${svc.url}/hooks/kpi_ingest.php`,
          { method: "POST", headers: { "X-Api-Key": keys.kpi.keys[0], "Content-Type": "application/json" }, body: JSON.stringify({ points }) },
          200,
          (b) => (b?.ok === true && b?.upserts === 500 ? null : `unexpected body ${JSON.stringify(b).slice(0, 200)}`),
        );
      },
      before: async () => Number((await sql`select count(*)::int as n from kpi_points`)[0].n),
      after: async (r, before: number) => {
        const n = Number((await sql`select count(*)::int as n from kpi_points`)[0].n) - before;
        return n >= r.requests * 500 ? [`${n} points stored`] : [`FAIL: ${n} points stored for ${r.requests} batches of 500`];
      },
      target: (_ratio, r) => ({ text: "p50 < 50 ms", pass: (r.p50_us ?? Infinity) < 50_000 }),
    },
    {
      id: "a",
      name: "baseline (a): bare Elysia, small JSON",
      to: base,
      args: { mode: "plain", leads: LEADS, key: "none" },
      expect: "2xx",
      sample: () => expectStatus(`${base.url}/plain`, {}, 200),
    },
    {
      id: "7",
      name: "over-limit key `r=leads/{id}` (all 429)",
      to: svc,
      args: { mode: "overlimit", id: 7, keys: join(suite.work, "keys-overlimit.txt") },
      expect: "refused",
      sample: async () => {
        await sql`select setval(format('rate_seq_%s', ${overKeyId}::bigint)::regclass, 100000)`;
        await sql`
          insert into rate_windows (key_id, hour, base)
          values (${overKeyId}, floor(extract(epoch from now()) / 3600)::bigint, 0)
          on conflict (key_id, hour) do update set base = 0`;
        return expectStatus(`${svc.url}/hooks/api_v1.php?r=leads/7`, H(overKey), 429, (b) =>
          b?.error === "rate_limited" ? null : `unexpected body ${JSON.stringify(b)}`);
      },
      before: statsRc,
      after: async (r, before: Awaited<ReturnType<typeof statsRc>>) => {
        const after = await statsRc();
        const upd = after.upd - before.upd;
        const counted = after.n - before.n;
        const out = [`${upd + after.ins - before.ins} rate_windows writes for ${r.requests} requests`];
        // The key is far past every family's threshold (600): its refusals change no answer this hour
        // and are not drawn at all (below that they would be, in batches).
        if (counted > 10) out.push(`FAIL: counter grew by ${counted} for refusals past every threshold, expected 0`);
        else out.push(`counter grew by ${counted}`);
        if (upd > Math.max(100, r.requests / 100)) out.push(`FAIL: rate_windows written per request (${upd} for ${r.requests} requests)`);
        return out;
      },
      baseline: "a",
      target: ratioTarget(0.6),
    },
  ];

  const results: Record<string, Result> = {};

  /**
   * The scenario measured in ROUNDS slices, each right after a slice of its baseline of the same
   * length: the slices' ratios, and the scenario's slices merged into one result.
   */
  async function pairedRounds(s: Scenario, conns: number): Promise<{ r: Result; ratios: number[] }> {
    const b = scenarios.find((x) => x.id === s.baseline)!;
    const { ref, xs } = await suite.slices({ to: b.to, args: b.args, conns }, [{ to: s.to, args: s.args, conns }]);
    if (ref.socket_errors || ref.status_errors) throw new Error(`baseline slices failed: ${ref.status_errors} non-2xx, ${ref.socket_errors} socket errors`);
    return xs[0];
  }

  const poolSeen = { svc: 0, base: 0 };
  for (const s of scenarios) {
    if (!suite.wanted(s.id) && !["a", "b"].includes(s.id)) continue;
    const conns = s.conns ?? CONNS;
    const checks: string[] = [];
    const sampleErr = s.sample ? await s.sample() : null;
    if (sampleErr) checks.push(`FAIL: ${sampleErr}`);
    suite.say(`${s.id}: ${s.name}: warm-up`);
    const warm = await suite.wrk({ to: s.to, args: s.args, conns }, WARMUP, false);
    const state = s.before ? await s.before() : undefined;
    suite.say(`${s.id}: measuring`);
    const paired = s.baseline !== undefined && s.target !== undefined && results[s.baseline] !== undefined;
    const slices = paired ? await pairedRounds(s, conns) : null;
    const r = slices ? slices.r : await suite.wrk({ to: s.to, args: s.args, conns }, DURATION);
    if (slices) checks.push(`ratio per slice ${slices.ratios.map(pct).join(" / ")}`);
    results[s.id] = r;
    const [pc] = await sql`
      select count(*) filter (where application_name = 'leadline-serve')::int as svc,
             count(*) filter (where application_name = 'leadline-bench-baseline')::int as base
      from pg_stat_activity`;
    poolSeen.svc = Math.max(poolSeen.svc, Number(pc.svc));
    poolSeen.base = Math.max(poolSeen.base, Number(pc.base));
    if (s.after) checks.push(...(await s.after(r, state)));
    checks.push(...answerChecks(r, warm, s.expect));
    if (s.expect === "refused") checks.push("sample: 429 rate_limited");
    if (s.keys) {
      const perKey = Math.ceil((warm.requests + r.requests + 1) / s.keys.n) + 1;
      if (perKey > s.keys.limit) checks.push(`FAIL: ~${perKey} requests per key exceeds the hourly limit ${s.keys.limit}: add keys`);
      else checks.push(`${s.keys.n} keys, ≤ ~${perKey}/${s.keys.limit} per key`);
      if (warm.requests < s.keys.n) checks.push(`note: the warm-up used only ${warm.requests} of ${s.keys.n} keys (cold key cache)`);
    }
    const row: Row = { id: s.id, name: s.name, r, checks };
    if (s.baseline && results[s.baseline]) {
      row.vs = { ratio: slices ? median(slices.ratios) : r.rps / results[s.baseline].rps, of: s.baseline };
    }
    if (s.target) row.target = s.target(row.vs?.ratio, r);
    suite.add(row);
  }

  return (
    `wrk -t${THREADS} -c${CONNS} (KPI -c4) -d${DURATION}s after ${WARMUP}s warm-up; get lead, CTI lookup and over-limit in ${ROUNDS} slices ` +
    `alternating with their baseline. database connections seen: service ${poolSeen.svc}, baseline ${poolSeen.base} ` +
    `(pool max ${options.poolOverride ?? `${POOL} for the baseline, the service's default for it`}). Ratios are against baselines measured in this run.`
  );
});
