// Secrets at rest (docs/operations.md and docs/security.md, "Secrets at rest"): provider credentials and webhook secrets sealed with
// LEADLINE_SECRET_KEY in the rows and in a real pg_dump; sends, webhook deliveries and Twilio's
// inbound signature check working through the sealed values; rotation; serve refusing a key that
// does not open them; and the same installation without a key, in clear, with one warning.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { TEST_DEADLINE_MS } from "./harness/deadline";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Webhook } from "standardwebhooks";
import { ConfigError, loadConfig } from "../src/config";
import { connect } from "../src/db/client";
import { start } from "../src/app/server";
import { webhooksCommand } from "../src/events/command";
import { provisionCommand } from "../src/provision/command";
import { secretsCommand } from "../src/secrets/command";
import { isSealed, keyId, openSecret, seal, SecretError } from "../src/secrets/seal";
import { call, startApp, type TestApp } from "./harness/app";
import { capture } from "./harness/capture";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";
import { signCallback, startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";
import { startFakeSmtp, type FakeSmtp } from "./harness/fake-smtp";
import { WebhookReceiver, type Received } from "./harness/webhook-receiver";

const PG_DUMP = "/usr/lib/postgresql/15/bin/pg_dump";
const PUBLIC = "https://leadline.example";
const ROOT = resolve(import.meta.dir, "..");
// The webhook receiver listens on 127.0.0.1.
const APP_ENV = { BASE_URL: PUBLIC, WEBHOOK_ALLOW_PRIVATE: "true" };

// Distinctive plaintexts, so that finding any of them anywhere in a dump means it leaked.
const TOKEN = "twilio-auth-" + randomBytes(8).toString("hex");
const SMTP_USER = "smtp-user-" + randomBytes(4).toString("hex");
const SMTP_PASS = "smtp-pass-" + randomBytes(8).toString("hex");
const HOOK_KEY = randomBytes(24);
const HOOK_SECRET = "whsec_" + HOOK_KEY.toString("base64");

const K1 = randomBytes(32);
const K2 = randomBytes(32);
const K1_ENV = K1.toString("base64");
const K2_ENV = K2.toString("hex");

let twilio: FakeTwilio;
let smtp: FakeSmtp;
let rx: WebhookReceiver;
const clock = new ManualClock();

beforeAll(async () => {
  twilio = await startFakeTwilio();
  smtp = await startFakeSmtp();
  rx = await WebhookReceiver.start();
});
afterAll(async () => {
  await twilio?.stop();
  await smtp?.stop();
  await rx?.stop();
});
beforeEach(() => {
  clock.set(Date.now());
  twilio.reset();
  smtp.reset();
  rx.clear();
  rx.respond({ status: 200, body: "ok" });
});

const smtpUrl = () => smtp.url(SMTP_USER, SMTP_PASS);
const plaintexts = () => [TOKEN, SMTP_PASS, smtpUrl(), HOOK_SECRET, HOOK_KEY.toString("base64")];

function provisioningFile(token = TOKEN): string {
  const dir = mkdtempSync(join(tmpdir(), "leadline-secrets-"));
  const path = join(dir, "provision.json");
  writeFileSync(
    path,
    JSON.stringify({
      orgs: [
        {
          id: 1,
          name: "Acme",
          company: "Acme Roofing LLC",
          billing: { status: "active", subscription: "active", credits: 100, sms_cost: 0.01, email_cost: 0.001 },
          sms: { base_url: twilio.url, account_sid: "ACacme", auth_token: token, from: "5125550100" },
          email: { smtp_url: smtpUrl(), from: "Acme <hello@acme.example>" },
        },
      ],
      webhooks: [{ id: 1, org_id: 1, url: rx.url("/hook"), secret: HOOK_SECRET, events: ["lead.created"] }],
    }),
  );
  return path;
}

const provision = (db: TestDatabase, key: Buffer | null, token = TOKEN) =>
  capture(() => provisionCommand(db.sql, [provisioningFile(token)], clock, key));

async function storedRow(db: TestDatabase) {
  const [row] = await db.sql<{ token: string; smtp: string; secret: string; orgs: string; webhooks: string }[]>`
    select o.sms->>'auth_token' as token, o.email->>'smtp_url' as smtp, w.secret,
           (select string_agg(x::text, ' ') from orgs x) as orgs, (select string_agg(x::text, ' ') from webhooks x) as webhooks
    from orgs o, webhooks w where o.id = 1 and w.id = 1`;
  return row;
}

let phoneSeq = 0;
async function lead(db: TestDatabase): Promise<number> {
  const phone = `51277${String(10000 + ++phoneSeq).slice(-5)}`;
  const [row] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, email, state) values (101, ${phone}, 'Dana', 'dana@example.com', 'TX')
    returning id`;
  return row.id;
}

/** An SMS, an email and an inbound text through the app; each provider sees the plaintext. */
async function sendsWork(db: TestDatabase, app: TestApp) {
  const k = (await makeKey(db.sql, { scopes: ["messages:write"], org: 1 })).key;
  const id = await lead(db);
  const send = (channel: string) =>
    call(app.base, "/hooks/api_v1.php?r=messages", {
      method: "POST",
      key: k,
      json: { lead_id: id, channel, body: "Hi", subject: "Hello", operation_id: `op-${randomBytes(6).toString("hex")}` },
    });
  const sms = await send("sms");
  expect([sms.status, sms.body]).toEqual([200, { ok: true, message_id: expect.any(Number) }]);
  expect(twilio.requests.at(-1)!.auth).toEqual({ user: "ACacme", pass: TOKEN });
  const email = await send("email");
  expect([email.status, email.body]).toEqual([200, { ok: true, message_id: expect.any(Number) }]);
  expect(smtp.mails.at(-1)!.user).toBe(SMTP_USER);

  // Twilio's inbound text, signed with the plaintext token: accepted; a forgery is not.
  const sid = "SM" + randomBytes(16).toString("hex");
  const params = { From: "+1" + (await db.sql`select phone from leads where id = ${id}`)[0].phone, To: "+15125550100", Body: "hello", MessageSid: sid };
  const inbound = (token: string) =>
    fetch(app.base + "/hooks/sms_inbound.php", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signCallback(token, PUBLIC + "/hooks/sms_inbound.php", params) },
      body: new URLSearchParams(params).toString(),
    });
  expect((await inbound("not-the-token")).status).toBe(403);
  expect((await inbound(TOKEN)).status).toBe(200);
  expect((await db.sql`select count(*)::int as n from messages where provider_id = ${sid}`)[0].n).toBe(1);
}

const emit = (db: TestDatabase) =>
  db.sql`insert into outbox_events (type, org_id, payload)
         values ('lead.created', 1, ${db.sql.json({ type: "lead.created", timestamp: new Date(clock.now()).toISOString(), data: { lead_id: 1 } })})
         returning id`;

async function until(check: () => Promise<boolean>, ms = 10_000) {
  const end = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > end) throw new Error("condition not reached in time");
    await Bun.sleep(25);
  }
}

/** A lead.created event delivered by the running service, verified by standardwebhooks with the plaintext secret. */
async function deliveryWorks(db: TestDatabase) {
  await emit(db);
  await rx.waitFor(1, 10_000);
  expect(rx.received).toHaveLength(1);
  expect(() => verify(rx.received[0])).not.toThrow();
}

/** standardwebhooks (independent of src/events/sign.ts) checks the signature with the plaintext secret. */
function verify(r: Received): unknown {
  const headers = { "webhook-id": r.headers["webhook-id"], "webhook-timestamp": r.headers["webhook-timestamp"], "webhook-signature": r.headers["webhook-signature"] };
  return new Webhook(HOOK_SECRET).verify(r.body, headers);
}

function pgDump(url: string): string {
  expect(existsSync(PG_DUMP)).toBe(true);
  const out = Bun.spawnSync([PG_DUMP, "--no-owner", "--dbname", url], { stdout: "pipe", stderr: "pipe" });
  if (out.exitCode !== 0) throw new Error(`pg_dump failed: ${out.stderr.toString()}`);
  return out.stdout.toString();
}

/** `src/main.ts serve` with `env`: its stdout up to "listening" (then stopped), or its exit code and stderr. */
async function serveOnce(url: string, env: Record<string, string>): Promise<{ listening: boolean; stdout: string; stderr: string; code: number | null }> {
  const base = { ...process.env } as Record<string, string>;
  delete base.LEADLINE_SECRET_KEY;
  delete base.LEADLINE_SECRET_KEY_OLD;
  const proc = Bun.spawn([process.execPath, "src/main.ts", "serve"], {
    cwd: ROOT,
    env: { ...base, DATABASE_URL: url, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info", NPK_IP_SALT: "salt", REQUEST_DEADLINE_MS: String(TEST_DEADLINE_MS), ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = proc.stdout.getReader();
  let stdout = "";
  const end = Date.now() + 30_000;
  while (Date.now() < end && !stdout.includes('"listening"')) {
    const { done, value } = await reader.read();
    if (done) break;
    stdout += new TextDecoder().decode(value);
  }
  const listening = stdout.includes('"listening"');
  if (listening) proc.kill("SIGTERM");
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    stdout += new TextDecoder().decode(value);
  }
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  return { listening, stdout, stderr, code: listening ? null : code };
}

describe("seal and open", () => {
  test("stored form, round trip, and clear failures for no key, another key and a damaged value", () => {
    const sealed = seal(K1, "s3cret");
    expect(sealed).toMatch(new RegExp(`^enc:v1:${keyId(K1)}:[A-Za-z0-9+/]+=*$`));
    expect(Buffer.from(sealed.split(":")[3], "base64").length).toBe(12 + 6 + 16);
    expect(seal(K1, "s3cret")).not.toBe(sealed); // a fresh IV each time
    expect(openSecret(K1, sealed)).toBe("s3cret");
    expect(seal(null, "s3cret")).toBe("s3cret");
    expect(openSecret(K1, "plain")).toBe("plain");
    expect(openSecret(null, "plain")).toBe("plain");
    expect(() => openSecret(null, sealed, "x")).toThrow(new SecretError(`x is sealed with key ${keyId(K1)} but LEADLINE_SECRET_KEY is not set`));
    expect(() => openSecret(K2, sealed, "x")).toThrow(`x is sealed with key ${keyId(K1)}, not with LEADLINE_SECRET_KEY (key ${keyId(K2)})`);
    const body = Buffer.from(sealed.split(":")[3], "base64");
    body[14] ^= 1;
    expect(() => openSecret(K1, `enc:v1:${keyId(K1)}:${body.toString("base64")}`, "x")).toThrow("x is damaged");
  });

  test("LEADLINE_SECRET_KEY is 32 bytes as hex or base64; anything else is refused naming the variable, not the value", () => {
    expect(loadConfig({ LEADLINE_SECRET_KEY: K2_ENV }).secretKey).toEqual(K2);
    expect(loadConfig({ LEADLINE_SECRET_KEY: K1_ENV }).secretKey).toEqual(K1);
    expect(loadConfig({ LEADLINE_SECRET_KEY: K1_ENV.replace(/=+$/, "").replaceAll("+", "-").replaceAll("/", "_") }).secretKey).toEqual(K1);
    expect(loadConfig({}).secretKey).toBeNull();
    for (const bad of ["abc", K2_ENV.slice(2), randomBytes(16).toString("base64"), randomBytes(33).toString("base64"), K2_ENV + "00"]) {
      expect(() => loadConfig({ LEADLINE_SECRET_KEY: bad })).toThrow(ConfigError);
      try {
        loadConfig({ LEADLINE_SECRET_KEY_OLD: bad });
      } catch (err) {
        expect((err as Error).message).toStartWith("LEADLINE_SECRET_KEY_OLD must be 32 bytes");
        expect((err as Error).message).not.toContain(bad);
      }
    }
  });
});

describe("with LEADLINE_SECRET_KEY", () => {
  let db: TestDatabase;
  let app: TestApp | undefined;
  beforeAll(async () => {
    db = await testDatabase();
    await seedWorld(db.sql);
  });
  afterAll(async () => {
    await app?.stop();
    await db?.drop();
  });

  test("provisioning seals every credential and secret: the rows and a real pg_dump hold none of them in clear", async () => {
    const out = await provision(db, K1);
    expect(out.code).toBe(0);
    const row = await storedRow(db);
    for (const v of [row.token, row.smtp, row.secret]) expect(v).toStartWith(`enc:v1:${keyId(K1)}:`);
    expect([openSecret(K1, row.token), openSecret(K1, row.smtp), openSecret(K1, row.secret)]).toEqual([TOKEN, smtpUrl(), HOOK_SECRET]);
    for (const p of plaintexts()) {
      expect(row.orgs).not.toContain(p);
      expect(row.webhooks).not.toContain(p);
    }
    const dump = pgDump(db.url);
    expect(dump).toContain(`enc:v1:${keyId(K1)}:`);
    expect(dump).toContain("ACacme"); // the dump does hold the org's settings
    for (const p of plaintexts()) expect(dump).not.toContain(p);
  });

  test("applying the same file again writes nothing (a sealed value is kept when it holds the same secret)", async () => {
    const before = await storedRow(db);
    const again = await provision(db, K1);
    expect(again.err).toContain("orgs: 1 unchanged");
    expect(again.err).toContain("webhooks: 1 unchanged");
    expect(await storedRow(db)).toEqual(before);
  });

  test("sends to Twilio and SMTP, Twilio's inbound signature check and a webhook delivery all use the opened values", async () => {
    app = await startApp(db.url, { ...APP_ENV, LEADLINE_SECRET_KEY: K1_ENV }, { clock });
    await sendsWork(db, app);
    await deliveryWorks(db);
  });

  test("a sealed secret this process cannot open fails the send and the delivery attempt with the reason, sending nothing", async () => {
    try {
      // Sealed under another key after the instance started (as a provisioning run with the wrong key would).
      await db.sql`update orgs set sms = jsonb_set(sms, '{auth_token}', to_jsonb(${seal(K2, TOKEN)}::text)) where id = 1`;
      const k = (await makeKey(db.sql, { scopes: ["messages:write"], org: 1 })).key;
      const r = await call(app!.base, "/hooks/api_v1.php?r=messages", {
        method: "POST",
        key: k,
        json: { lead_id: await lead(db), channel: "sms", body: "Hi", operation_id: "wrong-key-1" },
      });
      expect(r.body).toEqual({ ok: false, message_id: expect.any(Number), reason: "provider_error" });
      const [m] = await db.sql`select status, error from messages where id = ${r.body.message_id}`;
      expect(m).toEqual({ status: "failed", error: `org 1's sms.auth_token is sealed with key ${keyId(K2)}, not with LEADLINE_SECRET_KEY (key ${keyId(K1)})` });
      expect(twilio.requests).toHaveLength(0);
    } finally {
      await db.sql`update orgs set sms = jsonb_set(sms, '{auth_token}', to_jsonb(${seal(K1, TOKEN)}::text)) where id = 1`;
    }
    // The same for a webhook secret: the attempt fails saying why, and nothing is sent unsigned.
    await db.sql`update webhooks set secret = ${seal(K2, HOOK_SECRET)} where id = 1`;
    try {
      const [event] = await emit(db);
      const attempt = async () =>
        (await db.sql`select a.error from webhook_attempts a join webhook_deliveries d on d.id = a.delivery_id where d.event_id = ${event.id}`)[0];
      await until(async () => (await attempt()) !== undefined);
      expect((await attempt()).error).toBe(`webhook 1's secret is sealed with key ${keyId(K2)}, not with LEADLINE_SECRET_KEY (key ${keyId(K1)})`);
      expect(rx.received).toHaveLength(0);
      // Its retry is not this test's business.
      await db.sql`update webhook_deliveries set status = 'failed' where event_id = ${event.id}`;
      await db.sql`delete from jobs`;
    } finally {
      await db.sql`update webhooks set secret = ${seal(K1, HOOK_SECRET)} where id = 1`;
    }
  });

  test("serve refuses to start without the key or with another, in one line naming the key ids; provisioning without it is refused", async () => {
    const none = await serveOnce(db.url, {});
    expect(none.listening).toBe(false);
    expect(none.code).toBe(1);
    expect(none.stderr.trim().split("\n")).toHaveLength(1);
    expect(none.stderr).toStartWith(`leadline: org 1's email.smtp_url is sealed with key ${keyId(K1)} but LEADLINE_SECRET_KEY is not set (and 2 more)`);
    const other = await serveOnce(db.url, { LEADLINE_SECRET_KEY: K2_ENV });
    expect([other.listening, other.code]).toEqual([false, 1]);
    expect(other.stderr).toContain(`sealed with key ${keyId(K1)}, not with LEADLINE_SECRET_KEY (key ${keyId(K2)})`);
    const bad = await serveOnce(db.url, { LEADLINE_SECRET_KEY: "not-a-key" });
    expect([bad.listening, bad.code, bad.stderr]).toEqual([false, 1, "leadline: LEADLINE_SECRET_KEY must be 32 bytes as 64 hex digits or as base64 (openssl rand -base64 32)\n"]);
    const before = await storedRow(db);
    await expect(provision(db, null)).rejects.toThrow("is not set");
    expect(await storedRow(db)).toEqual(before);
    // With the key: starts, and says nothing about secrets in clear.
    const ok = await serveOnce(db.url, { LEADLINE_SECRET_KEY: K1_ENV });
    expect(ok.listening).toBe(true);
    expect(ok.stdout).not.toContain("LEADLINE_SECRET_KEY");
  }, 60_000);

  test("rotation re-seals every value under the new key in one step; serve then needs the new key", async () => {
    await app?.stop(); // as docs/security.md says: serve is stopped for a rotation
    app = undefined;
    // Without the old key, or with a wrong one: refused, nothing changed.
    const before = await storedRow(db);
    await expect(capture(() => secretsCommand(db.sql, ["rotate"], { key: K2, old: null }))).rejects.toThrow(
      `is sealed with key ${keyId(K1)}: set LEADLINE_SECRET_KEY_OLD to that key`,
    );
    await expect(capture(() => secretsCommand(db.sql, ["rotate"], { key: K2, old: randomBytes(32) }))).rejects.toThrow("and LEADLINE_SECRET_KEY_OLD is key");
    expect(await storedRow(db)).toEqual(before);

    const r = await capture(() => secretsCommand(db.sql, ["rotate"], { key: K2, old: K1 }));
    expect(r).toEqual({ code: 0, out: `secrets under key ${keyId(K2)}: 3 re-sealed from the old key, 0 sealed from clear, 0 already sealed\n`, err: "" });
    const row = await storedRow(db);
    for (const v of [row.token, row.smtp, row.secret]) expect(v).toStartWith(`enc:v1:${keyId(K2)}:`);
    expect([openSecret(K2, row.token), openSecret(K2, row.smtp), openSecret(K2, row.secret)]).toEqual([TOKEN, smtpUrl(), HOOK_SECRET]);
    const again = await capture(() => secretsCommand(db.sql, ["rotate"], { key: K2, old: K1 }));
    expect(again.out).toContain("0 re-sealed from the old key, 0 sealed from clear, 3 already sealed");
    expect(await storedRow(db)).toEqual(row);
    expect((await capture(() => secretsCommand(db.sql, ["status"], { key: K2, old: null }))).out).toBe(`key ${keyId(K2)} (LEADLINE_SECRET_KEY): 3\n`);
    for (const p of plaintexts()) expect(pgDump(db.url)).not.toContain(p);

    // The old key no longer starts the service; the new one does, and everything works.
    const sql = connect(db.url, { max: 2, statementTimeoutMs: 5000, applicationName: "leadline-test-app" });
    await expect(
      start(loadConfig({ DATABASE_URL: db.url, PORT: "0", HOST: "127.0.0.1", LEADLINE_SECRET_KEY: K1_ENV }), { sql, direct: sql, background: sql, embedded: false, close: async () => {} }),
    ).rejects.toThrow(`sealed with key ${keyId(K2)}, not with LEADLINE_SECRET_KEY (key ${keyId(K1)})`);
    await sql.end({ timeout: 5 });
    app = await startApp(db.url, { ...APP_ENV, LEADLINE_SECRET_KEY: K2_ENV }, { clock });
    await sendsWork(db, app);
    await deliveryWorks(db);

    // An operator's replay opens the secret with the CLI's key too.
    const [{ id }] = await db.sql`select id from webhook_deliveries where status = 'delivered' order by id desc limit 1`;
    rx.clear();
    const replay = (secretKey: Buffer | null) =>
      capture(() => webhooksCommand(db.sql, ["replay", String(id)], { allowPrivate: true, secretKey, clock }));
    await expect(replay(null)).rejects.toThrow(`webhook 1's secret is sealed with key ${keyId(K2)} but LEADLINE_SECRET_KEY is not set`);
    expect(rx.received).toHaveLength(0);
    expect((await replay(K2)).code).toBe(0);
    expect(rx.received).toHaveLength(1);
    expect(() => verify(rx.received[0])).not.toThrow();
  });

  test("a changed credential is used at once by a running instance (the opened values are cached by stored text)", async () => {
    const k = (await makeKey(db.sql, { scopes: ["messages:write"], org: 1 })).key;
    const send = async () =>
      call(app!.base, "/hooks/api_v1.php?r=messages", {
        method: "POST",
        key: k,
        json: { lead_id: await lead(db), channel: "sms", body: "Hi", operation_id: `op-${randomBytes(6).toString("hex")}` },
      });
    expect((await send()).body.ok).toBe(true);
    expect(twilio.requests.at(-1)!.auth!.pass).toBe(TOKEN);
    const newer = "twilio-auth-" + randomBytes(8).toString("hex");
    expect((await provision(db, K2, newer)).err).toContain("orgs: 1 updated");
    expect((await send()).body.ok).toBe(true);
    expect(twilio.requests.at(-1)!.auth!.pass).toBe(newer);
    expect(pgDump(db.url)).not.toContain(newer);
    expect((await provision(db, K2)).err).toContain("orgs: 1 updated");
  });

  test("a provisioning file cannot give a value in the sealed form (it would be read back as sealed)", async () => {
    await expect(provision(db, K2, seal(K2, TOKEN))).rejects.toThrow("orgs[0].sms.auth_token: give the token itself, not a sealed value");
  });

  test("the command's help and usage", async () => {
    await expect(secretsCommand(db.sql, ["rotate"], { key: null, old: null })).rejects.toThrow("LEADLINE_SECRET_KEY (the new key) is not set");
    await expect(secretsCommand(db.sql, ["spin"], { key: K2, old: null })).rejects.toThrow('secrets: unknown subcommand "spin"');
    // --help needs no database: the executable's entry answers it before opening one.
    const env = { ...process.env, DATABASE_URL: "postgres://nobody@127.0.0.1:1/none", LEADLINE_SECRET_KEY: "" };
    const proc = Bun.spawnSync([process.execPath, "src/main.ts", "secrets", "rotate", "--help"], { cwd: ROOT, env, stdout: "pipe", stderr: "pipe" });
    expect([proc.exitCode, proc.stderr.toString()]).toEqual([0, ""]);
    expect(proc.stdout.toString()).toStartWith("usage: leadline secrets rotate\n");
    expect(proc.stdout.toString()).toContain("LEADLINE_SECRET_KEY_OLD");
  });
});

