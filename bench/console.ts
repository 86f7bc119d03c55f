// The console suite (bench/README.md): lead search and a lead's page with a 600-entry timeline,
// on 1,000,000 leads, at 16 concurrent users, beside get lead and the bare-SELECT baseline of the
// same run. Targets (issue 21): each console scenario's p99 under 50 ms.
//
//   node_modules/.bin/bun bench/console.ts      (or BENCH_SUITES=console make bench)
//
// Suite options: BENCH_ONLY (ids b, 2, s, p, l), BENCH_CONSOLE_LEADS (default 1,000,000).
import { expectStatus, num, options, type Result, type Row, Suite } from "./lib";

const suite = new Suite("console", "Console", ["b", "2", "s", "p", "l"]);
const { duration: DURATION, warmup: WARMUP } = options;
const CONNS = 16;
const LEADS = num("BENCH_CONSOLE_LEADS", 1_000_000);
const TIMELINE = 200; // per source: messages, calls, lead_events (600 rows)
const PASSWORD = "bench console password 1";
const ACME = Math.floor(LEADS * 0.9);

await suite.run(async () => {
  const sql = await suite.database();
  const t0 = Date.now();
  await suite.seedAccount();
  await sql`insert into orgs (id, name, company) values (2, 'Bolt', 'Bolt Plumbing')`;
  await sql`insert into campaigns (id, org_id, name) values ('BOLT', 2, 'Bolt')`;
  await sql`insert into lists (id, campaign_id, name) values (102, 'ACME', 'Ads'), (201, 'BOLT', 'Web')`;
  // Phones 5550000001.. in id order (ids are fresh bigserials); Acme has the first 90% (ids
  // 1..ACME, which the API key's get lead and the manager's searches pick from), Bolt the rest.
  await sql`
    insert into leads (list_id, phone, first_name, last_name, email, city, state, created_at)
    select case when i > ${ACME} then 201 when i % 2 = 0 then 102 else 101 end, '555' || lpad(i::text, 7, '0'),
           (array['James','Mary','John','Linda','Robert','Ann','Wei','Ivan','Sara','Omar'])[1 + i % 10] || (i % 97),
           'Last' || (i % 4999), case when i % 3 = 0 then 'lead' || i || '@example.com' else '' end,
           'Springfield', 'IL', timestamptz '2025-01-01' + (i::float / ${LEADS}) * interval '700 days'
    from generate_series(1, ${LEADS}) as i`;
  const [{ id: convLead }] = await sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, last_name) values (101, '5559990000', 'Conver', 'Sation') returning id::int`;
  await sql`
    insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, body, status, created_at)
    select ${convLead}, 1, 'sms', case when i % 2 = 0 then 'out' else 'in' end, 'user', 'agent7',
           'Message body number ' || i || ', a sentence or two of text as an SMS would have.', 'delivered',
           now() - make_interval(mins => i * 3)
    from generate_series(1, ${TIMELINE}) as i`;
  await sql`
    insert into calls (lead_id, phone, to_number, status, secs, agent, occurred_at)
    select ${convLead}, '5559990000', '5551112222', 'ANSWERED', 30 + i, 'agent7', now() - make_interval(mins => i * 3 + 1)
    from generate_series(1, ${TIMELINE}) as i`;
  await sql`
    insert into lead_events (lead_id, event, label, actor, actor_role, note, created_at)
    select ${convLead}, 'appointment_booked', 'Appointment ' || i, 'agent7', 'agent', 'note ' || i, now() - make_interval(mins => i * 3 + 2)
    from generate_series(1, ${TIMELINE}) as i`;
  const { file: keyFile, keys } = await suite.keys("lead", 3000, ["leads:read"]);
  await sql`vacuum analyze leads, messages, calls, lead_events`;
  suite.say(`seeded ${LEADS + 1} leads and a ${3 * TIMELINE}-row timeline in ${Date.now() - t0} ms`);

  const svc = await suite.service();
  const base = await suite.baseline();
  // A manager of Acme, signed in once; every request carries the session's cookie.
  const hash = await Bun.password.hash(PASSWORD, { algorithm: "argon2id" });
  await sql`insert into users (id, org_id, name, email, role, password_hash) values ('bench-manager', 1, 'Bench Manager', 'bench@example.com', 'manager', ${hash})`;
  const login = await fetch(`${svc.url}/console/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ email: "bench@example.com", password: PASSWORD, next: "/console/inbox" }).toString(),
  });
  const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0];
  if (login.status !== 303 || !cookie.includes("=")) throw new Error(`console sign-in failed: ${login.status}`);
  const C = { headers: { cookie } };
  /** A sample request of a page: its status and a check of its HTML. */
  const samplePage = async (path: string, check: (html: string) => string | null = () => null) => {
    const r = await fetch(svc.url + path, C);
    const text = await r.text();
    return r.status !== 200 ? `sample request: expected 200, got ${r.status}` : check(text);
  };

  const scenarios: { id: string; name: string; to: typeof svc; args: Record<string, string | number>; sample: () => Promise<string | null>; p99?: boolean }[] = [
    {
      id: "b",
      name: "baseline (b): bare Elysia + 1 indexed SELECT",
      to: base,
      args: { mode: "base_lead", leads: LEADS, key: "none" },
      sample: () => expectStatus(`${base.url}/lead?id=7`, {}, 200),
    },
    {
      id: "2",
      name: "get lead `r=leads/{id}` (API key)",
      to: svc,
      args: { mode: "lead", leads: ACME, keys: keyFile },
      sample: () => expectStatus(`${svc.url}/hooks/api_v1.php?r=leads/7`, { headers: { "X-Api-Key": keys[0] } }, 200),
    },
    {
      id: "s",
      name: "console lead search by phone `/console/leads?q=(555) …`",
      to: svc,
      args: { mode: "console_search", leads: ACME, cookie },
      sample: () => samplePage(`/console/leads?q=${encodeURIComponent("(555) 000-0007")}`, (h) => (h.includes('href="/console/leads/7"') ? null : "lead 7 not found")),
      p99: true,
    },
    {
      id: "p",
      name: "console leads, first page of the organization (no filter)",
      to: svc,
      args: { mode: "console_leads", cookie },
      sample: () => samplePage("/console/leads"),
      p99: true,
    },
    {
      id: "l",
      name: `console lead page, ${3 * TIMELINE}-row timeline (200 shown)`,
      to: svc,
      args: { mode: "console_lead", id: convLead, cookie },
      sample: () => samplePage(`/console/leads/${convLead}`, (h) => ((h.match(/<li class="tl /g) ?? []).length === 200 ? null : "expected 200 entries")),
      p99: true,
    },
  ];

  const results: Record<string, Result> = {};
  for (const s of scenarios) {
    if (!suite.wanted(s.id) && !["b"].includes(s.id)) continue;
    const checks: string[] = [];
    const err = await s.sample();
    if (err) checks.push(`FAIL: ${err}`);
    suite.say(`${s.id}: ${s.name}: warm-up`);
    await suite.wrk({ to: s.to, args: s.args, conns: CONNS }, WARMUP, false);
    suite.say(`${s.id}: measuring`);
    const r = await suite.wrk({ to: s.to, args: s.args, conns: CONNS }, DURATION);
    results[s.id] = r;
    if (r.status_errors || r.socket_errors) checks.push(`FAIL: ${r.status_errors} non-2xx, ${r.socket_errors} socket errors`);
    const row: Row = { id: s.id, name: s.name, r, checks };
    if (s.id !== "b" && results.b) row.vs = { ratio: r.rps / results.b.rps, of: "b" };
    if (s.p99) row.target = { text: "p99 < 50 ms", pass: (r.p99_us ?? Infinity) < 50_000 };
    suite.add(row);
  }
  return `wrk -c${CONNS} -d${DURATION}s after ${WARMUP}s warm-up, ${LEADS} leads (90% in the signed-in manager's organization, which every search and get lead picks from); p99 is wrk's latency (client-measured, so it includes the server's time).`;
});
