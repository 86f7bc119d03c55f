// Webhook delivery against the database and a real HTTP receiver: outbox fan-out and routing,
// signatures checked by the independent standardwebhooks package, retries on an injected clock,
// 410, redirects, the response excerpt, address refusal, TLS, secret rotation, dead workers,
// replays, and concurrent claimers.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { connect, type Sql } from "../src/db/client";
import { deliverWebhook, deliveryOptions, replayDelivery, ReplayRefused, type DeliveryOptions } from "../src/events/deliver";
import { fanOut } from "../src/events/fanout";
import { loadDelivery } from "../src/events/queries";
import { EVENT_RETENTION_MS, pruneEvents } from "../src/events/prune";
import { DELIVER_KIND } from "../src/events/fanout";
import { JobRunner, type JobHandler } from "../src/jobs/queue";
import { sendAttempt } from "../src/events/send";
import { signedHeaders } from "../src/events/sign";
import { MAX_ATTEMPTS, RETRY_DELAYS_MS } from "../src/events/schedule";
import { createOrDedupLead, resolveList } from "../src/leads/queries";
import { parseLeadInput } from "../src/leads/model";
import { applyProvisioning } from "../src/provision/service";
import { setLogLevel } from "../src/log";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";
import { SELF_SIGNED, startSniProbe, WebhookReceiver, type Received } from "./harness/webhook-receiver";

let db: TestDatabase;
let rx: WebhookReceiver;
setLogLevel("error");

/** Time moves only when a test moves it. Each test starts at the real time so that
 *  standardwebhooks' timestamp tolerance accepts first attempts. */
const clock = new ManualClock();

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  rx = await WebhookReceiver.start();
});
afterAll(async () => {
  await rx?.stop();
  await db?.drop();
});
beforeEach(async () => {
  clock.set(Date.now());
  rx.clear();
  rx.respond({ status: 200, body: "ok" });
  // Each test sees only the endpoints it makes, and the jobs it runs.
  await db.sql`update webhooks set active = false`;
  await db.sql`delete from jobs`;
});

let nextEndpoint = 1;
const newSecret = () => "whsec_" + crypto.getRandomValues(new Buffer(24)).toString("base64");

async function endpoint(spec: { org?: number | null; url?: string; events?: string[]; secret?: string } = {}) {
  const id = nextEndpoint++;
  const secret = spec.secret ?? newSecret();
  await db.sql`
    insert into webhooks (id, org_id, url, secret, events)
    values (${id}, ${spec.org ?? null}, ${spec.url ?? rx.url(`/e${id}`)}, ${secret}, ${spec.events ?? ["*"]})`;
  return { id, secret, path: `/e${id}` };
}

let phoneSeq = 5125550000;
async function intake(listId: number, fields: Record<string, unknown> = {}) {
  const input = parseLeadInput({ phone: String(phoneSeq++), list_id: listId, ...fields })!;
  const list = (await resolveList(db.sql, null, input.listId, null))!;
  return createOrDedupLead(db.sql, list, input, new Date(clock.now()));
}

const opts = (o: Partial<DeliveryOptions> = {}) => deliveryOptions(true, { timeoutMs: 2000, ...o });

/** One run of a delivery's job, counting its claims as the job runner does. */
const claims = new Map<number, number>();
function run(id: number, o: Partial<DeliveryOptions> = {}) {
  const attempts = (claims.get(id) ?? 0) + 1;
  claims.set(id, attempts);
  return deliverWebhook(db.sql, clock, { ref: id, attempts }, opts(o));
}

/** Fans out what is waiting and makes each new delivery's first attempt, as the workers would. */
async function pump(o: Partial<DeliveryOptions> = {}) {
  const { deliveries } = await fanOut(db.sql, clock);
  const results = await Promise.all(deliveries.map((d) => run(d.id, o)));
  return deliveries.map((d, i) => ({ ...d, result: results[i] }));
}

