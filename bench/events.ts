// The outbound events suite (bench/README.md): the service and a webhook receiver in this process
// on 127.0.0.1; the load comes from this process too (fetch), not from wrk. Three measurements:
//
//   A. deliveries/s: a burst of events committed at once, delivered from one instance to one
//      endpoint (the per-endpoint concurrency bound applies; one endpoint is the hard case);
//   B. commit → receipt lag at a steady intake rate (open loop: requests leave on a schedule, not
//      when the previous answer came), the lag measured from the moment the intake answer arrived
//      (its transaction had committed) to the delivery's arrival;
//   C. what the outbox row costs intake: closed-loop intake req/s and CPU per intake, in slices
//      alternating between the real intake and a baseline in which a BEFORE INSERT trigger drops
//      the outbox row (the rest of the intake statement unchanged), no endpoints subscribed.
//
//   node_modules/.bin/bun bench/events.ts      (or `make bench`; options in bench/README.md)
//
// Suite options: EVENTS_BURST (events in A, default 20000), EVENTS_RATE (intakes/s in B, default
// 500), EVENTS_DURATION (s of B and of C's slices in all, default 10), EVENTS_CONNECTIONS (C's
// concurrent clients, default 32), BENCH_ONLY (burst, lag, outbox).
// The receiver shares this process's CPU with the load generator: on 2 cores the numbers are a
// floor. Targets: A ≥ 1000/s; B p99 < 1 s at 500 intakes/s.
import { randomBytes } from "node:crypto";
import { fmtMs, mergeSlices, num, type Result, type Server, Suite } from "./lib";

const suite = new Suite("events", "Outbound events", ["burst", "lag", "outbox"]);
const BURST = num("EVENTS_BURST", 20_000);
const RATE = num("EVENTS_RATE", 500);
const DURATION = num("EVENTS_DURATION", 10);
const CONNS = num("EVENTS_CONNECTIONS", 32);

// ---------------------------------------------------------------- receiver

/** Arrival time (performance.now()) by lead id, and the webhook-ids seen. */
const arrivals = new Map<number, number>();
const ids = new Set<string>();
let received = 0;
let duplicates = 0;

function startReceiver() {
  return Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const at = performance.now();
      const id = req.headers.get("webhook-id") ?? "";
      const body = (await req.json()) as { data?: { lead_id?: number } };
      received++;
      if (ids.has(id)) duplicates++;
      ids.add(id);
      const lead = body.data?.lead_id;
      if (typeof lead === "number" && !arrivals.has(lead)) arrivals.set(lead, at);
      return new Response("ok");
    },
  });
}

// ---------------------------------------------------------------- helpers

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const ms = (x: number) => fmtMs(x * 1000);

async function until(pred: () => boolean, limitMs: number): Promise<boolean> {
  const end = performance.now() + limitMs;
  while (!pred()) {
    if (performance.now() > end) return false;
    await Bun.sleep(5);
  }
  return true;
}

let phoneSeq = 2_000_000_000;
let keyTurn = 0;
let keys: string[] = [];

/** One intake; intake allows 120 an hour per key, so requests go round-robin over many. A rejected request (no answer) is `status` 0. */
function intake(svc: Server): Promise<{ status: number; lead_id: number | null }> {
  const key = keys[keyTurn++ % keys.length];
  return fetch(`${svc.url}/hooks/lead_intake.php`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify({ phone: String(phoneSeq++), list_id: 101, first_name: "Bench", source: "bench" }),
  }).then(
    async (r) => ({ status: r.status, lead_id: ((await r.json()) as { lead_id?: number }).lead_id ?? null }),
    () => ({ status: 0, lead_id: null }),
  );
}

// ---------------------------------------------------------------- the run

