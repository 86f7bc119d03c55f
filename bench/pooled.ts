// The pooled suite (bench/README.md): the hot paths direct and through PgBouncer in transaction
// pooling mode (Debian's pgbouncer, bench/pgbouncer.ts), in the same run. Two instances of the
// service on one database: `direct` (DATABASE_URL the cluster) and `pooled` (DATABASE_URL the
// pooler, DATABASE_DIRECT_URL the cluster: unprepared statements through the pooler, LISTEN and
// migrations on the direct connection). Each operation is measured in slices alternating direct
// and pooled; the ratio is pooled / direct.
//
// DATABASE_DIRECT_URL is what makes the service work behind a transaction pooler; an executable
// that does not know it (no such string in it) would fail every pooled statement that relies on
// a prepared statement, so the suite then writes a note instead of rows (BENCH_POOLED=1 runs it
// anyway).
//
//   node_modules/.bin/bun bench/pooled.ts      (or `make bench`)
import { answerChecks, median, options, pct, POOL, type Server, Suite } from "./lib";
import { startPgbouncer } from "./pgbouncer";

const suite = new Suite("pooled", "Direct and through PgBouncer", ["lead", "cti", "intake", "dni"]);
const { warmup: WARMUP, rounds: ROUNDS, conns: CONNS, threads: THREADS } = options;
const LEADS = 10_000;
const NUMBERS = 100_000;

/** Whether the executable under test reads DATABASE_DIRECT_URL (the pooled mode). */
function knowsDirectUrl(exe: string[]): boolean {
  const file = exe.length > 1 ? `${exe[1].replace(/main\.ts$/, "config.ts")}` : exe[0];
  return Bun.spawnSync(["grep", "-a", "-q", "DATABASE_DIRECT_URL", file]).exitCode === 0;
}

await suite.run(async () => {
  if (!knowsDirectUrl(suite.exe) && process.env.BENCH_POOLED !== "1") {
    suite.notes.push(
      "Not measured: the executable under test does not read `DATABASE_DIRECT_URL`, without which the service cannot run behind a " +
        "transaction pooler (prepared statements, LISTEN). The suite runs once that setting is in the build (BENCH_POOLED=1 runs it anyway).",
    );
    suite.extra.skipped = "no DATABASE_DIRECT_URL in the executable";
    return "Skipped.";
  }
  const sql = await suite.database();
  await suite.seedAccount();
  await sql`
    insert into leads (list_id, phone, first_name, last_name, email)
    select 101, '555' || lpad(i::text, 7, '0'), 'First' || i, 'Last' || i, 'lead' || i || '@example.com'
    from generate_series(1, ${LEADS}) as i`;
  await sql`insert into dni_pools (key, org_id, name, fallback, placeholder, ttl_seconds)
            values ('pooled', 1, 'pooled', '5125550100', '5125550199', 1800)`;
  await sql`insert into dni_numbers (pool_key, number)
            select 'pooled', '2' || lpad(i::text, 9, '0') from generate_series(1, ${NUMBERS}) as i`;
  const keys = {
    lead: await suite.keys("lead", 3000, ["leads:read"]),
    cti: await suite.keys("cti", 3000, ["cti"]),
    intake: await suite.keys("intake", 3000, ["leads:write"]),
  };
  await sql`vacuum analyze`;

  const bouncer = await startPgbouncer(suite.databaseUrl(), "leadline_bench", POOL);
  suite.say(`${bouncer.version} on ${bouncer.url}, pool_mode=transaction, default_pool_size=${POOL}`);
  const env = { TRUST_PROXY: "loopback" };
  const direct = await suite.service(env);
  const pooled = await suite.service({ ...env, DATABASE_URL: bouncer.url, DATABASE_DIRECT_URL: suite.databaseUrl() });

  const ops: { id: string; name: string; args: Record<string, string | number> }[] = [
    { id: "lead", name: "get lead `r=leads/{id}`", args: { mode: "lead", leads: LEADS, keys: keys.lead.file } },
    { id: "cti", name: "CTI lookup", args: { mode: "cti", phones: LEADS, keys: keys.cti.file } },
    { id: "intake", name: "lead intake (new phone each)", args: { mode: "intake", keys: keys.intake.file } },
    { id: "dni", name: "new-visitor DNI lease", args: { mode: "dni_new", pool: "pooled", addresses: 65536 } },
  ];
  for (const op of ops) {
    if (!suite.wanted(op.id)) continue;
    const load = (to: Server) => ({ to, args: op.args });
    await suite.wrk(load(direct), WARMUP, false);
    const warm = await suite.wrk(load(pooled), WARMUP, false);
    const p = await suite.slices(load(direct), [load(pooled)]);
    const { r, ratios } = p.xs[0];
    suite.add({ id: op.id, name: `${op.name}, direct`, r: p.ref, checks: answerChecks(p.ref) });
    suite.add({
      id: `${op.id}-pooled`,
      name: `${op.name}, through PgBouncer`,
      r,
      vs: { ratio: median(ratios), of: op.id },
      checks: [`ratio per slice ${ratios.map(pct).join(" / ")}`, ...answerChecks(r, warm)],
    });
  }
  bouncer.stop();
  return `${bouncer.version}, pool_mode=transaction, ${POOL} server connections; wrk -t${THREADS} -c${CONNS}, ${WARMUP}s warm-up each, ${ROUNDS} slices alternating direct and pooled.`;
});