const delivery = async (id: number) => (await db.sql`select * from webhook_deliveries where id = ${id}`)[0];
const attempts = (id: number) => db.sql`select * from webhook_attempts where delivery_id = ${id} order by id`;
async function until(pred: () => boolean | Promise<boolean>, ms = 5000) {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error("timed out");
    await Bun.sleep(10);
  }
}

const headers = (r: Received) => ({
  "webhook-id": r.headers["webhook-id"],
  "webhook-timestamp": r.headers["webhook-timestamp"],
  "webhook-signature": r.headers["webhook-signature"],
});

describe("lead.created", () => {
  test("a fresh lead is delivered once, signed, with the contract's body; a duplicate emits nothing", async () => {
    const hook = await endpoint({ org: 1, events: ["lead.created"] });
    const source = "x".repeat(80);
    const { lead_id } = await intake(101, { source, email: "a@b.example" });
    const sent = await pump();
    expect(sent).toHaveLength(1);
    expect(sent[0].result).toEqual({ done: true });
    expect(rx.received).toHaveLength(1);
    const r = rx.received[0];
    expect(r.path).toBe(hook.path);
    expect(r.method).toBe("POST");
    expect(r.headers["content-type"]).toBe("application/json");
    const [event] = await db.sql`select id, created_at from outbox_events where type = 'lead.created' and (payload #>> '{data,lead_id}')::bigint = ${lead_id}`;
    expect(r.headers["webhook-id"]).toBe(`evt_${event.id}`);
    expect(r.headers["webhook-timestamp"]).toBe(String(Math.floor(clock.now() / 1000)));
    // The independent implementation accepts it and returns the body.
    const body = new Webhook(hook.secret).verify(r.body, headers(r)) as any;
    expect(Object.keys(body)).toEqual(["type", "timestamp", "data"]);
    expect(body.type).toBe("lead.created");
    expect(body.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Object.keys(body.data).sort()).toEqual(["attribution", "campaign", "created_at", "lead_id", "list_id", "org_id", "phone", "source"]);
    const [lead] = await db.sql`select phone, created_at from leads where id = ${lead_id}`;
    expect(body.data).toEqual({
      lead_id,
      list_id: 101,
      campaign: "ACME",
      org_id: 1,
      phone: lead.phone,
      source: "x".repeat(50),
      created_at: lead.created_at.toISOString(),
      attribution: null,
    });
    const d = await delivery(sent[0].id);
    expect(d).toMatchObject({ status: "delivered", attempts: 1, last_status: 200, last_error: null });
    const [a] = await attempts(d.id);
    expect(a).toMatchObject({ trigger: "schedule", status: 200, error: null, response: "ok", address: "127.0.0.1" });
    expect(a.duration_ms).toBeGreaterThanOrEqual(0);
    expect(a.started_at.getTime()).toBe(Math.floor(clock.now()));

    // The same phone on the same list again is a duplicate: no event, nothing to deliver.
    const dup = await createOrDedupLead(db.sql, (await resolveList(db.sql, null, 101, null))!, parseLeadInput({ phone: lead.phone, list_id: 101 })!, new Date(clock.now()));
    expect(dup.deduped).toBe(true);
    expect(await pump()).toHaveLength(0);
    expect(rx.received).toHaveLength(1);
  });

  test("an event is fanned out once: a second fan-out finds nothing", async () => {
    await endpoint({ org: 1 });
    await intake(101);
    expect((await fanOut(db.sql, clock)).events).toBe(1);
    expect(await fanOut(db.sql, clock)).toEqual({ events: 0, deliveries: [] });
  });
});

