// The log sweep's dedicated scenario (docs/testing.md, "Security sweeps"): one instance at
// LOG_LEVEL=debug with the access log on and LEADLINE_SECRET_KEY set goes through every path that
// handles a secret — keys in the header and in the body (valid, unknown, revoked, without the
// scope), sends through Twilio and SMTP with their credentials (and their failures), Twilio's signed
// callbacks (and a forgery), webhook deliveries signed with the endpoint's secret (and a failing
// endpoint), a booking's reschedule token (good, wrong, on the page), DNI visitors from IPv4 and
// IPv6 addresses, /metrics with its token — and then no line it wrote, no line of a pg_dump of its
// database and no line of `leadline dump`'s holds any of those secrets or client addresses in clear
// (test/harness/sweep.ts scans all three).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeDump } from "../src/dump/dump";
import { setLogLevel } from "../src/log";
import { provisionCommand } from "../src/provision/command";
import { call, startApp, type Reply, type TestApp } from "./harness/app";
import { capture } from "./harness/capture";
import { ManualClock } from "./harness/clock";
import { embeddedBinDir, systemBinDir } from "./harness/cluster";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";
import { postCallback, startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";
import { startFakeSmtp, type FakeSmtp } from "./harness/fake-smtp";
import { canonicalIp, scanLines, type Secret } from "./harness/sweep";
import { WebhookReceiver } from "./harness/webhook-receiver";

const PUBLIC = "https://leadline.example";
const SECRET_KEY = randomBytes(32);
// Distinctive plaintexts, so that finding one anywhere means it leaked.
const TWILIO_TOKEN = "twilio-auth-" + randomBytes(12).toString("hex");
const SMTP_PASS = "smtp-pass-" + randomBytes(12).toString("hex");
const HOOK_SECRET = "whsec_" + randomBytes(24).toString("base64");
const CHOSEN_KEY = "lk_chosen_" + randomBytes(18).toString("base64url");
const METRICS_TOKEN = "metrics-" + randomBytes(16).toString("hex");
const SALT = "salt-" + randomBytes(4).toString("hex");
// Clients from the documentation ranges, IPv4 and IPv6, one per request.
const V4 = Array.from({ length: 60 }, (_, i) => `203.0.113.${i + 1}`);
const V6 = Array.from({ length: 60 }, (_, i) => `2001:db8:${(i + 1).toString(16)}::${(i + 7).toString(16)}`);
let nextClient = 0;
const client = () => (nextClient++ % 2 ? V6 : V4)[Math.floor(nextClient / 2) % 60];

let db: TestDatabase;
let app: TestApp | undefined;
let twilio: FakeTwilio;
let smtp: FakeSmtp;
let rx: WebhookReceiver;
const clock = new ManualClock(Date.now());
const tmp = mkdtempSync(join(tmpdir(), "leadline-sweep-scenario-"));
/** Every line the instance writes to stdout while the scenario runs: log lines and access lines. */
const lines: string[] = [];
const generated: Secret[] = [];

function provisioningFile(): string {
  const path = join(tmp, "provision.json");
  const allDay = [["00:00", "23:59"]];
  writeFileSync(
    path,
    JSON.stringify({
      orgs: [
        {
          id: 1,
          name: "Acme",
          company: "Acme Roofing LLC",
          quiet_hours: { start: "00:00", end: "00:00" },
          billing: { status: "active", subscription: "active", credits: 100, sms_cost: 0.01, email_cost: 0.001 },
          sms: { base_url: twilio.url, account_sid: "ACacme", auth_token: TWILIO_TOKEN, from: "5125550100" },
          email: { smtp_url: smtp.url("mailer", SMTP_PASS), from: "Acme <hello@acme.example>" },
        },
      ],
      api_keys: [{ key: CHOSEN_KEY, name: "chosen", org_id: 1, scopes: ["leads:write", "leads:read"], agent: null }],
      dni_pools: [{ key: "acme-site", org_id: 1, numbers: ["5125550101", "5125550102"], fallback: "5125550100", placeholder: "5125550199" }],
      calendars: [
        {
          id: 1,
          org_id: 1,
          timezone: "UTC",
          slot_minutes: 30,
          capacity: 5,
          min_notice_minutes: 0,
          horizon_days: 7,
          hours: { mon: allDay, tue: allDay, wed: allDay, thu: allDay, fri: allDay, sat: allDay, sun: allDay },
          links: [{ slug: "acme-estimate" }],
        },
      ],
      webhooks: [{ id: 1, org_id: 1, url: rx.url("/hook"), secret: HOOK_SECRET, events: ["*"] }],
      automations: [{ id: 1, org_id: 1, trigger: "new_lead", channel: "email", subject: "Hi", body: "Thanks {first_name}" }],
    }),
  );
  return path;
}

/** Every request from a client address of its own, recorded as a secret. */
function req(path: string, init: Parameters<typeof call>[2] = {}): Promise<Reply> {
  const ip = client();
  const headers = new Headers(init.headers);
  headers.set(nextClient % 3 ? "x-forwarded-for" : "x-real-ip", ip);
  return call(app!.base, path, { ...init, headers });
}

async function until(check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > end) throw new Error("condition not reached in time");
    await Bun.sleep(25);
  }
}

