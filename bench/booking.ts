// The booking suite (issue 9, bench/README.md): slots reads/s for a calendar with a 14-day horizon
// and 30-minute slots, and books/s into distinct slots, beside the bare-handler (a) and
// one-SELECT (b) baselines of the same run. Target: slots reads at least half of baseline b.
//
//   node_modules/.bin/bun bench/booking.ts      (or `make bench`; options in bench/README.md)
//
// Suite option: BENCH_ONLY=slots or book (the baselines always run).
import { answerChecks, options, type Load, type Result, type Sql, Suite } from "./lib";

const suite = new Suite("booking", "Booking", ["slots", "slots_plain", "book"]);
const { duration: DURATION, warmup: WARMUP, conns: CONNS, threads: THREADS } = options;
const LEADS = 10_000;
const BOOK_STEP = 300; // the book calendar's 5-minute slots

async function seed(sql: Sql, serviceUrl: string, now: number): Promise<{ bookBase: number }> {
  await suite.seedAccount();
  await sql`insert into leads (list_id, phone, first_name) select 101, '555' || lpad(g::text, 7, '0'), 'Lead ' || g from generate_series(1, ${LEADS}) g`;
  const days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
  const office = Object.fromEntries(days.map((d) => [d, [["09:00", "17:00"]]]));
  const allDay = Object.fromEntries(days.map((d) => [d, [["00:00", "24:00"]]]));
  await sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours) values
    (1, 1, 'Estimates', 'America/Chicago', 30, 1, 0, 14, ${sql.json(office)}),
    (2, 1, 'Bench books', 'UTC', 5, 1, 0, 366, ${sql.json(allDay)})`;
  await sql`insert into calendar_links (slug, calendar_id) values ('bench-slots', 1), ('bench-book', 2)`;
  // A third of the slots read are taken: the read counts real seats.
  const res = await fetch(`${serviceUrl}/book/api.php?action=slots&s=bench-slots`).then((r) => r.json() as Promise<{ slots: { epoch: number }[] }>);
  const taken = res.slots.filter((_, i) => i % 3 === 0).map((s) => s.epoch);
  await sql`insert into appointments (calendar_id, link_slug, slot_epoch, name, phone, token_selector, token_hash)
            select 1, 'bench-slots', e, 'Seeded', '5550000001', decode(md5(e::text), 'hex'), decode(md5(e::text), 'hex')
            from unnest(${taken}::int8[]) e`;
  suite.say(`seeded ${LEADS} leads, ${res.slots.length} open slots (${taken.length} of them then taken)`);
  // Books start an hour from now on the 5-minute grid of the all-day UTC calendar.
  return { bookBase: Math.ceil((now + 3600_000) / 1000 / BOOK_STEP) * BOOK_STEP };
}

await suite.run(async () => {
  const sql = await suite.database();
  const svc = await suite.service();
  const base = await suite.baseline();
  const { bookBase } = await seed(sql, svc.url, Date.now());

  /** Warm-up (with `warmArgs`, when they differ), then the measured run. */
  const run = async (load: Load, warmArgs = load.args): Promise<Result> => {
    await suite.wrk({ ...load, args: warmArgs }, WARMUP, false);
    return suite.wrk(load, DURATION);
  };
  const a = await run({ to: base, args: { mode: "plain" } });
  suite.add({ id: "a", name: "(a) bare handler, small JSON", r: a, checks: answerChecks(a) });
  const b = await run({ to: base, args: { mode: "base_lead", leads: LEADS } });
  suite.add({ id: "b", name: "(b) one indexed SELECT", r: b, checks: answerChecks(b) });

  if (suite.wanted("slots")) {
    const s = await run({ to: svc, args: { mode: "slots", slug: "bench-slots" } });
    const sample = await fetch(`${svc.url}/book/api.php?action=slots&s=bench-slots`).then((r) => r.json() as Promise<{ slots: unknown[] }>);
    const ratio = s.rps / b.rps;
    suite.add({
      id: "slots",
      name: `slots read (14 days, 30-min slots: ${sample.slots.length} open)`,
      r: s,
      vs: { ratio, of: "b" },
      target: { text: "≥ 50% of b", pass: ratio >= 0.5 },
      checks: answerChecks(s),
    });
    const plain = await run({ to: svc, args: { mode: "slots_plain", slug: "bench-slots" } });
    suite.add({
      id: "slots_plain",
      name: "slots read, no Accept-Encoding (reference: Bun writes large uncompressed answers slowly)",
      r: plain,
      vs: { ratio: plain.rps / b.rps, of: "b" },
      checks: answerChecks(plain),
    });
  }

  if (suite.wanted("book")) {
    // Warm-up and measurement book disjoint ranges of slots.
    const measuredFrom = 50_000;
    // The book calendar's candidates (a year of 5-minute slots) are computed on its first request.
    await fetch(`${svc.url}/book/api.php?action=book`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ slug: "bench-book", epoch: bookBase - BOOK_STEP, name: "Warm", phone: "5550000000" }),
    });
    const book = { mode: "book", slug: "bench-book", base: bookBase, step: BOOK_STEP };
    const k = await run({ to: svc, args: { ...book, offset: measuredFrom } }, { ...book, offset: 0 });
    const [{ n }] = await sql<{ n: number }[]>`
      select count(*)::int as n from appointments where calendar_id = 2 and slot_epoch >= ${bookBase + measuredFrom * BOOK_STEP}`;
    suite.add({
      id: "book",
      name: "book into distinct slots",
      r: k,
      vs: { ratio: k.rps / b.rps, of: "b" },
      checks: [n >= k.requests ? `${n} of ${k.requests} booked` : `FAIL: only ${n} of ${k.requests} booked`, ...answerChecks(k)],
    });
  }
  return `wrk -t${THREADS} -c${CONNS}, ${WARMUP}s warm-up + ${DURATION}s per row.`;
});