describe("routing", () => {
  test("tenant endpoints get their organization's events; house endpoints every organization's; * and lists", async () => {
    const acme = await endpoint({ org: 1, events: ["lead.created"] });
    const bolt = await endpoint({ org: 2, events: ["*"] });
    const house = await endpoint({ org: null, events: ["*"] });
    const other = await endpoint({ org: 1, events: ["message.sent", "call.completed"] });
    const off = await endpoint({ org: 1, events: ["*"] });
    await db.sql`update webhooks set active = false where id = ${off.id}`;

    const a = await intake(101);
    const b = await intake(201);
    const h = await intake(900); // a house campaign's list: an event with no organization
    await pump();
    const leadsAt = (path: string) => rx.at(path).map((r) => JSON.parse(r.body).data.lead_id).sort();
    expect(leadsAt(acme.path)).toEqual([a.lead_id]);
    expect(leadsAt(bolt.path)).toEqual([b.lead_id]);
    expect(leadsAt(house.path)).toEqual([a.lead_id, b.lead_id, h.lead_id].sort());
    expect(rx.at(other.path)).toHaveLength(0);
    expect(rx.at(off.path)).toHaveLength(0);
    // One event reaching two endpoints carries the same id to both.
    const idOf = (path: string, lead: number) => rx.at(path).find((r) => JSON.parse(r.body).data.lead_id === lead)!.headers["webhook-id"];
    expect(idOf(acme.path, a.lead_id)).toBe(idOf(house.path, a.lead_id));
  });

  test("other event types are routed by their type", async () => {
    const calls = await endpoint({ org: 1, events: ["call.completed"] });
    const leads = await endpoint({ org: 1, events: ["lead.created"] });
    await db.sql`
      insert into outbox_events (org_id, type, payload)
      values (1, 'call.completed', ${db.sql.json({ type: "call.completed", timestamp: "2026-11-23T10:00:00.000Z", data: { call_id: 1 } })})`;
    await pump();
    expect(rx.at(calls.path)).toHaveLength(1);
    expect(JSON.parse(rx.at(calls.path)[0].body)).toEqual({ type: "call.completed", timestamp: "2026-11-23T10:00:00.000Z", data: { call_id: 1 } });
    expect(rx.at(leads.path)).toHaveLength(0);
  });
});

