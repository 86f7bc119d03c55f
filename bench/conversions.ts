// The conversions suite (bench/README.md): a Google Ads conversions feed of 100,000 rows
// (GET /conversions/{feed_id}.csv) fetched whole, beside another organization's 100,000 leads and
// calls in the same 90 days (which the calls part of the feed reads past): the time to the first
// byte and to the last, the bytes, the service's resident memory before and at its peak during the
// fetch, the CPU of the service and of PostgreSQL; then a reader that stops after the first chunk,
// to show that the feed holds no connection while its client is not reading.
//
//   node_modules/.bin/bun bench/conversions.ts      (or BENCH_SUITES=conversions make bench)
//
// Suite options: BENCH_FEED_ROWS (default 100,000), BENCH_FETCHES (default 3, the median reported).
import { createHash } from "node:crypto";
import { median, num, rssOf, Suite } from "./lib";

const suite = new Suite("conversions", "Conversions feed", ["feed"]);
const ROWS = num("BENCH_FEED_ROWS", 100_000);
const FETCHES = num("BENCH_FETCHES", 3);
const SECRET = "bench-feed-secret-0123456789abcdef";
const AUTH = "Basic " + Buffer.from(`bench:${SECRET}`).toString("base64");

interface Fetch {
  ttfb_ms: number;
  total_ms: number;
  bytes: number;
  rows: number;
  rss_before_kib: number;
  rss_peak_kib: number;
  app_cpu_ms: number;
  pg_cpu_ms: number;
}