/** The pg_dump of this server's version: the system's, else the embedded package's (what test/run.ts runs then). */
async function pgDumpBinary(): Promise<string> {
  const [{ v }] = await db.sql<{ v: string }[]>`select current_setting('server_version_num') as v`;
  const major = Math.floor(Number(v) / 10000);
  const fits = (bin: string) => existsSync(bin) && Number(Bun.spawnSync([bin, "--version"], { stdout: "pipe" }).stdout.toString().match(/(\d+)\.\d+/)?.[1]) >= major;
  const system = systemBinDir();
  if (system && fits(join(system, "pg_dump"))) return join(system, "pg_dump");
  const embedded = join(embeddedBinDir(), "pg_dump");
  if (fits(embedded)) return embedded;
  throw new Error(`no pg_dump for PostgreSQL ${major}`);
}

let originalWrite: typeof process.stdout.write;

beforeAll(async () => {
  twilio = await startFakeTwilio();
  smtp = await startFakeSmtp();
  rx = await WebhookReceiver.start();
  db = await testDatabase();
  await seedWorld(db.sql);
  const provisioned = await capture(() => provisionCommand(db.sql, [provisioningFile()], clock, SECRET_KEY));
  expect(provisioned.code).toBe(0);
  // From here on, every line the instance writes to stdout is kept (and not printed).
  originalWrite = process.stdout.write;
  process.stdout.write = ((chunk: string | Uint8Array) => (lines.push(...String(chunk).split("\n").filter((l) => l !== "")), true)) as typeof process.stdout.write;
  setLogLevel("debug");
  app = await startApp(
    db.url,
    {
      LOG_LEVEL: "debug",
      ACCESS_LOG: "true",
      LEADLINE_SECRET_KEY: SECRET_KEY.toString("base64"),
      BASE_URL: PUBLIC,
      WEBHOOK_ALLOW_PRIVATE: "true",
      NPK_IP_SALT: SALT,
      METRICS_TOKEN,
      COMMS_INBOUND_LIST_ID: "101",
    },
    { clock },
  );
}, 60_000);

afterAll(async () => {
  await app?.stop();
  if (originalWrite) process.stdout.write = originalWrite;
  setLogLevel("error");
  await twilio?.stop();
  await smtp?.stop();
  await rx?.stop();
  await db?.drop();
  rmSync(tmp, { recursive: true, force: true });
});