describe("retries", () => {
  test("a failure retries after about 5 s with the same id, a new timestamp and signature, and every attempt recorded", async () => {
    const hook = await endpoint({ org: 1 });
    await intake(101);
    rx.respond({ status: 500, body: "boom" });
    const [first] = await pump({ random: () => 0.5 });
    const t0 = clock.now();
    expect(first.result).toEqual({ retryAt: t0 + 5000, error: "HTTP 500" });
    let d = await delivery(first.id);
    expect(d).toMatchObject({ status: "pending", attempts: 1, last_status: 500, last_error: "HTTP 500" });
    expect(d.next_attempt_at.getTime()).toBe(t0 + 5000);

    rx.respond({ status: 204 });
    clock.advance(5000);
    expect(await run(first.id)).toEqual({ done: true });
    d = await delivery(first.id);
    expect(d).toMatchObject({ status: "delivered", attempts: 2, last_status: 204, last_error: null });
    expect(d.delivered_at.getTime()).toBe(clock.now());

    const [r1, r2] = rx.at(hook.path);
    expect(r1.headers["webhook-id"]).toBe(r2.headers["webhook-id"]);
    expect(r1.body).toBe(r2.body);
    expect(Number(r2.headers["webhook-timestamp"]) - Number(r1.headers["webhook-timestamp"])).toBe(5);
    for (const r of [r1, r2]) {
      const ts = new Date(Number(r.headers["webhook-timestamp"]) * 1000);
      expect(r.headers["webhook-signature"]).toBe(new Webhook(hook.secret).sign(r.headers["webhook-id"], ts, r.body));
    }
    const rows = await attempts(first.id);
    expect(rows.map((a) => [a.status, a.error, a.response])).toEqual([
      [500, "HTTP 500", "boom"],
      [204, null, ""],
    ]);
    expect(rows.map((a) => a.started_at.getTime())).toEqual([t0, t0 + 5000]);
  });

  test("ten attempts on the schedule, with jitter, then failed", async () => {
    await endpoint({ org: 1 });
    await intake(101);
    rx.respond({ status: 503 });
    const randoms = [0, 0.999, 0.25, 0.75, 0.5, 0.1, 0.9, 0.3, 0.6];
    let i = 0;
    const o = { random: () => randoms[i++] };
    const [first] = await pump(o);
    let result = first.result;
    const gaps: number[] = [];
    for (let n = 1; n < MAX_ATTEMPTS; n++) {
      expect("retryAt" in result).toBe(true);
      const at = (result as { retryAt: number }).retryAt;
      gaps.push(at - clock.now());
      clock.set(at);
      result = await run(first.id, o);
    }
    expect(result).toEqual({ done: true });
    gaps.forEach((gap, k) => {
      expect(gap).toBe(Math.round(RETRY_DELAYS_MS[k] * (0.9 + 0.2 * randoms[k])));
    });
    expect(await delivery(first.id)).toMatchObject({ status: "failed", attempts: 10, last_status: 503 });
    expect(await attempts(first.id)).toHaveLength(10);
    expect(rx.received).toHaveLength(10);
    // A failed delivery's job is done: running it again sends nothing.
    expect(await run(first.id)).toEqual({ done: true });
    expect(rx.received).toHaveLength(10);
  });

  test("a hanging endpoint times out and retries", async () => {
    await endpoint({ org: 1 });
    await intake(101);
    rx.respond("hang");
    const [first] = await pump({ timeoutMs: 300 });
    expect("retryAt" in first.result).toBe(true);
    const [a] = await attempts(first.id);
    expect(a).toMatchObject({ status: null, error: "timeout: no complete response within 0.3 s", address: "127.0.0.1" });
    expect(a.duration_ms).toBeGreaterThanOrEqual(250);
  });

  test("a refused connection retries with a clear error", async () => {
    const closed = await WebhookReceiver.start();
    const url = closed.url("/gone");
    await closed.stop();
    await endpoint({ org: 1, url });
    await intake(101);
    const [first] = await pump();
    expect("retryAt" in first.result).toBe(true);
    const [a] = await attempts(first.id);
    expect(a.status).toBeNull();
    expect(a.error).toStartWith("connection: ECONNREFUSED");
  });

  test("redirects are not followed: a 3xx is a failed attempt", async () => {
    const hook = await endpoint({ org: 1 });
    rx.respond((r) => (r.path === hook.path ? { status: 307, headers: { location: rx.url("/elsewhere") } } : { status: 200 }));
    await intake(101);
    const [first] = await pump();
    expect("retryAt" in first.result).toBe(true);
    expect(rx.at("/elsewhere")).toHaveLength(0);
    const [a] = await attempts(first.id);
    expect(a).toMatchObject({ status: 307, error: `HTTP 307: redirect to ${rx.url("/elsewhere")} not followed` });
  });

  test("the response kept is capped at 2 KB", async () => {
    await endpoint({ org: 1 });
    rx.respond({ status: 500, body: "é".repeat(5000) });
    await intake(101);
    const [first] = await pump();
    const [a] = await attempts(first.id);
    expect(Buffer.byteLength(a.response)).toBeLessThanOrEqual(2048 + 2);
    expect(a.response.startsWith("é".repeat(1023))).toBe(true);
  });
});

describe("410 Gone", () => {
  test("disables the endpoint, fails its pending deliveries, and stops fan-out to it until it is enabled", async () => {
    const hook = await endpoint({ org: 1 });
    const bystander = await endpoint({ org: 1 });
    rx.respond((r) => (r.path === hook.path ? { status: 500 } : { status: 200 }));
    await intake(101);
    await intake(101);
    const sent = await pump();
    const mine = sent.filter((s) => s.webhook_id === hook.id);
    expect(mine).toHaveLength(2);

    rx.respond((r) => (r.path === hook.path ? { status: 410, body: "gone" } : { status: 200 }));
    clock.advance(6000);
    expect(await run(mine[0].id)).toEqual({ done: true });
    const [w] = await db.sql`select * from webhooks where id = ${hook.id}`;
    expect(w.disabled_at.getTime()).toBe(clock.now());
    expect(w.disabled_reason).toBe(`HTTP 410 Gone from delivery ${mine[0].id}`);
    expect(await delivery(mine[0].id)).toMatchObject({ status: "failed", last_status: 410 });
    // The other pending delivery fails at once; its job, when it comes, sends nothing.
    expect(await delivery(mine[1].id)).toMatchObject({ status: "failed", last_error: `endpoint disabled: HTTP 410 Gone from delivery ${mine[0].id}` });
    const before = rx.at(hook.path).length;
    expect(await run(mine[1].id)).toEqual({ done: true });
    expect(rx.at(hook.path)).toHaveLength(before);

    // New events skip it; the bystander still gets them.
    await intake(101);
    const later = await pump();
    expect(later.map((s) => s.webhook_id)).toEqual([bystander.id]);

    // A new URL (re-provisioning) enables it again.
    await db.sql`update webhooks set url = ${rx.url(hook.path + "b")} where id = ${hook.id}`;
    const [again] = await db.sql`select disabled_at, disabled_reason from webhooks where id = ${hook.id}`;
    expect(again).toEqual({ disabled_at: null, disabled_reason: null });
  });
});

