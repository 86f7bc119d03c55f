// Outbound events as `serve` runs them: intake and call reports over HTTP, the outbox fan-out and
// the delivery jobs on the job runner, several instances on one database, a process killed with
// SIGKILL right after a burst of intakes, and the operator's CLI as a process.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { resolve } from "node:path";
import { Webhook } from "standardwebhooks";
import { ENDPOINT_CONCURRENCY } from "../src/events/jobs";
import { call, startApp, type TestApp } from "./harness/app";
import { spawnCli } from "./harness/capture";
import { ManualClock } from "./harness/clock";
import { TEST_DEADLINE_MS } from "./harness/deadline";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";
import { WebhookReceiver } from "./harness/webhook-receiver";

const ENV = { WEBHOOK_ALLOW_PRIVATE: "true" };
const secret = "whsec_" + Buffer.from("an events-serve test signing key").toString("base64");

let db: TestDatabase;
let rx: WebhookReceiver;
let key: string;
const apps: TestApp[] = [];
const children = new Set<Subprocess>();

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  rx = await WebhookReceiver.start();
});
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  rx?.release();
  await Promise.all(apps.map((a) => a.stop()));
  await rx?.stop();
  await db?.drop();
});
beforeEach(async () => {
  key = await newKey();
  rx.respond({ status: 200, body: "ok" });
  rx.clear();
  await db.sql`update webhooks set active = false`;
});

let nextId = 1;
async function endpoint(path: string, org: number | null = null, events = ["*"]) {
  const id = nextId++;
  await db.sql`insert into webhooks (id, org_id, url, secret, events) values (${id}, ${org}, ${rx.url(path)}, ${secret}, ${events})`;
  return id;
}

async function app(clock?: ManualClock) {
  const a = await startApp(db.url, ENV, clock ? { clock } : {});
  apps.push(a);
  return a;
}

async function stop(a: TestApp) {
  await a.stop();
  apps.splice(apps.indexOf(a), 1);
}

// Intake allows 120 an hour per key: each test, and each instance of a burst, has its own.
const newKey = async () => (await makeKey(db.sql, { scopes: ["leads:write", "calls:write"], org: 1 })).key;

let phone = 5125560000;
const intake = (base: string, k = key) =>
  call(base, "/hooks/lead_intake.php", { method: "POST", key: k, json: { phone: String(phone++), list_id: 101, source: "web" } });