await suite.run(async () => {
  const sql = await suite.database();
  const t0 = Date.now();
  await suite.seedAccount();
  await sql`update orgs set timezone = 'America/Chicago' where id = 1`;
  await sql`insert into orgs (id, name) values (2, 'Other')`;
  await sql`insert into campaigns (id, org_id, name) values ('OTHER', 2, 'Other')`;
  await sql`insert into lists (id, campaign_id, name) values (201, 'OTHER', 'Web')`;
  await sql`insert into calendars (id, org_id, name, timezone, capacity) values (1, 1, 'Estimates', 'America/Chicago', 1000000)`;
  // Two fifths new leads, two fifths calls of those leads, a fifth bookings: ROWS conversions of one
  // action each, spread over the last 88 days (an hour back: a call or booking is never ahead of the fetch).
  const leads = Math.round(ROWS * 0.4);
  const bookings = ROWS - 2 * leads;
  const touch = (org: string) => sql`jsonb_build_object('pool', ${org}::text, 'visitor', 'v' || i, 'source', 'google', 'medium', 'cpc',
    'gclid', 'Cj0KCQiA' || md5(${org}::text || i), 'first_seen_at', '2026-01-01T00:00:00.000Z')`;
  for (const [list, org, n] of [[101, "acme-site", leads], [201, "other-site", ROWS]] as const) {
    await sql`
      insert into leads (list_id, phone, first_name, created_at, attribution)
      select ${list}::bigint, lpad((${list}::bigint * 10000000 + i)::text, 10, '0'), 'Lead ' || i, now() - interval '1 hour' - make_interval(secs => (i * 7691 % (88 * 86400))), ${touch(org)}
      from generate_series(1, ${n}::int) i`;
    await sql`
      insert into calls (lead_id, phone, status, secs, agent, occurred_at)
      select l.id, l.phone, 'ANSWERED', 120, 'agent7', l.created_at + interval '5 minutes'
      from leads l where l.list_id = ${list}::bigint`;
  }
  // In statements of 1,000: the capacity trigger takes an advisory lock per slot, held to the commit.
  for (let done = 0; done < bookings; done += 1000) {
    await sql`
      insert into appointments (calendar_id, link_slug, slot_epoch, lead_id, name, phone, token_selector, token_hash, created_at)
      select 1, 'estimate', extract(epoch from l.created_at)::bigint + 86400 + l.id * 60, l.id, l.first_name, l.phone,
             decode(md5('s' || l.id), 'hex'), decode(md5('h' || l.id), 'hex'), l.created_at + interval '10 minutes'
      from leads l where l.list_id = 101 order by l.id offset ${done}::int limit ${Math.min(1000, bookings - done)}::int`;
  }
  await sql`
    insert into conversion_feeds (id, org_id, secret_hash, actions)
    values ('bench', 1, ${createHash("sha256").update(SECRET).digest()}, ${sql.json([
      { name: "Phone call", on: "call", min_secs: 60, value: 25, currency: "USD" },
      { name: "Lead", on: "lead", min_secs: 0, value: 10, currency: "USD" },
      { name: "Booking", on: "booking", min_secs: 0, value: 50, currency: "USD" },
    ])})`;
  await sql`vacuum analyze leads, calls, appointments`;
  suite.say(`seeded ${ROWS} conversions of org 1 and ${2 * ROWS} leads and calls of org 2 in ${Date.now() - t0} ms`);

  const svc = await suite.service();
  const pid = (svc as { child: { pid: number } }).child.pid;
  const url = `${svc.url}/conversions/bench.csv`;

  async function fetchAll(): Promise<Fetch> {
    let peak = rssOf(pid);
    const before = peak;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 10);
    let ttfb = 0;
    let bytes = 0;
    let lines = 0;
    const r = await suite.measure([svc], false, async () => {
      const start = performance.now();
      const res = await fetch(url, { headers: { authorization: AUTH } });
      if (res.status !== 200) throw new Error(`feed answered ${res.status}`);
      const reader = res.body!.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (bytes === 0) ttfb = performance.now() - start;
        bytes += value.byteLength;
        for (const b of value) if (b === 10) lines++;
      }
      const us = (performance.now() - start) * 1000;
      return { requests: 1, duration_us: us, p50_us: us, p99_us: us, status_errors: 0, socket_errors: 0 };
    });
    clearInterval(sampler);
    return {
      ttfb_ms: ttfb,
      total_ms: r.duration_us / 1000,
      bytes,
      rows: lines - 2,
      rss_before_kib: before,
      rss_peak_kib: peak,
      app_cpu_ms: r.cpu.app / 1000,
      pg_cpu_ms: r.cpu.pg / 1000,
    };
  }

  const fetches: Fetch[] = [];
  for (let i = 0; i < FETCHES; i++) fetches.push(await fetchAll());
  for (const f of fetches) if (f.rows !== ROWS) throw new Error(`the feed had ${f.rows} rows, not ${ROWS}`);

  // A reader that takes the first chunk and stops: what the service holds of the database meanwhile.
  const res = await fetch(url, { headers: { authorization: AUTH } });
  const reader = res.body!.getReader();
  await reader.read();
  await Bun.sleep(2000);
  const [held] = await sql<{ busy: number; idle_in_tx: number }[]>`
    select count(*) filter (where state = 'active')::int as busy, count(*) filter (where state like 'idle in transaction%')::int as idle_in_tx
    from pg_stat_activity where datname = current_database() and application_name like 'leadline%'`;
  await reader.cancel();

  const m = (k: keyof Fetch) => median(fetches.map((f) => f[k]));
  const feed = {
    rows: ROWS,
    fetches,
    ttfb_ms: m("ttfb_ms"),
    total_ms: m("total_ms"),
    bytes: m("bytes"),
    rss_before_mib: m("rss_before_kib") / 1024,
    rss_peak_mib: m("rss_peak_kib") / 1024,
    app_cpu_ms: m("app_cpu_ms"),
    pg_cpu_ms: m("pg_cpu_ms"),
    paused_reader: held,
  };
  suite.extra.feed = feed;
  const f1 = (x: number) => x.toFixed(0);
  suite.notes.push(
    `| conversions | first byte ms | whole feed ms | rows/s | MB | service RSS before → peak MiB | CPU ms service / PostgreSQL | each fetch ms |`,
    "|---:|---:|---:|---:|---:|---:|---:|---|",
    `| ${ROWS} | ${f1(feed.ttfb_ms)} | ${f1(feed.total_ms)} | ${f1(ROWS / (feed.total_ms / 1000))} | ${(feed.bytes / 1e6).toFixed(1)} | ` +
      `${f1(feed.rss_before_mib)} → ${f1(feed.rss_peak_mib)} | ${f1(feed.app_cpu_ms)} / ${f1(feed.pg_cpu_ms)} | ${fetches.map((f) => f1(f.total_ms)).join(" / ")} |`,
    "",
    `A reader that took the first chunk and stopped for 2 s: ${held.busy} statement(s) running and ${held.idle_in_tx} transaction(s) open on the database meanwhile ` +
      "(the feed reads a page of time, about 1,000 conversions, per statement and holds nothing between pages).",
  );
  return `${ROWS} conversions of one organization (two fifths new leads, two fifths calls, a fifth bookings, one action each) over 88 days, beside ${ROWS} leads and ${ROWS} calls of another organization; median of ${FETCHES} fetches, one at a time.`;
});