describe("addresses", () => {
  test("without WEBHOOK_ALLOW_PRIVATE a private or loopback endpoint is refused and recorded, never contacted", async () => {
    const plain = await endpoint({ org: 1, url: rx.url("/plain") });
    const loop = await endpoint({ org: 1, url: `https://127.0.0.1:${rx.port}/loop` });
    const named = await endpoint({ org: 1, url: `https://localhost:${rx.port}/named` });
    const mapped = await endpoint({ org: 1, url: `https://[::ffff:127.0.0.1]:${rx.port}/mapped` });
    await intake(101);
    const sent = await pump({ allowPrivate: false });
    expect(sent).toHaveLength(4);
    expect(rx.received).toHaveLength(0);
    const errorOf = async (hookId: number) => {
      const s = sent.find((x) => x.webhook_id === hookId)!;
      expect("retryAt" in s.result).toBe(true);
      const [a] = await attempts(s.id);
      expect(a.status).toBeNull();
      expect(a.address).toBeNull();
      return a.error as string;
    };
    expect(await errorOf(plain.id)).toBe("refused: http URL; endpoints must be https (WEBHOOK_ALLOW_PRIVATE=true allows http)");
    expect(await errorOf(loop.id)).toBe(
      "refused: 127.0.0.1 is a loopback address; webhooks go to public addresses only (WEBHOOK_ALLOW_PRIVATE=true allows it)",
    );
    expect(await errorOf(named.id)).toMatch(/^refused: localhost resolves to (127\.0\.0\.1|::1), a loopback address/);
    expect(await errorOf(mapped.id)).toMatch(/^refused: ::ffff:7f00:1 is a loopback address/);
  });

  test("the connection goes to the address that was checked, not to a second resolution of the name", async () => {
    // rebind.test resolves nowhere but through the injected resolver: a delivery that arrives
    // proves the request was sent to the address the check saw.
    const lookups: string[] = [];
    const lookup = async (name: string) => {
      lookups.push(name);
      return [{ address: "127.0.0.1", family: 4 }];
    };
    const hook = await endpoint({ org: 1, url: `http://rebind.test:${rx.port}/rb` });
    await intake(101);
    await pump({ lookup });
    expect(lookups).toEqual(["rebind.test"]);
    expect(rx.at("/rb")).toHaveLength(1);
    expect(rx.at("/rb")[0].headers.host).toBe(`rebind.test:${rx.port}`);
    // And the check sees what the connection will use: the same name answered privately is refused.
    await db.sql`update webhooks set url = ${`https://rebind.test:${rx.port}/rb`} where id = ${hook.id}`;
    await intake(101);
    const [s] = await pump({ lookup, allowPrivate: false });
    const [a] = await attempts(s.id);
    expect(a.error).toContain("refused: rebind.test resolves to 127.0.0.1, a loopback address");
    expect(rx.at("/rb")).toHaveLength(1);
  });

  test("TLS: an untrusted certificate is a TLS error that retries", async () => {
    const tlsRx = await WebhookReceiver.start({ tls: SELF_SIGNED });
    try {
      await endpoint({ org: 1, url: `https://hooks.test:${tlsRx.port}/t` });
      await intake(101);
      const [s] = await pump({ lookup: async () => [{ address: "127.0.0.1", family: 4 }] });
      expect("retryAt" in s.result).toBe(true);
      const [a] = await attempts(s.id);
      expect(a.status).toBeNull();
      expect(a.error).toStartWith("TLS: ");
      expect(tlsRx.received).toHaveLength(0);
    } finally {
      await tlsRx.stop();
    }
  });

  test("TLS: the endpoint's own name is sent as SNI when connecting to its checked address", async () => {
    const probe = await startSniProbe();
    try {
      await endpoint({ org: 1, url: `https://hooks.test:${probe.port}/t` });
      await intake(101);
      const [s] = await pump({ lookup: async () => [{ address: "127.0.0.1", family: 4 }] });
      expect("retryAt" in s.result).toBe(true);
      expect(probe.names).toEqual(["hooks.test"]);
    } finally {
      await probe.stop();
    }
  });
});