await suite.run(async () => {
  const sql = await suite.database(4);
  const receiver = startReceiver();
  await suite.seedAccount();
  const secret = "whsec_" + randomBytes(24).toString("base64");
  await sql`insert into webhooks (id, org_id, url, secret, events)
            values (1, null, ${`http://127.0.0.1:${receiver.port}/hook`}, ${secret}, '{*}')`;
  const intakes = Math.ceil(RATE * DURATION * 1.2 + 4000 * DURATION);
  keys = (await suite.keys("events", Math.ceil(intakes / 100), ["leads:write"])).keys;
  // Only the seeded tables: statistics that call an empty table empty make plans that scan it once it fills.
  await sql`vacuum analyze api_keys`;
  const svc = await suite.service({ WEBHOOK_ALLOW_PRIVATE: "true" });
  suite.say(`service up, receiver on ${receiver.port}`);

  if (suite.wanted("burst")) {
    // A. deliveries/s from a burst committed at once.
    received = 0;
    ids.clear();
    let first = 0;
    let t0 = 0;
    const r = await suite.measure([svc], true, async () => {
      await sql`
        insert into outbox_events (org_id, type, payload)
        select 1, 'lead.created', jsonb_build_object('type', 'lead.created', 'timestamp', now(),
          'data', jsonb_build_object('lead_id', -g, 'list_id', 101, 'campaign', 'ACME', 'org_id', 1,
                                     'phone', (5550000000 + g)::text, 'source', 'bench', 'created_at', now()))
        from generate_series(1, ${BURST}) g`;
      t0 = performance.now();
      await until(() => {
        if (received > 0 && first === 0) first = performance.now();
        return received >= BURST;
      }, 600_000);
      const tA = performance.now() - t0;
      return { requests: Math.min(received, BURST), duration_us: tA * 1000, p50_us: null, p99_us: null, status_errors: 0, socket_errors: 0 };
    });
    suite.add({
      id: "burst",
      name: "A. deliveries/s, one instance → one local endpoint",
      r,
      target: { text: "≥ 1000/s", pass: r.rps >= 1000 },
      checks: [
        received >= BURST ? `${BURST} events committed at once, all delivered` : `FAIL: ${received} of ${BURST} delivered in 600 s`,
        `first arrival after ${ms(first - t0)} ms`,
        `${duplicates} duplicate ids`,
      ],
      top: 8,
    });
  }

  if (suite.wanted("lag")) {
    // B. lag at a steady intake rate, open loop.
    const commits = new Map<number, number>();
    const latencies: number[] = [];
    let failed = 0;
    let rejected = 0;
    let achieved = 0;
    let lags: number[] = [];
    const r = await suite.measure([svc], true, async () => {
      const pending: Promise<void>[] = [];
      const tick = 10;
      const perTick = RATE / (1000 / tick);
      let owed = 0;
      const startB = performance.now();
      for (let n = 0; performance.now() - startB < DURATION * 1000; n++) {
        owed += perTick;
        for (; owed >= 1; owed--) {
          const sent = performance.now();
          pending.push(
            intake(svc).then((a) => {
              const at = performance.now();
              if (a.status === 0) return void rejected++;
              latencies.push(at - sent);
              if (a.status === 200 && a.lead_id !== null) commits.set(a.lead_id, at);
              else failed++;
            }),
          );
        }
        const next = startB + (n + 1) * tick;
        await Bun.sleep(Math.max(0, next - performance.now()));
      }
      await Promise.all(pending);
      const elapsed = performance.now() - startB;
      achieved = commits.size / (elapsed / 1000);
      // The window goes on until the deliveries have arrived: their CPU is the intakes' too.
      await until(() => [...commits.keys()].every((id) => arrivals.has(id)), 30_000);
      lags = [...commits].map(([id, at]) => (arrivals.get(id) ?? NaN) - at).filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
      return {
        requests: commits.size,
        duration_us: elapsed * 1000,
        rps: achieved,
        p50_us: quantile(lags, 0.5) * 1000,
        p99_us: quantile(lags, 0.99) * 1000,
        status_errors: failed,
        socket_errors: rejected,
      };
    });
    const missing = commits.size - lags.length;
    latencies.sort((a, b) => a - b);
    suite.add({
      id: "lag",
      name: `B. lag commit → receipt at ${RATE} intakes/s, open loop (p50/p99 columns: the lag)`,
      r,
      target: { text: "p99 < 1000 ms", pass: quantile(lags, 0.99) < 1000 },
      checks: [
        `lag p90 ${ms(quantile(lags, 0.9))} ms, max ${ms(lags.at(-1) ?? NaN)} ms`,
        `${commits.size} intakes at ${achieved.toFixed(0)}/s over ${DURATION} s`,
        failed || rejected ? `FAIL: ${failed} intakes answered other than 200, ${rejected} unanswered` : "every intake answered 200",
        missing ? `FAIL: ${missing} deliveries never arrived (30 s)` : "every delivery arrived",
        `intake latency p50 ${ms(quantile(latencies, 0.5))} ms, p99 ${ms(quantile(latencies, 0.99))} ms`,
      ],
    });
  }

  if (suite.wanted("outbox")) {
    // C. the outbox row's cost to intake: alternate slices with and without it, no endpoint subscribed.
    await sql`update webhooks set active = false`;
    await sql`create function bench_drop_outbox() returns trigger language plpgsql as $$ begin return null; end $$`;
    const slices = 4;
    const sliceS = Math.max(1, DURATION / (slices * 2));
    const parts: Record<"with" | "without", Result[]> = { with: [], without: [] };
    for (let i = 0; i < slices; i++) {
      for (const mode of ["without", "with"] as const) {
        if (mode === "without") await sql`create trigger bench_drop_outbox before insert on outbox_events for each row execute function bench_drop_outbox()`;
        const part = await suite.measure([svc], true, async () => {
          const s0 = performance.now();
          const latencies: number[] = [];
          let n = 0;
          let failed = 0;
          let rejected = 0;
          await Promise.all(
            Array.from({ length: CONNS }, async () => {
              while (performance.now() - s0 < sliceS * 1000) {
                const sent = performance.now();
                const a = await intake(svc);
                if (a.status === 0) rejected++;
                else if (a.status === 200) n++;
                else failed++;
                latencies.push(performance.now() - sent);
              }
            }),
          );
          latencies.sort((a, b) => a - b);
          return {
            requests: n,
            duration_us: (performance.now() - s0) * 1000,
            p50_us: quantile(latencies, 0.5) * 1000,
            p99_us: quantile(latencies, 0.99) * 1000,
            status_errors: failed,
            socket_errors: rejected,
          };
        });
        parts[mode].push(part);
        if (mode === "without") await sql`drop trigger bench_drop_outbox on outbox_events`;
      }
    }
    const [without, withOutbox] = [mergeSlices(parts.without), mergeSlices(parts.with)];
    const [outboxRows] = await sql`select count(*)::int as n from outbox_events where dispatched_at is null`;
    const errors = (r: Result) => (r.status_errors || r.socket_errors ? [`FAIL: ${r.status_errors} intakes answered other than 200, ${r.socket_errors} unanswered`] : []);
    const shape = `${slices} slice pairs of ${sliceS} s, ${CONNS} clients`;
    suite.add({ id: "outbox-base", name: "C. intake without the outbox row (a trigger drops it): baseline", r: without, checks: [shape, ...errors(without)] });
    suite.add({
      id: "outbox",
      name: "C. intake with the outbox row",
      r: withOutbox,
      vs: { ratio: withOutbox.rps / without.rps, of: "outbox-base" },
      checks: [shape, `${outboxRows.n} events left undispatched at the end`, ...errors(withOutbox)],
    });
  }

  receiver.stop(true);
  suite.notes.push(
    "The load comes from this process (fetch), which also runs the webhook receiver: the wrk column is its CPU. " +
      "A's rows count deliveries (its CPU window includes committing the burst), B's and C's intakes.",
  );
  return `Burst ${BURST} events; ${RATE} intakes/s for ${DURATION} s; C in closed loop with ${CONNS} clients.`;
});
