// Faults under load (issue 22), on the compiled executable and a PostgreSQL of the test's own:
// the database crashed and started again, one of three instances killed, a hot table locked. The
// load (test/harness/faults.ts) goes on through each fault; what was acknowledged is then checked
// by SQL, by the webhook receiver's log, and by the automations' runs.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Serving } from "./harness/exe";
import { built } from "./harness/exe";
import {
  CREDITS, Load, quantile, queueDeferredSends, ready, retriedShare, SMS_COST, startRig, tally, TTL_SECONDS, waitFor, type Rig, type Sample,
} from "./harness/faults";
import { overlappingHolds } from "./harness/dni";
import { waitBound } from "./harness/timing";
import { WebhookReceiver } from "./harness/webhook-receiver";
import { DEADLINE_MS } from "../src/db/deadline";

const HOOK = "/faults";
let rig: Rig;
let rx: WebhookReceiver;
let instances: Serving[] = [];

beforeAll(async () => {
  if (!built) throw new Error("dist/leadline is missing: `make build` first (make test does)");
  rig = await startRig();
  rx = await WebhookReceiver.start();
  await rig.sql`insert into webhooks (id, org_id, url, secret, events) values (1, 1, ${rx.url(HOOK)}, ${"whsec_" + Buffer.from("faults test signing key").toString("base64")}, ${["lead.created"]})`;
  // One run at once and one 2 s later (a due job that waits through the fault), both notes: no provider.
  await rig.sql`insert into automations (id, org_id, trigger, channel, body, delay_seconds) values
    (1, 1, 'new_lead', 'note', 'welcome', 0), (2, 1, 'new_lead', 'note', 'follow up', 2)`;
  instances = await Promise.all([rig.serve(), rig.serve(), rig.serve()]);
}, 120_000);

afterAll(async () => {
  rx?.release();
  await rx?.stop();
  await rig?.close();
});

const bases = () => instances.map((s) => s.base);

/** Every acknowledged lead is a row; its lead.created reached the receiver once per event; its two automation runs ran once each. */
async function nothingLost(acknowledged: readonly number[]): Promise<void> {
  expect(acknowledged.length).toBeGreaterThan(10);
  const rows = await rig.sql`select id from leads where id = any(${acknowledged}::bigint[])`;
  expect(rows.length).toBe(acknowledged.length);

  const delivered = () => {
    const byLead = new Map<number, Set<string>>();
    for (const r of rx.at(HOOK)) {
      const lead = JSON.parse(r.body).data.lead_id as number;
      if (!byLead.has(lead)) byLead.set(lead, new Set());
      byLead.get(lead)!.add(r.headers["webhook-id"]!);
    }
    return byLead;
  };
  await waitFor("every lead.created delivered", () => acknowledged.every((id) => delivered().has(id)), 20_000).catch(async (err) => {
    const missing = acknowledged.filter((id) => !delivered().has(id));
    const state = await rig.sql`
      select e.id as event, d.id as delivery, d.status, j.run_at - now() as due_in, j.attempts, j.last_error, j.claimed_at
      from outbox_events e left join webhook_deliveries d on d.event_id = e.id left join jobs j on j.kind = 'webhook.deliver' and j.ref = d.id
      where (e.payload->>'lead_id')::bigint = any(${missing}::bigint[]) limit 10`;
    throw new Error(`${err.message}: ${missing.length} missing, ${JSON.stringify(state)}`);
  });
  // Duplicates only with the same webhook-id: one event, one id, per lead.
  for (const id of acknowledged) expect([id, delivered().get(id)!.size]).toEqual([id, 1]);

  const runs = async () =>
    rig.sql<{ status: string; n: number }[]>`
      select status, count(*)::int as n from automation_runs where lead_id = any(${acknowledged}::bigint[]) group by status`;
  // A run that met the outage is tried again after its back-off (10 s after its first claim).
  await waitFor("every automation run finished", async () => (await runs()).every((r) => r.status === "sent"), 30_000).catch(async (err) => {
    const reasons = await rig.sql`
      select r.status, r.reason, j.run_at - now() as due_in, j.claimed_at, j.attempts, j.last_error, count(*)::int as n
      from automation_runs r left join jobs j on j.kind = 'automation.run' and j.ref = r.id
      where r.lead_id = any(${acknowledged}::bigint[]) and r.status <> 'sent' group by 1, 2, 3, 4, 5, 6`;
    throw new Error(`${err.message}: ${JSON.stringify(reasons)}`);
  });
  expect(await runs()).toEqual([{ status: "sent", n: 2 * acknowledged.length }] as any);
  const [notes] = await rig.sql`
    select count(*)::int as n, count(distinct (lead_id, body))::int as distinct_notes from messages
    where lead_id = any(${acknowledged}::bigint[]) and channel = 'note'`;
  expect(notes).toEqual({ n: 2 * acknowledged.length, distinct_notes: 2 * acknowledged.length });
}