describe("secret rotation", () => {
  test("re-provisioning a new secret signs the following attempts with it", async () => {
    const oldSecret = newSecret();
    const file = (secret: string) => ({
      webhooks: [{ id: 5000, org_id: 1, url: rx.url("/rot"), secret, events: ["lead.created"] }],
    });
    await applyProvisioning(db.sql, file(oldSecret));
    await intake(101);
    rx.respond({ status: 500 });
    const [s] = await pump();
    const newer = newSecret();
    await applyProvisioning(db.sql, file(newer));
    rx.respond({ status: 200 });
    clock.advance(5000);
    await run(s.id);
    const [r1, r2] = rx.at("/rot");
    const check = (secret: string, r: Received) => {
      const ts = new Date(Number(r.headers["webhook-timestamp"]) * 1000);
      return new Webhook(secret).sign(r.headers["webhook-id"], ts, r.body) === r.headers["webhook-signature"];
    };
    expect([check(oldSecret, r1), check(newer, r1)]).toEqual([true, false]);
    expect([check(oldSecret, r2), check(newer, r2)]).toEqual([false, true]);
  });
});

describe("workers", () => {
  /** A job runner of its own (an instance), running delivery jobs with `run`. */
  const runner = (sql: Sql, run: JobHandler["run"]) =>
    new JobRunner(sql, clock, [{ kind: DELIVER_KIND, concurrency: 16, groupConcurrency: 16, run }], { pollMs: 10, drainMs: 10 });

  test("a worker that dies mid-attempt: the delivery is retried once its lease ends, the lost run recorded", async () => {
    const hook = await endpoint({ org: 1 });
    await intake(101);
    const { deliveries } = await fanOut(db.sql, clock);
    const id = deliveries[0].id;
    // An instance claims the job, sends the event, and dies before recording anything. Its own
    // client, ended before its stop: a process that died cannot release what it claimed (a stop
    // would, src/jobs/queue.ts).
    let sent = false;
    const doomedSql = connect(db.url, { max: 2, statementTimeoutMs: 0 });
    const doomed = runner(doomedSql, async () => {
      const d = (await loadDelivery(db.sql, id))!;
      const body = JSON.stringify(d.payload);
      await sendAttempt(d.url, signedHeaders(d.secret, `evt_${d.event_id}`, Math.floor(clock.now() / 1000), body), body, opts());
      sent = true;
      return new Promise<never>(() => {});
    });
    doomed.start();
    await until(() => sent);
    await doomedSql.end({ timeout: 0 });
    await doomed.stop();
    expect(rx.at(hook.path)).toHaveLength(1);
    // Another instance does not touch it while the lease lasts …
    const live = runner(db.sql, (job) => deliverWebhook(db.sql, clock, job, opts()));
    live.start();
    try {
      clock.advance(59_000);
      await Bun.sleep(100);
      expect(rx.at(hook.path)).toHaveLength(1);
      // … and retries it once the lease has ended: the same id again, the lost run recorded.
      clock.advance(1_000);
      await until(async () => (await delivery(id)).status === "delivered");
    } finally {
      await live.stop();
    }
    const [first, second] = rx.at(hook.path);
    expect(rx.at(hook.path)).toHaveLength(2);
    expect(second.headers["webhook-id"]).toBe(first.headers["webhook-id"]);
    const rows = await attempts(id);
    expect(rows.map((a) => [a.trigger, a.status, a.error?.slice(0, 10) ?? null])).toEqual([
      ["schedule", null, "abandoned:"],
      ["schedule", 200, null],
    ]);
    expect(await delivery(id)).toMatchObject({ status: "delivered", attempts: 2 });
    expect((await db.sql`select count(*)::int as n from jobs where ref = ${id}`)[0].n).toBe(0);
  });

  test("runs lost beyond the last attempt fail the delivery without sending", async () => {
    await endpoint({ org: 1 });
    await intake(101);
    const { deliveries } = await fanOut(db.sql, clock);
    const id = deliveries[0].id;
    await db.sql`update webhook_deliveries set attempts = 9 where id = ${id}`;
    expect(await deliverWebhook(db.sql, clock, { ref: id, attempts: 11 }, opts())).toEqual({ done: true });
    expect(rx.received).toHaveLength(0);
    expect(await delivery(id)).toMatchObject({ status: "failed", attempts: 10, last_error: "no attempts left (10 made)" });
  });

  test("three instances fanning out and running delivery jobs at once deliver every event to every endpoint once", async () => {
    const tenant = await endpoint({ org: 1 });
    const house = await endpoint({ org: null });
    const instances: Sql[] = [0, 1, 2].map(() => connect(db.url, { max: 3, statementTimeoutMs: 0 }));
    const runners = instances.map((sql) => runner(sql, (job) => deliverWebhook(sql, clock, job, opts())));
    runners.forEach((r) => r.start());
    try {
      const writers = Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 30; i++) await intake(i % 2 ? 101 : 201);
      });
      let writing = true;
      const done = Promise.all(writers).then(() => (writing = false));
      const fanning = async (sql: Sql) => {
        for (;;) {
          const wasWriting = writing;
          const { events } = await fanOut(sql, clock, 7);
          if (events === 0 && !wasWriting) return;
        }
      };
      await Promise.all([done, ...instances.map(fanning)]);
      await until(() => rx.received.length >= 180);
      await Bun.sleep(200); // time for a duplicate, were there one
      const ids = (path: string) => rx.at(path).map((r) => r.headers["webhook-id"]);
      expect(ids(house.path)).toHaveLength(120);
      expect(new Set(ids(house.path)).size).toBe(120);
      expect(ids(tenant.path)).toHaveLength(60);
      expect(new Set(ids(tenant.path)).size).toBe(60);
      const [left] = await db.sql`select count(*)::int as n from outbox_events where dispatched_at is null`;
      expect(left.n).toBe(0);
      const [att] = await db.sql`
        select count(*)::int as n from webhook_attempts a join webhook_deliveries d on d.id = a.delivery_id
        where d.webhook_id in (${tenant.id}, ${house.id})`;
      expect(att.n).toBe(180);
    } finally {
      await Promise.all(runners.map((r) => r.stop()));
      await Promise.all(instances.map((s) => s.end()));
    }
  });
});

