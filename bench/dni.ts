// The number insertion suite (issue 8, bench/README.md): a pool of BENCH_NUMBERS numbers, one or
// two instances of the service, and the DNI baseline of bench/baseline.ts (an Elysia POST handler
// that parses the JSON body and answers a lease-shaped JSON object with the CORS header):
//   lease   returning visitors (BENCH_VISITORS of them, leased beforehand) leasing again:
//           answered from the instance's LRU, renewals written behind
//   beat    the same visitors' heartbeats
//   event   the same visitors' browser events (pageviews), written behind in batches
//   new     a visitor never seen before on every request: allocation under the pool's advisory
//           lock, on one instance, then on two and three (one wrk each, the connections split),
//           then two instances each on a pool of its own; the lock's hold time per batch and
//           the batch size from pg_stat_statements
// Every request comes from one of BENCH_ADDRESSES X-Forwarded-For addresses at random
// (TRUST_PROXY=loopback trusts it from wrk on 127.0.0.1): the per-address limit is counted as in
// production, and at these volumes never reached. The warm scenarios alternate with the baseline
// in BENCH_ROUNDS slices and report the median ratio.
//
//   node_modules/.bin/bun bench/dni.ts      (or `make bench`; options in bench/README.md)
//
// Suite options: BENCH_VISITORS (default 20000), BENCH_NUMBERS (default 200000), BENCH_ADDRESSES
// (client addresses drawn from at random, default 65536), BENCH_ONLY (lease, beat, event, new).
import { answerChecks, median, num, options, pct, type Result, type Server, SLICE, Suite } from "./lib";

const suite = new Suite("dni", "Number insertion", ["lease", "beat", "event", "new"]);
const { duration: DURATION, warmup: WARMUP, rounds: ROUNDS, conns: CONNS, threads: THREADS } = options;
const VISITORS = num("BENCH_VISITORS", 20_000);
const NUMBERS = num("BENCH_NUMBERS", 200_000);
const ADDRESSES = num("BENCH_ADDRESSES", 65_536);
const POOL_KEY = "bench";
/** The second pool, for two instances on different pools. */
const POOL_KEY_2 = "bench2";

/**
 * The pool lock per allocation batch, from the window's statements: batch size (new-visitor
 * leases per allocation statement) and hold time (the allocation statement's mean execution plus
 * a commit's: the lock is taken at the end of the first statement and released by the commit,
 * whose WAL flush pg_stat_statements does not time; the mean WAL sync of the window stands for it).
 */
function lockStats(r: Result, flush: Flush): { batches: number; batch: number; alloc_us: number; commit_us: number; flush_us: number; hold_us: number } | null {
  if (!r.db) return null;
  let calls = 0;
  let ms = 0;
  let commits = 0;
  let commitMs = 0;
  for (const [q, v] of r.db) {
    if (q.includes("fresh as (") && q.includes("dni_holds")) {
      calls += v.calls;
      ms += v.ms;
    } else if (/^commit$/i.test(q.trim())) {
      commits += v.calls;
      commitMs += v.ms;
    }
  }
  if (!calls) return null;
  const alloc = (ms * 1000) / calls;
  const commit = commits ? (commitMs * 1000) / commits : 0;
  const flushUs = flush.syncs > 0 ? (flush.ms * 1000) / flush.syncs : 0;
  return { batches: calls, batch: r.requests / calls, alloc_us: alloc, commit_us: commit, flush_us: flushUs, hold_us: alloc + commit + flushUs };
}

/** WAL syncs in a window and their time (pg_stat_wal, with track_wal_io_timing): a commit's flush. */
interface Flush {
  syncs: number;
  ms: number;
}

