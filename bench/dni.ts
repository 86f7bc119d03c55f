// The number insertion suite (issue 8, bench/README.md): a pool of BENCH_NUMBERS numbers, one or
// two instances of the service, and the DNI baseline of bench/baseline.ts (an Elysia POST handler
// that parses the JSON body and answers a lease-shaped JSON object with the CORS header):
//   lease   returning visitors (BENCH_VISITORS of them, leased beforehand) leasing again:
//           answered from the instance's LRU, renewals written behind
//   beat    the same visitors' heartbeats
//   new     a visitor never seen before on every request: allocation under the pool's advisory
//           lock, on one instance, then on two (two wrk, half the connections each)
// Every request comes from one of BENCH_ADDRESSES X-Forwarded-For addresses at random
// (TRUST_PROXY=loopback trusts it from wrk on 127.0.0.1): the per-address limit is counted as in
// production, and at these volumes never reached. The warm scenarios alternate with the baseline
// in BENCH_ROUNDS slices and report the median ratio.
//
//   node_modules/.bin/bun bench/dni.ts      (or `make bench`; options in bench/README.md)
//
// Suite options: BENCH_VISITORS (default 20000), BENCH_NUMBERS (default 200000), BENCH_ADDRESSES
// (client addresses drawn from at random, default 65536), BENCH_ONLY (lease, beat, new).
import { answerChecks, median, num, options, pct, type Server, SLICE, Suite } from "./lib";

const suite = new Suite("dni", "Number insertion", ["lease", "beat", "new"]);
const { duration: DURATION, warmup: WARMUP, rounds: ROUNDS, conns: CONNS, threads: THREADS } = options;
const VISITORS = num("BENCH_VISITORS", 20_000);
const NUMBERS = num("BENCH_NUMBERS", 200_000);
const ADDRESSES = num("BENCH_ADDRESSES", 65_536);
const POOL_KEY = "bench";

/** Leases every warm visitor once through `svc`, 64 at a time. */
async function leaseVisitors(svc: Server): Promise<void> {
  let next = 1;
  let fallbacks = 0;
  const worker = async () => {
    while (next <= VISITORS) {
      const i = next++;
      const r = await fetch(`${svc.url}/hooks/dni.php?action=lease`, {
        method: "POST",
        headers: { "x-forwarded-for": `10.200.${(i >> 8) & 255}.${i & 255}` },
        body: JSON.stringify({ pool: POOL_KEY, visitor: `w${i}` }),
      });
      const body = (await r.json()) as { fallback?: boolean };
      if (body.fallback !== false) fallbacks++;
    }
  };
  await Promise.all(Array.from({ length: 64 }, worker));
  if (fallbacks) throw new Error(`${fallbacks} warm visitors got no number: raise BENCH_NUMBERS`);
}

await suite.run(async () => {
  const sql = await suite.database();
  await suite.seedAccount();
  await sql`insert into dni_pools (key, org_id, name, fallback, placeholder, ttl_seconds)
            values (${POOL_KEY}, 1, 'bench', '5125550100', '5125550199', 1800)`;
  await sql`insert into dni_numbers (pool_key, number)
            select ${POOL_KEY}, '2' || lpad(i::text, 9, '0') from generate_series(1, ${NUMBERS}) as i`;
  await sql`vacuum analyze`;
  suite.say(`pool ${POOL_KEY}: ${NUMBERS} numbers`);

  const base = await suite.baseline();
  const env = { TRUST_PROXY: "loopback" };
  const one = await suite.service(env);
  const two = await suite.service(env);
  suite.say(`baseline ${base.url}, instances ${one.url} and ${two.url}; ${WARMUP}s warm-up + ${DURATION}s per scenario, -t${THREADS} -c${CONNS}`);

  const warm = { pool: POOL_KEY, visitors: VISITORS, addresses: ADDRESSES };
  if (suite.wanted("lease") || suite.wanted("beat")) {
    const t0 = Date.now();
    await leaseVisitors(one);
    suite.say(`${VISITORS} warm visitors leased in ${Date.now() - t0} ms`);
    // Warm scenarios in slices alternating with the baseline.
    const ref = { to: base, args: { mode: "dni_lease", ...warm } };
    await suite.wrk(ref, WARMUP, false);
    await suite.wrk({ to: one, args: { mode: "dni_lease", ...warm } }, WARMUP, false);
    const modes = (["lease", "beat"] as const).filter((m) => suite.wanted(m));
    const p = await suite.slices(ref, modes.map((m) => ({ to: one, args: { mode: `dni_${m}`, ...warm } })));
    suite.add({ id: "base", name: "baseline: bare Elysia POST handler", r: p.ref, checks: answerChecks(p.ref) });
    for (const [i, mode] of modes.entries()) {
      const { r, ratios } = p.xs[i];
      const ratio = median(ratios);
      suite.add({
        id: mode,
        name: mode === "lease" ? "warm lease (returning visitor)" : "warm heartbeat",
        r,
        vs: { ratio, of: "base" },
        target: { text: "≥ 60% of baseline", pass: ratio >= 0.6 },
        checks: [`ratio per slice ${ratios.map(pct).join(" / ")}`, ...answerChecks(r)],
      });
    }
  }

  if (suite.wanted("new")) {
    // New visitors: one instance, then two.
    const holdsBefore = Number((await sql`select count(*)::int as n from dni_hold_history`)[0].n);
    const fresh = { mode: "dni_new", pool: POOL_KEY, addresses: ADDRESSES };
    await suite.wrk({ to: one, args: fresh }, WARMUP, false);
    const newOne = await suite.wrk({ to: one, args: fresh }, DURATION);
    await suite.wrk({ to: [one, two], args: fresh }, WARMUP, false);
    const newTwo = await suite.wrk({ to: [one, two], args: fresh }, DURATION);
    const holdsAfter = Number((await sql`select count(*)::int as n from dni_hold_history`)[0].n);
    const [{ overlaps }] = await sql`
      select count(*)::int as overlaps from dni_hold_spans a join dni_hold_spans b
        on a.number = b.number and a.id < b.id and a.started_at < b.ends_at and b.started_at < a.ends_at`;
    suite.add({
      id: "new",
      name: "new-visitor lease, 1 instance",
      r: newOne,
      target: { text: "≥ 2,000/s, p99 < 50 ms", pass: newOne.rps >= 2000 && (newOne.p99_us ?? Infinity) < 50_000 },
      checks: answerChecks(newOne),
    });
    suite.add({
      id: "new-2",
      name: "new-visitor lease, 2 instances",
      r: newTwo,
      target: { text: "more than 1 instance", pass: newTwo.rps > newOne.rps },
      checks: [
        ...answerChecks(newTwo),
        overlaps ? `FAIL: ${overlaps} numbers held by two visitors at once` : "no number held by two visitors at once",
      ],
    });
    suite.notes.push(`New-visitor holds written (warm-ups included): ${holdsAfter - holdsBefore}.`);
  }
  return (
    `wrk -t${THREADS} -c${CONNS} (two instances: half each), ${WARMUP}s warm-up; warm scenarios in ${ROUNDS} slices of ${SLICE}s alternating with the baseline, ` +
    `new visitors ${DURATION}s; ${VISITORS} warm visitors, pool of ${NUMBERS} numbers, ${ADDRESSES} client addresses.`
  );
});