describe("replay", () => {
  test("sends a failed delivery again now, as a new attempt of the same event id", async () => {
    const hook = await endpoint({ org: 1 });
    await intake(101);
    rx.respond({ status: 500 });
    const [s] = await pump();
    await db.sql`update webhook_deliveries set status = 'failed' where id = ${s.id}`;
    rx.respond({ status: 200, body: "thanks" });
    clock.advance(60_000);
    const replayed = await replayDelivery(db.sql, clock, s.id, opts());
    expect(replayed.outcome).toMatchObject({ status: 200, error: null, response: "thanks" });
    const [r1, r2] = rx.at(hook.path);
    expect(r2.headers["webhook-id"]).toBe(r1.headers["webhook-id"]);
    expect(r2.headers["webhook-id"]).toBe(replayed.event_id);
    expect(new Webhook(hook.secret).verify(r2.body, headers(r2))).toBeTruthy();
    expect(await delivery(s.id)).toMatchObject({ status: "delivered", attempts: 1 });
    expect((await attempts(s.id)).map((a) => a.trigger)).toEqual(["schedule", "replay"]);
  });

  test("a failed replay leaves a pending delivery's schedule alone", async () => {
    await endpoint({ org: 1 });
    await intake(101);
    rx.respond({ status: 500 });
    const [s] = await pump();
    const before = await delivery(s.id);
    const replayed = await replayDelivery(db.sql, clock, s.id, opts());
    expect(replayed.outcome.status).toBe(500);
    const after = await delivery(s.id);
    expect(after).toMatchObject({ status: "pending", attempts: 1 });
    expect(after.next_attempt_at).toEqual(before.next_attempt_at);
  });

  test("is refused for a disabled or inactive endpoint, or no such delivery", async () => {
    const hook = await endpoint({ org: 1 });
    await intake(101);
    const { deliveries } = await fanOut(db.sql, clock);
    const id = deliveries[0].id;
    await db.sql`update webhooks set disabled_at = now(), disabled_reason = 'HTTP 410 Gone' where id = ${hook.id}`;
    await expect(replayDelivery(db.sql, clock, id, opts())).rejects.toThrow(
      `delivery ${id}: endpoint disabled: HTTP 410 Gone; enable it with \`leadline webhooks enable ID\` first`,
    );
    await db.sql`update webhooks set disabled_at = null, active = false where id = ${hook.id}`;
    await expect(replayDelivery(db.sql, clock, id, opts())).rejects.toThrow(`delivery ${id}: endpoint inactive`);
    await expect(replayDelivery(db.sql, clock, 999999, opts())).rejects.toBeInstanceOf(ReplayRefused);
    await expect(replayDelivery(db.sql, clock, 999999, opts())).rejects.toThrow("delivery 999999 does not exist");
    expect(rx.received).toHaveLength(0);
  });
});