/** No number held by two visitors at once, ever. */
async function noOverlaps(): Promise<void> {
  expect(await overlappingHolds(rig.sql)).toEqual([]);
}

/** A request's 1 s deadline, and then some for a 2-core machine shared with other work. */
const DEADLINE_SLACK_MS = 3000;

/**
 * How long `instance` took, at most, to answer what it answers from memory (DNI heartbeats) while
 * [from, to] went on: its own stall then, a baseline taken in the same test. The machine is shared
 * (three instances, PostgreSQL, this load and other test files on two cores): an instance kept
 * from running answers everything late, and a request that needed the database meanwhile meets
 * its deadline whatever the fault is.
 */
function stallOf(load: Load, instance: number, from: number, to: number): number {
  let worst = 0;
  for (const s of load.samples) {
    if (s.op === "heartbeat" && s.instance === instance && s.status === 200 && s.at <= to && s.at + s.ms >= from) worst = Math.max(worst, s.ms);
  }
  return worst;
}

/** A stall that alone can make a request that needs the database miss its deadline: a quarter of it. */
const STALL_MS = DEADLINE_MS / 4;

/** Within about a second: the deadline, or more by as much as the instance was stalled meanwhile. */
const inTime = (load: Load, s: Sample) => s.ms < Math.max(DEADLINE_SLACK_MS, waitBound(DEADLINE_MS, stallOf(load, s.instance, s.at, s.at + s.ms)));

/** The share of answers other than 200. */
const failing = (s: readonly Sample[]) => s.filter((x) => x.status !== 200).length / Math.max(1, s.length);

/** The share of answers other than 200 that no stall of their instance explains (stallOf). */
const failingUnstalled = (load: Load, s: readonly Sample[]) =>
  s.filter((x) => x.status !== 200 && stallOf(load, x.instance, x.at, x.at + x.ms) < STALL_MS).length / Math.max(1, s.length);

/**
 * `after` is like `before`, loosely: no more 503s than before (or 2 %), p99 within 4 times
 * before's (or 1 s). A busy shared machine gives 503s and slow answers with no fault at all.
 */
function normal(after: readonly Sample[], before: readonly Sample[]): boolean {
  return after.length > 0 && failing(after) <= Math.max(0.02, 2 * failing(before)) && quantile(after, 0.99) <= Math.max(1000, 4 * quantile(before, 0.99));
}

/** Requests the load sent twice, the first try failing at the connection (Load.send): rare, or something is wrong. */
const MAX_RETRIED = 0.01;

const bad = (samples: readonly Sample[]) => samples.filter((s) => s.status !== 200 && !(s.status === 503 && s.code === "unavailable"));