test("every secret-bearing path at LOG_LEVEL=debug with the access log: no line and no pg_dump line holds a secret or a client address", async () => {
  const all = ["leads:write", "leads:read", "conversations:read", "messages:write", "cti", "metrics:write", "calls:write"];
  const key = (await makeKey(db.sql, { scopes: all, org: 1, agent: "agent7" })).key;
  const narrow = (await makeKey(db.sql, { scopes: ["metrics:write"], org: 1 })).key;
  const revoked = (await makeKey(db.sql, { scopes: all, org: 1, revoked: true })).key;
  const unknown = "lk_" + randomBytes(32).toString("base64url");
  generated.push(...[key, narrow, revoked, unknown, CHOSEN_KEY].map((value) => ({ kind: "api key" as const, value })));

  // Keys: header and body, good and bad, every key route.
  const intake = await req("/hooks/lead_intake.php", { method: "POST", key, json: { phone: "5125550142", first_name: "Dana", list_id: 101, email: "dana@example.com" } });
  expect(intake.status).toBe(200);
  const lead = intake.body.lead_id as number;
  const form = new URLSearchParams({ api_key: CHOSEN_KEY, phone: "5125550143", first_name: "Eli" }).toString();
  expect((await req("/hooks/lead_intake.php", { method: "POST", body: form, headers: { "content-type": "application/x-www-form-urlencoded" } })).status).toBe(200);
  for (const bad of [unknown, revoked, narrow, unknown.slice(0, -1) + "A", "x".repeat(300)]) {
    expect((await req(`/hooks/api_v1.php?r=leads/${lead}`, { key: bad })).status).toBe(403);
    expect((await req("/hooks/lead_intake.php", { method: "POST", key: bad, json: { phone: "5125550144" } })).status).toBe(403);
  }
  expect((await req(`/hooks/api_v1.php?r=leads/${lead}`, { key })).status).toBe(200);
  expect((await req(`/hooks/api_v1.php?r=conversations/${lead}`, { key })).status).toBe(200);
  expect((await req("/hooks/api_v1.php?r=cti/lookup&phone=5125550142", { key })).status).toBe(200);
  expect((await req("/hooks/api_v1.php?r=cti/dial", { method: "POST", key, json: { phone: "5125550142" } })).status).toBe(200);
  expect((await req("/hooks/cti_queue.php", { key })).status).toBe(200);
  expect((await req("/hooks/kpi_ingest.php", { method: "POST", key: narrow, json: { metric_key: "calls", value: 1 } })).status).toBe(200);
  expect((await req("/hooks/calls.php", { method: "POST", key, json: { lead_id: lead, status: "ANSWERED", secs: 5, agent: "agent7" } })).body).toMatchObject({ ok: true });

  // Sends through both providers with their credentials, then their failures.
  const send = (channel: string, op: string) =>
    req("/hooks/api_v1.php?r=messages", { method: "POST", key, json: { lead_id: lead, channel, body: "Hi", subject: "Hello", operation_id: op } });
  expect((await send("sms", "op-sms-1")).body).toEqual({ ok: true, message_id: expect.any(Number) });
  expect((await send("email", "op-email-1")).body).toEqual({ ok: true, message_id: expect.any(Number) });
  expect((await send("note", "op-note-1")).status).toBe(200);
  twilio.setMode({ kind: "error", code: 20003, message: "Authenticate" });
  expect((await send("sms", "op-sms-2")).body.ok).toBe(false);
  twilio.setMode({ kind: "server_error" });
  await send("sms", "op-sms-3");
  twilio.setMode({ kind: "ok" });
  smtp.rejectRecipient("dana@example.com");
  await send("email", "op-email-2");
  expect(twilio.requests.some((r) => r.auth?.pass === TWILIO_TOKEN)).toBe(true);

  // Twilio's callbacks: signed with the token (status, inbound), and a forgery.
  const sid = twilio.requests[0]!.sid ?? "SM" + "0".repeat(32);
  const status = await postCallback(app!.base, PUBLIC, "/hooks/sms_status.php", TWILIO_TOKEN, { MessageSid: sid, MessageStatus: "delivered", AccountSid: "ACacme" });
  expect(status.status).toBe(200);
  const inbound = { From: "+15125550142", To: "+15125550100", Body: "hello", MessageSid: "SM" + randomBytes(16).toString("hex") };
  expect((await postCallback(app!.base, PUBLIC, "/hooks/sms_inbound.php", TWILIO_TOKEN, inbound)).status).toBe(200);
  expect((await postCallback(app!.base, PUBLIC, "/hooks/sms_inbound.php", TWILIO_TOKEN, inbound, { signature: "forged" })).status).toBe(403);

  // Webhook deliveries signed with the endpoint's secret: one accepted, then a failing endpoint.
  await rx.waitFor(1, 15_000);
  rx.respond({ status: 500, body: "no" });
  await req("/hooks/lead_intake.php", { method: "POST", key, json: { phone: "5125550145", list_id: 101 } });
  await until(async () => (await db.sql`select count(*)::int as n from webhook_attempts where error is not null or status >= 500`)[0].n > 0);

  // A booking: its token in the answer, then used, wrong, and on the page.
  const slots = await req("/book/api.php?action=slots&slug=acme-estimate");
  expect(slots.body.ok).toBe(true);
  const [first, second] = slots.body.slots as { epoch: number }[];
  const booked = await req("/book/api.php?action=book", { method: "POST", json: { slug: "acme-estimate", epoch: first.epoch, name: "Jane", phone: "5125550146", email: "jane@example.com" } });
  expect(booked.body.ok).toBe(true);
  const token = booked.body.token as string;
  generated.push({ kind: "booking token", value: token });
  expect((await req("/book/api.php?action=reschedule", { method: "POST", json: { token, epoch: second.epoch } })).body.ok).toBe(true);
  expect((await req(`/book/api.php?action=slots&slug=acme-estimate&r=${token}`)).body.ok).toBe(true);
  const wrong = randomBytes(32).toString("base64url");
  expect((await req("/book/api.php?action=reschedule", { method: "POST", json: { r: wrong, epoch: first.epoch } })).body.ok).toBe(false);
  expect((await req(`/book/acme-estimate?r=${token}`)).status).toBe(200);

  // DNI visitors from both address families.
  for (let i = 0; i < 6; i++) {
    const visitor = `visitor-${i}`;
    expect((await req("/hooks/dni.php?action=lease", { method: "POST", json: { pool: "acme-site", visitor, landing: "https://acme.example/?gclid=abc" } })).status).toBe(200);
    await req("/hooks/dni.php?action=heartbeat", { method: "POST", json: { pool: "acme-site", visitor } });
    await req("/hooks/dni.php?action=event", { method: "POST", json: { pool: "acme-site", visitor, kind: "click", name: "call" } });
  }
  expect((await req("/metrics", { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).status).toBe(200);
  expect((await req("/metrics", { headers: { authorization: "Bearer wrong-token-0123456789" } })).status).toBeLessThan(500);

  // Everything written and flushed: the workers' stop lines, the access log's last batch.
  await until(async () => smtp.mails.length >= 2);
  await app!.stop();
  app = undefined;

  const secrets: Secret[] = [
    ...generated,
    { kind: "provider credential", value: TWILIO_TOKEN },
    { kind: "provider credential", value: SMTP_PASS },
    { kind: "webhook secret", value: HOOK_SECRET },
    { kind: "webhook secret", value: HOOK_SECRET.slice("whsec_".length) },
    { kind: "metrics token", value: METRICS_TOKEN },
    ...[...V4, ...V6].map((ip) => ({ kind: "client address" as const, value: canonicalIp(ip)! })),
  ];
  // The scenario did write lines of every kind: debug, access lines with hashed clients, warnings.
  const parsed = lines.map((l) => JSON.parse(l));
  expect(parsed.some((l) => l.level === "debug")).toBe(true);
  expect(parsed.filter((l) => l.family !== undefined).length).toBeGreaterThan(50);
  expect(parsed.find((l) => l.family !== undefined)?.client).toMatch(/^[0-9a-f]{64}$/);
  expect(scanLines(lines, secrets)).toEqual([]);

  // And the database, dumped: sealed credentials and secrets, hashed keys, tokens and addresses.
  const dump = Bun.spawnSync([await pgDumpBinary(), "--no-owner", "--dbname", db.url], { stdout: "pipe", stderr: "pipe" });
  if (dump.exitCode !== 0) throw new Error(`pg_dump failed: ${dump.stderr.toString()}`);
  const text = dump.stdout.toString();
  expect(text).toContain("enc:v1:");
  expect(text).toContain("ACacme");
  expect(scanLines(text.split("\n"), secrets)).toEqual([]);

  // And `leadline dump`, the operator's own backup, of the same database.
  const chunks: string[] = [];
  await writeDump(db.sql, { out: (t) => void chunks.push(t), err: () => {}, readInput: async () => "", flush: async () => {} }, new Date());
  const own = chunks.join("");
  expect(own).toContain("enc:v1:");
  expect(scanLines(own.split("\n"), secrets)).toEqual([]);
}, 120_000);