describe("retention", () => {
  test("events older than 30 days go with their deliveries and attempts, unless one is still pending", async () => {
    await endpoint({ org: 1 });
    await intake(101);
    await intake(101);
    await intake(101);
    rx.respond((r) => (JSON.parse(r.body).data.lead_id % 3 === 0 ? { status: 500 } : { status: 200 }));
    const sent = await pump();
    const events = (await db.sql`select d.event_id, d.status from webhook_deliveries d where d.id = any(${sent.map((x) => x.id)}::bigint[])`);
    const old = new Date(clock.now() - EVENT_RETENTION_MS - 1000);
    await db.sql`update outbox_events set created_at = ${old} where id = any(${events.map((e) => e.event_id)}::bigint[])`;
    const fresh = await intake(101);
    await fanOut(db.sql, clock);
    const pendingEvent = events.find((e) => e.status === "pending")?.event_id;
    const before = (await db.sql`select count(*)::int as n from outbox_events`)[0].n;
    const removed = await pruneEvents(db.sql, clock.now());
    expect(removed).toBe(events.filter((e) => e.status !== "pending").length);
    expect((await db.sql`select count(*)::int as n from outbox_events`)[0].n).toBe(before - removed);
    const left = await db.sql`select id from outbox_events where id = any(${events.map((e) => e.event_id)}::bigint[])`;
    expect(left.map((r) => r.id)).toEqual(pendingEvent === undefined ? [] : [pendingEvent]);
    const orphans = await db.sql`
      select count(*)::int as n from webhook_attempts a where not exists (select 1 from webhook_deliveries d where d.id = a.delivery_id)`;
    expect(orphans[0].n).toBe(0);
    expect((await db.sql`select 1 from outbox_events where (payload #>> '{data,lead_id}')::bigint = ${fresh.lead_id}`).length).toBe(1);
  });
});