describe("PostgreSQL stopped hard mid-load", () => {
  test("503 unavailable within about a second while it is down, not ready, normal again soon after; nothing acknowledged lost", async () => {
    // Texts deferred by quiet hours, coming due before, during and after the outage.
    const deferred = await queueDeferredSends(rig.sql, 40, Date.now() + 1500, 150, "faults/deferred/");
    const load = new Load(rig, bases(), {}, "5127").start();
    await Bun.sleep(3000);
    const down = performance.now();
    await rig.cluster.halt();
    const halted = performance.now();
    // Every instance says so within about a second (its probe's own deadline is 800 ms).
    await Promise.all(bases().map((b) => waitFor("not ready", async () => !(await ready(b)), 3000)));
    await Bun.sleep(3000);
    const back = performance.now();
    await rig.cluster.resume();
    const up = performance.now();
    const upAt = new Date();
    const readyIn = await Promise.all(bases().map((b) => waitFor("ready again", () => ready(b), 10_000)));
    await Bun.sleep(5000);
    await load.stop();
    const end = performance.now();

    const before = load.between(0, down);
    const during = load.between(halted, back);
    const after = load.between(up + 2000, end);
    const summary = {
      before: { ...tally(before), p99: quantile(before, 0.99) },
      during: { ...tally(during), max: Math.max(...during.map((s) => s.ms)) },
      after: { ...tally(after), p99: quantile(after, 0.99) },
      readyIn,
    };
    console.log("faults: database crash", JSON.stringify(summary));
    // Never a 4xx, a 500 or a hang: 200 (answered from memory) or 503 unavailable.
    expect(bad(load.samples)).toEqual([]);
    expect(retriedShare(load.samples)).toBeLessThanOrEqual(MAX_RETRIED);
    expect(during.filter((s) => s.status === 503).length).toBeGreaterThan(0);
    // Within about a second: the 1 s deadline, and then some for a loaded 2-core machine (inTime).
    for (const s of during) expect([s.op, s.status, inTime(load, s)]).toEqual([s.op, s.status, true]);
    // From 2 s after its return, normal again: answers and p99 as before, loosely (this machine is shared).
    expect(normal(after, before)).toBe(true);
    // A claim that committed as the server died, its answer lost, is held for its lease (a minute
    // or more): ended here, as the clock would end it. Outcomes of runs that met the outage are
    // written on the database's return (src/jobs/queue.ts), so these are the odd one at most.
    const cut = await rig.sql`update jobs set run_at = now() where claimed_at < ${upAt} and run_at > now() + interval '20 seconds' returning id, kind`;
    console.log("faults: claims cut by the crash", JSON.stringify(cut));
    expect(cut.length).toBeLessThanOrEqual(3);
    await nothingLost(load.acknowledged);
    await noOverlaps();
    await deferredSentOnce(deferred);
    await renewalsWritten(load);
  }, 60_000);
});

/**
 * Every deferred text went once: charged once, nothing else charged, none sent twice. A provider's
 * answer that arrives while the database is away is written when it is back (src/messages/service.ts,
 * untilWritten; before that, one or two of forty stayed `sending`, then `unknown`). A charge whose
 * commit answer the crash itself lost still ends `unknown` (never sent, never sent twice): the odd
 * one at most.
 */
async function deferredSentOnce(ids: number[]): Promise<void> {
  const states = () => rig.sql<{ status: string; n: number }[]>`select status, count(*)::int as n from messages where id = any(${ids}::bigint[]) group by 1 order by 1`;
  const settled = async () => (await states()).every((s) => s.status === "sent" || s.status === "sending" || s.status === "unknown");
  await waitFor("every deferred text sent", settled, 30_000).catch(async (err) => {
    throw new Error(`${err.message}: ${JSON.stringify(await states())}`);
  });
  const byStatus = Object.fromEntries((await states()).map((s) => [s.status, s.n]));
  console.log("faults: deferred texts", JSON.stringify(byStatus));
  expect(byStatus.sent).toBeGreaterThanOrEqual(ids.length - 3);
  const [providers] = await rig.sql`
    select count(provider_id)::int as n, count(distinct provider_id)::int as distinct_ids from messages where id = any(${ids}::bigint[])`;
  expect(providers).toEqual({ n: byStatus.sent, distinct_ids: byStatus.sent });
  const [charges] = await rig.sql`
    select count(*)::int as n, count(distinct message_id)::int as messages from credit_ledger where kind = 'charge' and message_id = any(${ids}::bigint[])`;
  expect(charges).toEqual({ n: ids.length, messages: ids.length });
  const [billing] = await rig.sql`select credits::float8 as credits from org_billing where org_id = 1`;
  expect(billing.credits).toBeCloseTo(CREDITS - ids.length * SMS_COST, 6);
}

/**
 * DNI write-behind resumed: every visitor's last renewal, answered before, during or after the
 * crash, is in the database once its write delay (a tenth of the ttl) has passed.
 */
async function renewalsWritten(load: Load): Promise<void> {
  const delay = (TTL_SECONDS * 1000) / 10;
  const last = Math.max(...[...load.held.values()].map((h) => h.answered));
  await Bun.sleep(Math.max(0, last + delay + 2000 - Date.now()));
  const rows = await rig.sql<{ visitor: string; number: string; expires_at: Date }[]>`
    select v.visitor, h.number, h.expires_at from dni_holds h join dni_visitors v on v.id = h.visitor_id where h.expires_at > now()`;
  const byVisitor = new Map(rows.map((r) => [r.visitor, r]));
  for (const [visitor, h] of load.held) {
    const row = byVisitor.get(visitor);
    expect([visitor, row?.number]).toEqual([visitor, h.number]);
    // Renewed to at least a ttl after the last answer was asked for (a second for rounding).
    expect([visitor, row!.expires_at.getTime() >= h.sent + TTL_SECONDS * 1000 - 1000]).toEqual([visitor, true]);
  }
}