/** Leases every warm visitor once through `svc`, 64 at a time. */
async function leaseVisitors(svc: Server): Promise<void> {
  let next = 1;
  let fallbacks = 0;
  const worker = async () => {
    while (next <= VISITORS) {
      const i = next++;
      // An answer other than 200 (a 503 on a host too busy to answer in time) is asked again.
      let body: { fallback?: boolean } = {};
      for (let attempt = 1; ; attempt++) {
        const r = await fetch(`${svc.url}/hooks/dni.php?action=lease`, {
          method: "POST",
          headers: { "x-forwarded-for": `10.200.${(i >> 8) & 255}.${i & 255}` },
          body: JSON.stringify({ pool: POOL_KEY, visitor: `w${i}` }),
        });
        if (r.status === 200) {
          body = (await r.json()) as { fallback?: boolean };
          break;
        }
        const text = await r.text();
        if (attempt === 5) throw new Error(`warm lease of w${i}: HTTP ${r.status} ${text.slice(0, 200)}`);
        await Bun.sleep(200);
      }
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
  await sql`insert into dni_pools (key, org_id, name, fallback, placeholder, ttl_seconds)
            values (${POOL_KEY_2}, 1, 'bench 2', '5125550101', '5125550198', 1800)`;
  await sql`insert into dni_numbers (pool_key, number)
            select ${POOL_KEY_2}, '3' || lpad(i::text, 9, '0') from generate_series(1, ${Math.ceil(NUMBERS / 2)}) as i`;
  await sql`vacuum analyze`;
  suite.say(`pool ${POOL_KEY}: ${NUMBERS} numbers`);

  const base = await suite.baseline();
  const env = { TRUST_PROXY: "loopback" };
  const one = await suite.service(env);
  const two = await suite.service(env);
  const three = await suite.service(env);
  suite.say(`baseline ${base.url}, instances ${one.url}, ${two.url} and ${three.url}; ${WARMUP}s warm-up + ${DURATION}s per scenario, -t${THREADS} -c${CONNS}`);

  const warm = { pool: POOL_KEY, visitors: VISITORS, addresses: ADDRESSES };
  if (suite.wanted("lease") || suite.wanted("beat") || suite.wanted("event")) {
    const t0 = Date.now();
    await leaseVisitors(one);
    suite.say(`${VISITORS} warm visitors leased in ${Date.now() - t0} ms`);
    // Warm scenarios in slices alternating with the baseline.
    const ref = { to: base, args: { mode: "dni_lease", ...warm } };
    await suite.wrk(ref, WARMUP, false);
    await suite.wrk({ to: one, args: { mode: "dni_lease", ...warm } }, WARMUP, false);
    const modes = (["lease", "beat", "event"] as const).filter((m) => suite.wanted(m));
    const p = await suite.slices(ref, modes.map((m) => ({ to: one, args: { mode: `dni_${m}`, ...warm } })));
    suite.add({ id: "base", name: "baseline: bare Elysia POST handler", r: p.ref, checks: answerChecks(p.ref) });
    for (const [i, mode] of modes.entries()) {
      const { r, ratios } = p.xs[i];
      const ratio = median(ratios);
      suite.add({
        id: mode,
        name: mode === "lease" ? "warm lease (returning visitor)" : mode === "beat" ? "warm heartbeat" : "browser event (pageview) of a warm visitor",
        r,
        vs: { ratio, of: "base" },
        target: mode === "event" ? undefined : { text: "≥ 60% of baseline", pass: ratio >= 0.6 },
        checks: [`ratio per slice ${ratios.map(pct).join(" / ")}`, ...answerChecks(r)],
      });
    }
  }

  if (suite.wanted("new") && (suite.wanted("lease") || suite.wanted("beat") || suite.wanted("event"))) {
    // The warm visitors' writes behind (renewals, visits, address counters) fall due up to a
    // minute after their scenarios ended: measured inside the new-visitor window they were that
    // window's p99 (tens of thousands of rows written within a few seconds on the shared cores).
    // Each scenario is measured on its own: wait until those writes have stopped.
    const t0 = Date.now();
    const written = async () =>
      Number((await sql`select coalesce(sum(n_tup_upd + n_tup_ins), 0)::float8 as n from pg_stat_user_tables where relname in ('dni_holds', 'dni_visitors', 'rate_counters')`)[0].n);
    let last = await written();
    for (let quiet = 0; quiet < 4 && Date.now() - t0 < 120_000; ) {
      await Bun.sleep(1000);
      const now = await written();
      quiet = now === last ? quiet + 1 : 0;
      last = now;
    }
    suite.say(`warm visitors' writes behind settled after ${Math.round((Date.now() - t0) / 1000)} s`);
  }

  if (suite.wanted("new")) {
    // New visitors: one instance, then two and three on one pool, then two on a pool each.
    const holdsBefore = Number((await sql`select count(*)::int as n from dni_hold_history`)[0].n);
    const fresh = { mode: "dni_new", pool: POOL_KEY, addresses: ADDRESSES };
    const flushes = new Map<Result, Flush>();
    const wal = async () => {
      const [w] = await sql`select wal_sync::float8 as syncs, wal_sync_time::float8 as ms from pg_stat_wal`;
      return { syncs: Number(w.syncs), ms: Number(w.ms) };
    };
    const measureNew = async (to: Server[], argsFor?: (i: number) => Record<string, string | number>) => {
      await suite.wrk({ to, args: fresh, argsFor }, WARMUP, false);
      const w0 = await wal();
      const r = await suite.wrk({ to, args: fresh, argsFor }, DURATION);
      // Backends report their WAL counters within a second of going idle.
      await Bun.sleep(1100);
      const w1 = await wal();
      flushes.set(r, { syncs: w1.syncs - w0.syncs, ms: w1.ms - w0.ms });
      return r;
    };
    const newOne = await measureNew([one]);
    const newTwo = await measureNew([one, two]);
    const newThree = await measureNew([one, two, three]);
    const newPools = await measureNew([one, two], (i) => ({ ...fresh, pool: i === 0 ? POOL_KEY : POOL_KEY_2 }));
    const holdsAfter = Number((await sql`select count(*)::int as n from dni_hold_history`)[0].n);
    const [{ overlaps }] = await sql`
      select count(*)::int as overlaps from dni_hold_spans a join dni_hold_spans b
        on a.number = b.number and a.id < b.id and a.started_at < b.ends_at and b.started_at < a.ends_at`;
    const overlapCheck = overlaps ? `FAIL: ${overlaps} numbers held by two visitors at once` : "no number held by two visitors at once";
    const lock = (r: Result) => {
      const l = lockStats(r, flushes.get(r)!);
      return l
        ? [`pool lock: ${l.batch.toFixed(1)} leases/batch, held ~${(l.hold_us / 1000).toFixed(2)} ms/batch (allocation ${(l.alloc_us / 1000).toFixed(2)} + commit ${((l.commit_us + l.flush_us) / 1000).toFixed(2)})`]
        : [];
    };
    suite.add({
      id: "new",
      name: "new-visitor lease, 1 instance",
      r: newOne,
      target: { text: "≥ 2,000/s, p99 < 50 ms", pass: newOne.rps >= 2000 && (newOne.p99_us ?? Infinity) < 50_000 },
      checks: [...answerChecks(newOne), ...lock(newOne)],
    });
    suite.add({
      id: "new-2",
      name: "new-visitor lease, 2 instances, one pool",
      r: newTwo,
      // No target: on this machine the instances, PostgreSQL and wrk share two cores, so a second
      // instance cannot add capacity; the capacity model (bench/report.ts) says what it adds.
      vs: { ratio: newTwo.rps / newOne.rps, of: "new" },
      checks: [...answerChecks(newTwo), ...lock(newTwo)],
    });
    suite.add({
      id: "new-3",
      name: "new-visitor lease, 3 instances, one pool",
      r: newThree,
      vs: { ratio: newThree.rps / newOne.rps, of: "new" },
      checks: [...answerChecks(newThree), ...lock(newThree)],
    });
    suite.add({
      id: "new-2p",
      name: "new-visitor lease, 2 instances, a pool each",
      r: newPools,
      vs: { ratio: newPools.rps / newOne.rps, of: "new" },
      checks: [...answerChecks(newPools), ...lock(newPools), overlapCheck],
    });
    const stats = (r: Result) => lockStats(r, flushes.get(r)!);
    suite.extra.lock = { new: stats(newOne), "new-2": stats(newTwo), "new-3": stats(newThree), "new-2p": stats(newPools) };
    suite.notes.push(
      `New-visitor holds written (warm-ups included): ${holdsAfter - holdsBefore}. On 2 CPUs the instances, PostgreSQL and wrk share the machine: ` +
        "more instances cannot add CPU here; the capacity model in bench/RESULTS.md says what they add where they can.",
    );
  }
  return (
    `wrk -t${THREADS} -c${CONNS} (two instances: half each), ${WARMUP}s warm-up; warm scenarios in ${ROUNDS} slices of ${SLICE}s alternating with the baseline, ` +
    `new visitors ${DURATION}s; ${VISITORS} warm visitors, pool of ${NUMBERS} numbers (the second pool ${Math.ceil(NUMBERS / 2)}), ${ADDRESSES} client addresses.`
  );
});
