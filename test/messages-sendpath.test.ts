// The one send path (src/messages/service.ts): a new send and a send queued by quiet hours whose
// time has come go through the same function (sendNow), the only one in src/ that applies a gate
// or calls a provider; its answer is a value, which the API renders with the one serializer.
// Against PostgreSQL with a fake Twilio on 127.0.0.1; time moved by passing `now`, never slept.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { systemActor } from "../src/auth/actor";
import type { RunOutcome } from "../src/automations/queries";
import { automationOperationId, runOutcome } from "../src/automations/service";
import { connect, type Sql } from "../src/db/client";
import { answerOf, parseResult, parseSendInput, resultText, type Actor, type MessageResult } from "../src/messages/model";
import { recoverInterrupted } from "../src/messages/queries";
import { sendDeferred, sendMessage, type SendEnv } from "../src/messages/service";
import { testDatabase, type TestDatabase } from "./harness/db";
import { TEST_DEADLINE_MS } from "./harness/deadline";
import { seedWorld } from "./harness/factory";
import { startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";
import { startProxy } from "./harness/proxy";

const src = resolve(import.meta.dir, "..", "src");

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

/** A file's top-level declarations (name → text, comments removed), split where a line starts one. */
function declarations(text: string): Map<string, string> {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const out = new Map<string, string>();
  let name = "(top)";
  for (const line of code.split("\n")) {
    const m = /^(?:export\s+)?(?:async\s+)?(?:function\*?|const|let|class|interface|type)\s+([A-Za-z0-9_$]+)/.exec(line);
    if (m) name = m[1];
    out.set(name, (out.get(name) ?? "") + line + "\n");
  }
  return out;
}

// The providers' clients and the gates; gates.ts itself composes its pure gates (gate), and the
// clients' own files define them. `gate` alone is also a route's access step (`access.gate(`, src/http/define.ts).
const SEND_CALLS = /(?<!function\s)\b(sendSms|sendEmail|contactGate|billingGate|quietGate|heldGates|(?<!\.)gate)\(/g;
const DEFINED_IN = new Set(["messages/gates.ts", "messages/twilio.ts", "messages/email.ts"]);
const callsIn = (body: string) => [...body.matchAll(SEND_CALLS)].map((m) => m[1]);

describe("structure", () => {
  test("one function in src/ calls the providers and the gates: sendNow in src/messages/service.ts (and mail to a team member, which no gate concerns)", () => {
    const callers = new Map<string, Set<string>>();
    for (const file of files(src)) {
      const rel = relative(src, file);
      if (DEFINED_IN.has(rel)) continue;
      for (const [name, body] of declarations(readFileSync(file, "utf8"))) {
        const calls = callsIn(body);
        if (calls.length > 0) callers.set(`${rel}: ${name}`, new Set([...(callers.get(`${rel}: ${name}`) ?? []), ...calls]));
      }
    }
    expect([...callers.keys()].sort()).toEqual(["messages/service.ts: sendNow", "messages/staff-mail.ts: emailStaff"]);
    // Mail to a team member (an invitation) is not a lead message: the SMTP client alone, no gate.
    expect([...callers.get("messages/staff-mail.ts: emailStaff")!]).toEqual(["sendEmail"]);
    // And it calls each of them (the check above is not vacuous).
    expect([...callers.get("messages/service.ts: sendNow")!].sort()).toEqual(["contactGate", "heldGates", "sendEmail", "sendSms"]);
  });

  test("the check sees a second caller, and not a comment", () => {
    const text = "function a() {\n  contactGate(x);\n}\n// sendSms(y)\nexport async function b() {\n  return gates.sendSms(c);\n}\nconst d = 1;\n";
    const found = [...declarations(text)].map(([name, body]) => [name, callsIn(body)]);
    expect(found).toEqual([["a", ["contactGate"]], ["b", ["sendSms"]], ["d", []]]);
  });
});

let db: TestDatabase;
let other: Sql;
let twilio: FakeTwilio;
// Database steps bounded as the tests' instances bound their requests (harness/deadline.ts).
const env: SendEnv = { baseUrl: "https://leadline.example", deadlineMs: TEST_DEADLINE_MS };
const acme: Actor = { orgId: 1, type: "api_key", id: "11", agent: null, keyId: 11 };
// 2026-01-15 11:00 in Texas; 22:00 there (inside 21:00–08:00); 08:00 the next morning.
const DAY = Date.UTC(2026, 0, 15, 17);
const NIGHT = Date.UTC(2026, 0, 16, 4);
const MORNING_TX = Date.UTC(2026, 0, 16, 14);

beforeAll(async () => {
  db = await testDatabase();
  other = connect(db.url, { max: 2, statementTimeoutMs: 5000, applicationName: "leadline-test-other" });
  await seedWorld(db.sql);
  twilio = await startFakeTwilio();
});
afterAll(async () => {
  await other?.end({ timeout: 5 });
  await db?.drop();
  await twilio?.stop();
});
beforeEach(async () => {
  twilio.reset();
  await db.sql`
    update orgs set timezone = 'America/New_York', quiet_start = '21:00', quiet_end = '08:00', consent = 'implied',
      sms = ${db.sql.json({ base_url: twilio.url, account_sid: "ACacme", auth_token: "acme-token", from: "5125550100" })}
    where id = 1`;
  await db.sql`
    insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost)
    values (1, 'active', 'active', 10, 0.01, 0.001)
    on conflict (org_id) do update set status = 'active', subscription = 'active', credits = 10`;
});

let seq = 0;
async function lead() {
  const [row] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, state) values (101, ${`51255${String(20000 + ++seq).slice(-5)}`}, 'Dana', 'TX') returning id`;
  return row.id;
}
const input = (leadId: number, f: Record<string, unknown> = {}) =>
  parseSendInput({ operation_id: `sp-${Date.now()}-${++seq}`, channel: "sms", body: "Hi {first_name}", lead_id: leadId, ...f });
const message = async (id: number) => (await db.sql`select * from messages where id = ${id}`)[0];
const credits = async () => Number((await db.sql`select credits from org_billing where org_id = 1`)[0].credits);
const failedEvent = async (id: number) =>
  (await db.sql`select payload from outbox_events where type = 'message.failed' and (payload->'data'->>'message_id')::int8 = ${id}`)[0]?.payload;

describe("a queued send goes through the same gates when its time comes", () => {
  test("billing frozen at send time: failed with billing_frozen, its event, nothing charged or sent; a retry replays the first answer", async () => {
    const i = input(await lead());
    const first = await sendMessage(db.sql, acme, i, NIGHT, env);
    expect(first).toEqual({ ok: true, message_id: expect.any(Number), defer_until: MORNING_TX / 1000 });
    await db.sql`update org_billing set status = 'frozen' where org_id = 1`;
    expect(await sendDeferred(db.sql, first.message_id!, MORNING_TX, env)).toEqual({ done: true });
    expect(await message(first.message_id!)).toMatchObject({ status: "failed", error: "billing_frozen" });
    expect((await failedEvent(first.message_id!))?.data).toMatchObject({ reason: "billing_frozen", status: "failed" });
    expect(twilio.requests).toHaveLength(0);
    expect(await credits()).toBe(10);
    // The API's answer to a retry is still the first one, byte for byte, with status 200.
    expect(answerOf(await sendMessage(other, acme, i, MORNING_TX + 1000, env))).toEqual(answerOf(first));
  });

  test("the provider settings removed while it waited: provider_not_configured, the same contact gate as a new send", async () => {
    const id = await lead();
    const queued = await sendMessage(db.sql, acme, input(id), NIGHT, env);
    await db.sql`update orgs set sms = null where id = 1`;
    expect(await sendMessage(db.sql, acme, input(id), MORNING_TX, env)).toEqual({ ok: false, message_id: null, reason: "provider_not_configured" });
    expect(await sendDeferred(db.sql, queued.message_id!, MORNING_TX, env)).toEqual({ done: true });
    expect(await message(queued.message_id!)).toMatchObject({ status: "failed", error: "provider_not_configured" });
    expect(twilio.requests).toHaveLength(0);
  });

  test("the billing row held past the wait: tried again later, still queued, then sent and charged once", async () => {
    const q = await sendMessage(db.sql, acme, input(await lead()), NIGHT, env);
    // Locked by another connection before the run is tried, and held until it has met the lock.
    const locker = await other.reserve();
    try {
      await locker`begin`;
      await locker`select 1 from org_billing where org_id = 1 for update`;
      expect(await sendDeferred(db.sql, q.message_id!, MORNING_TX, { ...env, billingLockMs: 150 })).toEqual({ retryAt: MORNING_TX + 30_000 });
      expect(await message(q.message_id!)).toMatchObject({ status: "queued" });
    } finally {
      await locker`rollback`;
      locker.release();
    }
    expect(await sendDeferred(db.sql, q.message_id!, MORNING_TX + 30_000, env)).toEqual({ done: true });
    expect(await message(q.message_id!)).toMatchObject({ status: "sent", body: "Hi Dana" });
    expect(twilio.requests).toHaveLength(1);
    expect(await credits()).toBe(9.99);
  });

  test("two runs of its job at once: one charge, one provider call", async () => {
    const q = await sendMessage(db.sql, acme, input(await lead()), NIGHT, env);
    const steps = await Promise.all([sendDeferred(db.sql, q.message_id!, MORNING_TX, env), sendDeferred(other, q.message_id!, MORNING_TX, env)]);
    expect(steps).toEqual([{ done: true }, { done: true }]);
    expect(twilio.requests).toHaveLength(1);
    expect(await credits()).toBe(9.99);
    const ledger = await db.sql`select kind from credit_ledger where message_id = ${q.message_id}`;
    expect(ledger.map((r) => r.kind)).toEqual(["charge"]);
  });
});

describe("the answer is a value", () => {
  test("sent, queued, refused and replayed: MessageResult values, rendered by answerOf with the contract's bytes and status", async () => {
    const id = await lead();
    const i = input(id);
    const sent = await sendMessage(db.sql, acme, i, DAY, env);
    expect(sent).toEqual({ ok: true, message_id: expect.any(Number) });
    expect(await sendMessage(db.sql, acme, i, DAY + 1000, env)).toEqual(sent);
    expect(answerOf(sent)).toEqual({ status: 200, text: `{"ok":true,"message_id":${sent.message_id}}` });
    const queued = await sendMessage(db.sql, acme, input(id), NIGHT, env);
    expect(answerOf(queued).text).toBe(`{"ok":true,"message_id":${queued.message_id},"defer_until":${MORNING_TX / 1000}}`);
    await db.sql`update org_billing set credits = 0 where org_id = 1`;
    const poor = await sendMessage(db.sql, acme, input(id), DAY, env);
    expect(poor).toEqual({ ok: false, message_id: null, reason: "insufficient_credits" });
    expect(answerOf(poor)).toEqual({ status: 402, text: '{"ok":false,"message_id":null,"reason":"insufficient_credits"}' });
  });

  test("every stored result (written by resultText or by SQL in its form) reads back to the same bytes", async () => {
    const id = await lead();
    await sendMessage(db.sql, acme, input(id, { channel: "note", body: "n" }), DAY, env);
    await sendMessage(db.sql, acme, input(id), DAY, env);
    await sendMessage(db.sql, acme, input(id), NIGHT, env);
    twilio.failNumber(`+1${(await db.sql`select phone from leads where id = ${id}`)[0].phone}`, 21211, "bad number");
    await sendMessage(db.sql, acme, input(id), DAY, env);
    await db.sql`
      insert into messages (lead_id, org_id, channel, direction, body, status, cost, sending_until)
      values (${id}, 1, 'sms', 'out', 'x', 'sending', 0, ${new Date(DAY)})`;
    await recoverInterrupted(db.sql, new Date(DAY + 1000));
    const stored = (await db.sql<{ result: string }[]>`select result from messages where lead_id = ${id} and result is not null order by id`).map((r) => r.result);
    expect(stored.map((t) => Object.keys(JSON.parse(t)).join(","))).toEqual([
      "ok,message_id",
      "ok,message_id",
      "ok,message_id,defer_until",
      "ok,message_id,reason",
      "ok,message_id,reason",
    ]);
    for (const text of stored) expect(resultText(parseResult(text))).toBe(text);
  });

  test("an automation reads the value: sent, deferred, blocked, failed, or tried again", async () => {
    const id = await lead();
    const actor = systemActor("automation", "7", 1);
    // Three automations' runs for one lead, each under its own operation_id.
    const send = (now: number, automation: number) =>
      sendMessage(db.sql, actor, { leadId: id, channel: "sms", body: "Hi", subject: null, operationId: automationOperationId(automation, id) }, now, env);
    const sent = await send(DAY, 7);
    expect(runOutcome(sent)).toEqual({ status: "sent", reason: null, messageId: sent.message_id, deferUntil: null, result: { ok: true, message_id: sent.message_id } });
    const queued = await send(NIGHT, 8);
    expect(runOutcome(queued)).toMatchObject({ status: "deferred", messageId: queued.message_id, deferUntil: new Date(MORNING_TX) });
    await db.sql`insert into lead_channels (lead_id, channel, address, consent) select ${id}, 'sms', phone, 'out' from leads where id = ${id}`;
    const blocked = await send(DAY, 9);
    expect(runOutcome(blocked)).toMatchObject({ status: "blocked", reason: "opted_out", messageId: null });
    const values: [MessageResult, RunOutcome["status"] | null][] = [
      [{ ok: false, message_id: 5, reason: "provider_timeout" }, "failed"],
      [{ ok: false, message_id: 5, reason: "outcome_unknown" }, "failed"],
      [{ ok: false, message_id: 5, reason: "in_progress" }, null],
      [{ ok: false, message_id: null, reason: "billing_unavailable" }, null],
      [{ ok: false, message_id: null, reason: "billing_frozen" }, "blocked"],
    ];
    for (const [r, status] of values) expect(runOutcome(r)?.status ?? null).toBe(status);
  });
});

describe("the database away when the provider answers", () => {
  test("the outcome is written once it is back, not left `sending` (and then `unknown`)", async () => {
    const proxy = await startProxy(db.url);
    const sql = connect(proxy.url, { max: 2, statementTimeoutMs: 0 });
    twilio.setMode({ kind: "hang" });
    try {
      const sending = sendMessage(sql, acme, input(await lead()), DAY, { ...env, providerTimeoutMs: 500 });
      await twilio.waitFor(1);
      // The provider's wait ends (provider_timeout) while the database is away.
      proxy.cut();
      await Bun.sleep(1500);
      proxy.restore();
      const r = await sending;
      expect(r).toEqual({ ok: false, message_id: expect.any(Number), reason: "provider_timeout" });
      expect(await message(r.message_id!)).toMatchObject({ status: "failed" });
      expect(await credits()).toBe(10);
    } finally {
      twilio.setMode({ kind: "ok" });
      await sql.end({ timeout: 1 });
      await proxy.close();
    }
  }, 20_000);
});