describe("one of three instances killed mid-load", () => {
  test("SIGKILL: nothing acknowledged lost, no number held past its ttl, its claimed jobs taken over after their lease", async () => {
    // No answers until after the kill: every instance has deliveries in flight, claimed, when it dies.
    rx.respond("hang");
    const load = new Load(rig, bases(), {}, "5128").start();
    await Bun.sleep(3000);
    const victim = instances[2]!;
    const killedAt = new Date();
    const kill = performance.now();
    process.kill(victim.pid, "SIGKILL");
    load.targets[2] = null;
    instances = instances.slice(0, 2);
    await Bun.sleep(3000);
    await load.stop();
    rx.respond({ status: 200, body: "ok" });
    rx.release(200);
    console.log("faults: instance killed", JSON.stringify({ all: tally(load.samples), survivors: tally(load.samples.filter((s) => s.instance !== 2)) }));
    // The survivors answered everything; the victim's own requests got no answer at the kill.
    expect(bad(load.samples.filter((s) => s.instance !== 2))).toEqual([]);
    expect(retriedShare(load.samples.filter((s) => s.instance !== 2))).toBeLessThanOrEqual(MAX_RETRIED);
    expect(load.samples.filter((s) => s.instance === 2 && s.status !== 200).every((s) => s.status === 0 && s.at + s.ms >= kill)).toBe(true);

    // What the survivors claimed is done within a few seconds; what stays claimed is the victim's.
    await waitFor("the survivors' work done", async () => {
      const [row] = await rig.sql`select count(*)::int as n from jobs where run_at <= now() or (claimed_at > ${killedAt} and run_at > now())`;
      return row.n === 0;
    }, 20_000);
    const stranded = await rig.sql<{ id: number; kind: string; lease: number }[]>`
      select id, kind, extract(epoch from run_at - claimed_at)::int as lease from jobs where claimed_at <= ${killedAt} and run_at > now()`;
    console.log("faults: claims the killed instance left", JSON.stringify(stranded));
    expect(stranded.length).toBeGreaterThan(0);
    // Held for the whole lease (a minute or more, by kind): nobody else runs them meanwhile.
    for (const j of stranded) expect([j.kind, j.lease >= 60]).toEqual([j.kind, true]);
    // The lease ends (moved, not waited for: a minute is beyond a test's time): another instance runs them.
    await rig.sql`update jobs set run_at = now() where id = any(${stranded.map((j) => j.id)}::bigint[])`;
    await waitFor("stranded jobs taken over", async () => (await rig.sql`select 1 from jobs where id = any(${stranded.map((j) => j.id)}::bigint[])`).length === 0, 20_000);
    await nothingLost(load.acknowledged);

    // No hold runs past a ttl after the last answer its visitor was given.
    const rows = await rig.sql<{ visitor: string; expires_at: Date }[]>`
      select v.visitor, h.expires_at from dni_holds h join dni_visitors v on v.id = h.visitor_id where h.expires_at > now()`;
    for (const r of rows) {
      const h = load.held.get(r.visitor);
      if (!h) continue;
      expect([r.visitor, r.expires_at.getTime() <= h.answered + TTL_SECONDS * 1000 + 1000]).toEqual([r.visitor, true]);
    }
    await noOverlaps();
  }, 60_000);
});