describe("without LEADLINE_SECRET_KEY", () => {
  let db: TestDatabase;
  let app: TestApp | undefined;
  beforeAll(async () => {
    db = await testDatabase();
    await seedWorld(db.sql);
  });
  afterAll(async () => {
    await app?.stop();
    await db?.drop();
  });

  test("values are stored as given and everything works; serve warns once that they are in clear", async () => {
    expect((await provision(db, null)).code).toBe(0);
    const row = await storedRow(db);
    expect([row.token, row.smtp, row.secret]).toEqual([TOKEN, smtpUrl(), HOOK_SECRET]);
    expect(isSealed(row.token)).toBe(false);
    app = await startApp(db.url, APP_ENV, { clock });
    await sendsWork(db, app);
    await deliveryWorks(db);
    const served = await serveOnce(db.url, {});
    expect(served.listening).toBe(true);
    const warnings = served.stdout.split("\n").filter((l) => l.includes("LEADLINE_SECRET_KEY is not set"));
    expect(warnings, served.stdout).toHaveLength(1);
    expect(JSON.parse(warnings[0])).toMatchObject({ level: "warn", msg: expect.stringContaining("stored in clear") });
  }, 60_000);

  test("setting a key later: rotate seals what is in clear, without an old key", async () => {
    const r = await capture(() => secretsCommand(db.sql, ["rotate"], { key: K1, old: null }));
    expect(r.out).toBe(`secrets under key ${keyId(K1)}: 0 re-sealed from the old key, 3 sealed from clear, 0 already sealed\n`);
    for (const p of plaintexts()) expect(pgDump(db.url)).not.toContain(p);
    await app?.stop();
    app = await startApp(db.url, { ...APP_ENV, LEADLINE_SECRET_KEY: K1_ENV }, { clock });
    await sendsWork(db, app);
  });
});