/** Resolves once `pred` holds, polling; fails after `ms`. */
async function until(pred: () => boolean | Promise<boolean>, ms = 10_000, what = "condition") {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

const leadIds = (path: string) => rx.at(path).map((r) => JSON.parse(r.body).data.lead_id as number);

describe("serve delivers", () => {
  test("lead.created and call.completed reach a subscribed endpoint, signed, from the running service", async () => {
    await endpoint("/serve");
    const a = await app();
    const r = await intake(a.base);
    expect(r.status).toBe(200);
    await rx.waitFor(1);
    const got = rx.at("/serve")[0];
    const body = new Webhook(secret).verify(got.body, got.headers as any) as any;
    expect(body).toMatchObject({ type: "lead.created", data: { lead_id: r.body.lead_id, list_id: 101, campaign: "ACME", org_id: 1, source: "web" } });

    const c = await call(a.base, "/hooks/calls.php", {
      method: "POST",
      key,
      json: { lead_id: r.body.lead_id, status: "ANSWERED", secs: 61, agent: "agent7", recording_id: 77, epoch: 1_700_000_000, to_number: "5125550101" },
    });
    expect(c.status).toBe(200);
    await rx.waitFor(2);
    const ev = rx.at("/serve")[1];
    const call_ = new Webhook(secret).verify(ev.body, ev.headers as any) as any;
    expect(call_.type).toBe("call.completed");
    expect(call_.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(call_.data).toEqual({
      call_id: c.body.call_id,
      lead_id: r.body.lead_id,
      org_id: 1,
      dial_id: null,
      phone: "",
      to_number: "5125550101",
      status: "ANSWERED",
      secs: 61,
      agent: "agent7",
      recording_id: 77,
      ai_summary: null,
      occurred_at: "2023-11-14T22:13:20.000Z",
      attribution: null,
    });
    await stop(a);
  });

  test("a call with no lead belongs to the reporting key's organization", async () => {
    await endpoint("/t1", 1, ["call.completed"]);
    await endpoint("/t2", 2, ["call.completed"]);
    const a = await app();
    const c = await call(a.base, "/hooks/calls.php", { method: "POST", key, json: { phone: "5125559999", status: "NOANSWER", secs: 0, agent: "agent7" } });
    expect(c.body.lead_id).toBeNull();
    await rx.waitFor(1);
    await Bun.sleep(300);
    expect(rx.at("/t1")).toHaveLength(1);
    expect(rx.at("/t2")).toHaveLength(0);
    expect(JSON.parse(rx.at("/t1")[0].body).data).toMatchObject({ org_id: 1, lead_id: null, phone: "5125559999" });
    await stop(a);
  });

  test("an endpoint that hangs holds only its own share; other endpoints' deliveries go on", async () => {
    await endpoint("/slow");
    await endpoint("/fast");
    rx.respond((r) => (r.path === "/slow" ? "hang" : { status: 200 }));
    const a = await app();
    const n = 40;
    for (let i = 0; i < n; i++) expect((await intake(a.base)).status).toBe(200);
    await until(() => rx.at("/fast").length === n, 10_000, "the fast endpoint's deliveries");
    // The hanging endpoint holds at most its per-endpoint bound of requests open.
    expect(rx.at("/slow").length).toBe(ENDPOINT_CONCURRENCY);
    rx.release(503);
    await stop(a);
  });
});

describe("several instances", () => {
  test("three instances under a burst of intakes deliver every event once, each attempt made once", async () => {
    const hook = await endpoint("/many");
    const instances = [await app(), await app(), await app()];
    const n = 90;
    const keys = [key, await newKey(), await newKey()];
    const replies = await Promise.all(Array.from({ length: n }, (_, i) => intake(instances[i % 3].base, keys[i % 3])));
    expect(replies.every((r) => r.status === 200)).toBe(true);
    await until(() => rx.at("/many").length >= n, 15_000, "every delivery");
    await Bun.sleep(500); // time for a duplicate, were there one
    const ids = rx.at("/many").map((r) => r.headers["webhook-id"]);
    expect(ids).toHaveLength(n);
    expect(new Set(ids).size).toBe(n);
    expect(new Set(leadIds("/many"))).toEqual(new Set(replies.map((r) => r.body.lead_id)));
    const [row] = await db.sql`
      select count(*)::int as attempts, count(distinct a.delivery_id)::int as deliveries
      from webhook_attempts a join webhook_deliveries d on d.id = a.delivery_id where d.webhook_id = ${hook}`;
    expect(row).toEqual({ attempts: n, deliveries: n });
    await Promise.all(instances.map(stop));
  }, 30_000);
});

/** `src/main.ts serve` as its own process on a free port. */
async function spawnServe(): Promise<{ proc: Subprocess; base: string }> {
  const proc = Bun.spawn([process.execPath, "src/main.ts", "serve"], {
    cwd: resolve(import.meta.dir, ".."),
    env: { ...process.env, ...ENV, DATABASE_URL: db.url, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info", REQUEST_DEADLINE_MS: String(TEST_DEADLINE_MS) },
    stdout: "pipe",
    stderr: "pipe",
  });
  children.add(proc);
  const reader = proc.stdout.getReader();
  let text = "";
  const end = Date.now() + 30_000;
  while (Date.now() < end) {
    const { done, value } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
    const line = text.split("\n").find((l) => l.includes('"listening"'));
    if (line) {
      reader.releaseLock();
      void proc.stdout.pipeTo(new WritableStream()).catch(() => {});
      return { proc, base: `http://127.0.0.1:${JSON.parse(line).port}` };
    }
  }
  proc.kill("SIGKILL");
  throw new Error(`serve did not start: ${text} ${await new Response(proc.stderr).text()}`);
}

describe("crash", () => {
  test("SIGKILL right after a burst of intakes loses nothing: after a restart every lead.created arrives", async () => {
    const hook = await endpoint("/crash", 1, ["lead.created"]);
    // Slow answers, so that at the kill some deliveries are in flight and some events not yet fanned out.
    rx.respond({ status: 200, delayMs: 300 });
    const { proc, base } = await spawnServe();
    const n = 60;
    const first = await Promise.all(Array.from({ length: n / 2 }, () => intake(base)));
    await rx.waitFor(5); // deliveries in flight (their answers are slow) …
    const second = await Promise.all(Array.from({ length: n / 2 }, () => intake(base)));
    // Killed the moment one more delivery arrives, so one is surely in flight (its answer is 300 ms
    // away) however long the second burst took; its events are just committed.
    await rx.waitFor(Math.min(rx.at("/crash").length + 1, n));
    proc.kill("SIGKILL");
    const replies = [...first, ...second];
    await proc.exited;
    children.delete(proc);
    expect(replies.every((r) => r.status === 200)).toBe(true);
    const created = replies.map((r) => r.body.lead_id as number);
    const before = new Set(leadIds("/crash"));
    expect(before.size).toBeLessThan(n);

    // Started again; its clock is past the dead process's job leases and delivery claims (60 s).
    rx.respond({ status: 200 });
    const again = await app(new ManualClock(Date.now() + 61_000));
    await until(() => new Set(leadIds("/crash")).size === n, 15_000, "every lead.created after the restart");
    expect(new Set(leadIds("/crash"))).toEqual(new Set(created));
    await Bun.sleep(300);
    // An attempt cut short by the kill is retried (the endpoint may have seen it: same id), and
    // recorded as abandoned; nothing is delivered more often than its attempts allow.
    const rows = await db.sql<{ event_id: number; ok: number; abandoned: number }[]>`
      select d.event_id, count(*) filter (where a.status = 200)::int as ok,
             count(*) filter (where a.error like 'abandoned:%')::int as abandoned
      from webhook_deliveries d join webhook_attempts a on a.delivery_id = d.id
      where d.webhook_id = ${hook} group by d.event_id`;
    expect(rows).toHaveLength(n);
    expect(rows.filter((r) => r.abandoned > 0).length).toBeGreaterThan(0);
    const received = new Map<string, number>();
    for (const r of rx.at("/crash")) received.set(r.headers["webhook-id"], (received.get(r.headers["webhook-id"]) ?? 0) + 1);
    for (const row of rows) {
      expect(row.ok).toBe(1);
      expect(received.get(`evt_${row.event_id}`)!).toBeLessThanOrEqual(1 + row.abandoned);
    }
    const [left] = await db.sql`
      select count(*)::int as n from webhook_deliveries where webhook_id = ${hook} and status <> 'delivered'`;
    expect(left.n).toBe(0);
    await stop(again);
  }, 60_000);
});

describe("the webhooks command as an operator runs it", () => {
  test("list, deliveries, replay: exit statuses and one-line errors", async () => {
    const hook = await endpoint("/cli");
    const a = await app();
    await intake(a.base);
    await rx.waitFor(1);
    await stop(a);
    const list = await spawnCli(db.url, "webhooks", "list");
    expect(list.code).toBe(0);
    expect(list.out).toContain(rx.url("/cli"));
    const dl = await spawnCli(db.url, "webhooks", "deliveries", "--endpoint", String(hook), "--json");
    expect(dl.code).toBe(0);
    const [d] = JSON.parse(dl.out);
    expect(d).toMatchObject({ endpoint: hook, status: "delivered", type: "lead.created" });
    const replay = await spawnCli(db.url, "webhooks", "replay", String(d.id));
    // The CLI process has no WEBHOOK_ALLOW_PRIVATE: a loopback http endpoint is refused, said in one line.
    expect(replay.code).toBe(1);
    expect(replay.err).toBe(
      `leadline: delivery ${d.id} replayed as attempt ${(await db.sql`select max(id)::int as m from webhook_attempts`)[0].m} of evt_${d.event_id}: refused: http URL; endpoints must be https (WEBHOOK_ALLOW_PRIVATE=true allows http)\n`,
    );
    const usage = await spawnCli(db.url, "webhooks", "replay");
    expect(usage.code).toBe(2);
    expect(usage.err).toBe("leadline: usage: leadline webhooks replay DELIVERY_ID\n");
  }, 30_000);
});