describe("the database slow: a hot table locked", () => {
  test("requests on it answer 503 within their deadline, other routes keep answering, and all recovers when it is released", async () => {
    const load = new Load(rig, bases(), { ops: ["intake", "get", "kpi", "get", "intake", "kpi", "lease", "heartbeat"] }, "5129").start();
    await Bun.sleep(2000);
    const locker = rig.sql.reserve();
    const conn = await locker;
    await conn`begin`;
    await conn`lock table leads in access exclusive mode`;
    const locked = performance.now();
    await Bun.sleep(5000);
    await conn`commit`;
    conn.release();
    const released = performance.now();
    await Bun.sleep(4000);
    await load.stop();
    const during = load.between(locked, released);
    const after = load.between(released + 2000, performance.now());
    console.log("faults: table locked", JSON.stringify({
      during: { ...tally(during), kpi: tally(during.filter((s) => s.op === "kpi")), max: Math.max(...during.map((s) => s.ms)) },
      after: tally(after),
    }));
    expect(bad(load.samples)).toEqual([]);
    expect(retriedShare(load.samples)).toBeLessThanOrEqual(MAX_RETRIED);
    expect(during.filter((s) => s.op === "intake" && s.status === 503).length).toBeGreaterThan(0);
    for (const s of during) expect([s.op, s.status, inTime(load, s)]).toEqual([s.op, s.status, true]);
    // The pool was not all taken by statements waiting on the lock: routes that do not need the table kept answering.
    // Before the lock wait, half the KPI requests answered 503; before background work had a pool
    // of its own, up to half again in a full run (sixteen automation runs at once, each waiting on
    // the table, took all four connections). Since, 0 of 44 in a full run (and test/background-pool.test.ts).
    // A 503 while its instance was stalled (its heartbeats, answered from memory, late by a quarter
    // second or more: stallOf) is the shared machine's, not the pool's: in a fresh clone's CI run
    // an in-memory heartbeat took 916 ms and 4 of 48 answered 503 with the pool fine, and this
    // bound moved between 10 % and 25 % in four commits in a row.
    const others = during.filter((s) => s.op === "kpi" || s.op === "lease" || s.op === "heartbeat");
    expect(others.length).toBeGreaterThan(0);
    expect(failingUnstalled(load, others)).toBeLessThanOrEqual(Math.max(0.1, 2 * failing(load.between(0, locked))));
    expect(normal(after, load.between(0, locked))).toBe(true);
    await nothingLost(load.acknowledged);
  }, 60_000);
});

describe("SIGTERM mid-load", () => {
  test("requests in flight are answered, jobs in flight finish (or are released), renewals are flushed, exit 0", async () => {
    // Deliveries take a while: some are running when the signal comes, and finish in the drain.
    rx.respond({ status: 200, body: "ok", delayMs: 1500 });
    const started = new Date();
    const load = new Load(rig, bases(), {}, "5130").start();
    await Bun.sleep(3000);
    const victim = instances[1]!;
    const stoppedAt = new Date();
    const signal = performance.now();
    const stopping = victim.stop();
    load.targets[1] = null;
    // Each visitor's latest answer when the signal went (later ones only renew further).
    const heldAtStop = new Map(load.held);
    expect(await stopping).toBe(0);
    instances = instances.slice(0, 1);
    await Bun.sleep(1000);
    await load.stop();
    rx.respond({ status: 200, body: "ok" });
    console.log("faults: instance stopped", JSON.stringify({ victim: tally(load.samples.filter((s) => s.instance === 1)), all: tally(load.samples) }));
    // Every request it had taken was answered (none cut off), like the survivor's. Bun closes idle
    // keep-alive connections at the stop: a request still on its way on one then meets a closed
    // connection, never read (the client may send it again), so those sent at the signal are let be.
    const cutOff = load.samples.filter((s) => s.status === 0);
    console.log("faults: cut off at the stop", JSON.stringify(cutOff.map((s) => ({ op: s.op, sentBeforeSignal: signal - s.at, ms: s.ms }))));
    expect(bad(load.samples.filter((s) => s.status !== 0))).toEqual([]);
    expect(retriedShare(load.samples)).toBeLessThanOrEqual(MAX_RETRIED);
    expect(cutOff.every((s) => s.instance === 1 && s.at > signal - 50)).toBe(true);

    // Its renewals were written at the stop, without waiting for their write delay.
    let checked = 0;
    for (const [visitor, h] of heldAtStop) {
      if (h.instance !== 1) continue;
      const [row] = await rig.sql<{ number: string; expires_at: Date }[]>`
        select h.number, h.expires_at from dni_holds h join dni_visitors v on v.id = h.visitor_id where v.visitor = ${visitor}`;
      expect([visitor, row?.number, row!.expires_at.getTime() >= h.sent + TTL_SECONDS * 1000 - 1000]).toEqual([visitor, h.number, true]);
      checked++;
    }
    expect(checked).toBeGreaterThan(0);

    // It left nothing claimed behind: whatever it had claimed finished in the drain or was released.
    await waitFor("the survivor's work done", async () => {
      const [row] = await rig.sql`select count(*)::int as n from jobs where run_at <= now() or (claimed_at > ${stoppedAt} and run_at > now())`;
      return row.n === 0;
    }, 20_000);
    // (Claims of this test's own: a job an earlier test left backing off is not the victim's.)
    const left = await rig.sql`select id, kind from jobs where claimed_at between ${started} and ${stoppedAt} and run_at > now()`;
    expect([...left]).toEqual([]);
    await nothingLost(load.acknowledged);
  }, 60_000);
});
