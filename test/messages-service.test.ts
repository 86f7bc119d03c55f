// The send path (src/messages/service.ts) straight against PostgreSQL, with the providers as real
// servers on 127.0.0.1. Through HTTP it is tested in messages.test.ts.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { connect, type Sql } from "../src/db/client";
import { answerOf, parseSendInput, type Actor } from "../src/messages/model";
import { recoverInterrupted } from "../src/messages/queries";
import * as service from "../src/messages/service";
import { sendDeferred, type SendEnv } from "../src/messages/service";
import { testDatabase, type TestDatabase } from "./harness/db";
import { TEST_DEADLINE_MS } from "./harness/deadline";
import { DEADLINE_MS } from "../src/db/deadline";
import { seedWorld } from "./harness/factory";
import { startFakeSmtp, type FakeSmtp } from "./harness/fake-smtp";
import { startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";
import { startProxy } from "./harness/proxy";

/** A send as the API answers it: the status and the exact JSON text (routes.ts renders with answerOf). */
const sendMessage = async (...a: Parameters<typeof service.sendMessage>) => answerOf(await service.sendMessage(...a));

let db: TestDatabase;
let other: Sql; // a second "instance": its own pool on the same database
let twilio: FakeTwilio;
let smtp: FakeSmtp;
// Each database step bounded as the tests' instances bound their requests (harness/deadline.ts):
// fifty racing sends on a busy machine took longer than the contract's second, threw, and left
// sends running into the next test. The outage test keeps the contract's.
const env: SendEnv = { baseUrl: "https://leadline.example", deadlineMs: TEST_DEADLINE_MS };

const acme: Actor = { orgId: 1, type: "api_key", id: "11", agent: null, keyId: 11 };
const bolt: Actor = { orgId: 2, type: "api_key", id: "12", agent: null, keyId: 12 };
const platform: Actor = { orgId: null, type: "api_key", id: "13", agent: null, keyId: 13 };
const platform2: Actor = { orgId: null, type: "api_key", id: "14", agent: null, keyId: 14 };

// 2026-01-15 12:00 EST / 11:00 CST; and 23:00 EST / 22:00 CST (inside 21:00–08:00).
const DAY = Date.UTC(2026, 0, 15, 17);
const NIGHT = Date.UTC(2026, 0, 16, 4);
const MORNING_TX = Date.UTC(2026, 0, 16, 14); // 08:00 CST

beforeAll(async () => {
  db = await testDatabase();
  other = connect(db.url, { max: 4, statementTimeoutMs: 5000, applicationName: "leadline-test-other" });
  await seedWorld(db.sql);
  twilio = await startFakeTwilio();
  smtp = await startFakeSmtp();
});
afterAll(async () => {
  await other?.end({ timeout: 5 });
  await db?.drop();
  await twilio?.stop();
  await smtp?.stop();
});

/** Org 1 fully configured; each test resets what it changes. */
async function configureAcme(over: { credits?: number; consent?: string; quiet?: [string, string] | null } = {}) {
  const quiet = over.quiet === undefined ? ["21:00", "08:00"] : over.quiet;
  await db.sql`
    update orgs set timezone = 'America/New_York', quiet_start = ${quiet?.[0] ?? null}, quiet_end = ${quiet?.[1] ?? null},
      consent = ${over.consent ?? "implied"},
      sms = ${db.sql.json({ base_url: twilio.url, account_sid: "ACacme", auth_token: "acme-token", from: "5125550100" })},
      email = ${db.sql.json({ smtp_url: smtp.url(), from: "Acme <hello@acme.example>" })}
    where id = 1`;
  await db.sql`
    insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost)
    values (1, 'active', 'active', ${over.credits ?? 10}, 0.01, 0.001)
    on conflict (org_id) do update set status = 'active', subscription = 'active', credits = excluded.credits,
      sms_cost = excluded.sms_cost, email_cost = excluded.email_cost`;
}

let phoneSeq = 0;
async function lead(o: { list?: number; phone?: string; email?: string; state?: string; first?: string; last?: string } = {}) {
  const phone = o.phone ?? `51255${String(10000 + ++phoneSeq).slice(-5)}`;
  const [row] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, last_name, email, state)
    values (${o.list ?? 101}, ${phone}, ${o.first ?? "Dana"}, ${o.last ?? "Diaz"}, ${o.email ?? "dana@example.com"}, ${o.state ?? "TX"})
    returning id`;
  return row.id;
}

let opSeq = 0;
const op = () => `op-${Date.now()}-${++opSeq}`;
const input = (f: Record<string, unknown>) => parseSendInput({ operation_id: op(), channel: "sms", body: "Hi {first_name}", ...f });
const send = (actor: Actor, f: Record<string, unknown>, now = DAY, e: SendEnv = env, sql: Sql = db.sql) =>
  sendMessage(sql, actor, parseSendInput({ operation_id: op(), channel: "sms", body: "Hi {first_name}", ...f }), now, e);
const parsed = (a: { text: string }) => JSON.parse(a.text);
const credits = async () => Number((await db.sql`select credits from org_billing where org_id = 1`)[0].credits);
const message = async (id: number) => (await db.sql`select * from messages where id = ${id}`)[0];

beforeEach(async () => {
  twilio.reset();
  smtp.reset();
  await configureAcme();
});

describe("the caller's row beside the message (the console's audit)", () => {
  const recorded: [number, number | null][] = [];
  const hook: service.Recorded = async (tx, id, until) => {
    await tx`select 1`; // in the recording transaction
    recorded.push([id, until]);
  };
  const failing: service.Recorded = async (tx) => {
    await tx`select 1 / 0`;
  };

  test("written once for a note, a charged send and a queued one; never for a replay or a refusal", async () => {
    recorded.length = 0;
    const id = await lead();
    const note = input({ lead_id: id, channel: "note", body: "n" });
    const sms = input({ lead_id: id });
    const late = input({ lead_id: id });
    const a = parsed(await sendMessage(db.sql, acme, note, DAY, env, undefined, hook));
    const b = parsed(await sendMessage(db.sql, acme, sms, DAY, env, undefined, hook));
    const c = parsed(await sendMessage(db.sql, acme, late, NIGHT, env, undefined, hook));
    await sendMessage(db.sql, acme, sms, DAY, env, undefined, hook); // a replay
    await db.sql`update org_billing set credits = 0 where org_id = 1`;
    expect(parsed(await sendMessage(db.sql, acme, input({ lead_id: id }), DAY, env, undefined, hook)).reason).toBe("insufficient_credits");
    expect(recorded).toEqual([[a.message_id, null], [b.message_id, null], [c.message_id, c.defer_until * 1000]]);
  });

  test("a row that cannot be written takes the message with it: nothing recorded, charged, queued or sent", async () => {
    const id = await lead();
    const before = await credits();
    for (const i of [input({ lead_id: id, channel: "note", body: "n" }), input({ lead_id: id }), input({ lead_id: id, channel: "email", subject: "s" })]) {
      await expect(service.sendMessage(db.sql, acme, i, DAY, env, undefined, failing)).rejects.toMatchObject({ code: "22012" });
      expect(await db.sql`select 1 from messages where operation_id = ${i.operationId}`).toHaveLength(0);
    }
    const queued = input({ lead_id: id });
    await expect(service.sendMessage(db.sql, acme, queued, NIGHT, env, undefined, failing)).rejects.toMatchObject({ code: "22012" });
    expect(await db.sql`select 1 from messages where operation_id = ${queued.operationId}`).toHaveLength(0);
    expect(await db.sql`select 1 from jobs where kind = ${service.DEFERRED_SEND} and ref not in (select id from messages)`).toHaveLength(0);
    expect(await credits()).toBe(before);
    expect(twilio.requests).toHaveLength(0);
    expect(smtp.mails).toHaveLength(0);
  });
});

describe("notes", () => {
  test("stored, no provider, never billed, never deferred, never gated by consent", async () => {
    await db.sql`delete from org_billing where org_id = 1`;
    const id = await lead();
    await db.sql`insert into lead_channels (lead_id, channel, address, consent) values (${id}, 'sms', '5125550000', 'out')`;
    const a = await send(acme, { lead_id: id, channel: "note", body: "  called, <b>no answer</b>  ", subject: "s" }, NIGHT);
    expect(a.status).toBe(200);
    const r = parsed(a);
    expect(a.text).toBe(`{"ok":true,"message_id":${r.message_id}}`);
    const m = await message(r.message_id);
    expect(m).toMatchObject({ channel: "note", direction: "out", status: "stored", body: "  called, <b>no answer</b>  ", subject: "s", actor_type: "api_key", actor_id: "11", org_id: 1, op_scope: 1 });
    expect(Number(m.cost)).toBe(0);
    expect(m.defer_until).toBeNull();
    expect(twilio.requests.length + smtp.mails.length).toBe(0);
  });

  test("a retry returns the first answer; another send under the operation_id is a conflict", async () => {
    const id = await lead();
    const i = input({ lead_id: id, channel: "note", body: "one" });
    const first = await sendMessage(db.sql, acme, i, DAY, env);
    const again = await sendMessage(other, acme, i, DAY + 5000, env);
    expect(again).toEqual(first);
    expect((await db.sql`select count(*)::int as n from messages where operation_id = ${i.operationId}`)[0].n).toBe(1);
    for (const change of [{ body: "two" }, { subject: "x" }, { channel: "sms" as const }, { leadId: await lead() }]) {
      await expect(sendMessage(db.sql, acme, { ...i, ...change }, DAY, env)).rejects.toMatchObject({ code: "operation_id_conflict" });
    }
  });

  test("ten identical notes racing on two instances make one row and one answer", async () => {
    const id = await lead();
    const i = input({ lead_id: id, channel: "note", body: "race" });
    const answers = await Promise.all(Array.from({ length: 10 }, (_, k) => sendMessage(k % 2 ? other : db.sql, acme, i, DAY, env)));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect((await db.sql`select count(*)::int as n from messages where operation_id = ${i.operationId}`)[0].n).toBe(1);
  });
});

describe("input and scope", () => {
  test("a missing, malformed or out-of-org lead is not_found, for every channel", async () => {
    const boltLead = await lead({ list: 201 });
    for (const channel of ["sms", "email", "note"]) {
      for (const lead_id of [boltLead, 99_999_999, undefined, "abc", -1, 1.5, {}]) {
        await expect(send(acme, { lead_id, channel })).rejects.toMatchObject({ code: "not_found" });
      }
      await expect(send(acme, { lead_id: boltLead, channel, body: "" })).rejects.toMatchObject({ code: "not_found" });
    }
    // A platform actor reaches every org's leads.
    expect(parsed(await send(platform, { lead_id: boltLead, channel: "note" })).ok).toBe(true);
  });

  test("an empty body is a 200 empty_body with nothing recorded", async () => {
    const id = await lead();
    for (const body of ["", "   \n\t ", undefined, null]) {
      for (const channel of ["sms", "email", "note"]) {
        const a = await send(acme, { lead_id: id, channel, body });
        expect(a).toEqual({ status: 200, text: '{"ok":false,"message_id":null,"reason":"empty_body"}' });
      }
    }
    expect((await db.sql`select count(*)::int as n from messages where lead_id = ${id}`)[0].n).toBe(0);
  });

  test("operation_ids are scoped to the sender's org; platform senders share the house scope", async () => {
    const id = await lead();
    const boltLead = await lead({ list: 201 });
    const shared = op();
    const a = await sendMessage(db.sql, acme, parseSendInput({ operation_id: shared, channel: "note", body: "x", lead_id: id }), DAY, env);
    const b = await sendMessage(db.sql, bolt, parseSendInput({ operation_id: shared, channel: "note", body: "x", lead_id: boltLead }), DAY, env);
    expect(parsed(a).message_id).not.toBe(parsed(b).message_id);
    const p1 = await sendMessage(db.sql, platform, parseSendInput({ operation_id: shared, channel: "note", body: "x", lead_id: id }), DAY, env);
    expect(parsed(p1).message_id).not.toBe(parsed(a).message_id);
    const p2 = await sendMessage(db.sql, platform2, parseSendInput({ operation_id: shared, channel: "note", body: "x", lead_id: id }), DAY, env);
    expect(p2.text).toBe(p1.text);
    const m = await message(parsed(p1).message_id);
    expect([m.op_scope, m.org_id]).toEqual([null, 1]);
  });
});

describe("SMS", () => {
  test("sent through Twilio with the form operations.md names; charged once with a ledger entry", async () => {
    const id = await lead({ phone: "5125550123", first: "Ann <3" });
    const a = await send(acme, { lead_id: id, body: "Hi {first_name} from {company}" });
    expect(a.status).toBe(200);
    const r = parsed(a);
    expect(a.text).toBe(`{"ok":true,"message_id":${r.message_id}}`);
    expect(twilio.requests.length).toBe(1);
    const req = twilio.requests[0];
    expect(req.auth).toEqual({ user: "ACacme", pass: "acme-token" });
    expect(req.path).toBe("/2010-04-01/Accounts/ACacme/Messages.json");
    expect(req.form).toEqual({
      To: "+15125550123",
      From: "+15125550100",
      Body: "Hi Ann <3 from Acme Roofing LLC",
      StatusCallback: "https://leadline.example/hooks/sms_status.php",
    });
    const m = await message(r.message_id);
    // The row holds the text as sent (what the conversation shows), not the template.
    expect(m).toMatchObject({ status: "sent", provider_id: req.sid, body: req.form.Body, error: "", meta: { to: "5125550123" } });
    expect(Number(m.cost)).toBe(0.01);
    expect(await credits()).toBe(9.99);
    const ledger = await db.sql`select kind, amount::float8 as amount, balance::float8 as balance from credit_ledger where message_id = ${r.message_id}`;
    expect([...ledger]).toEqual([{ kind: "charge", amount: -0.01, balance: 9.99 }]);
  });

  test("a Twilio error answer: ok false with the reason, recorded failed with the provider's error, refunded", async () => {
    const id = await lead({ phone: "5125550124" });
    twilio.failNumber("+15125550124", 21211, "The 'To' number +15125550124 is not a valid phone number.");
    const i = input({ lead_id: id });
    const a = await sendMessage(db.sql, acme, i, DAY, env);
    const r = parsed(a);
    expect(a.text).toBe(`{"ok":false,"message_id":${r.message_id},"reason":"provider_error"}`);
    const m = await message(r.message_id);
    expect(m).toMatchObject({ status: "failed", error: "21211: The 'To' number +15125550124 is not a valid phone number." });
    expect(await credits()).toBe(10);
    const ledger = await db.sql`select kind, amount::float8 as amount from credit_ledger where message_id = ${r.message_id} order by id`;
    expect([...ledger]).toEqual([{ kind: "charge", amount: -0.01 }, { kind: "refund", amount: 0.01 }]);
    // A retry replays the failure: nothing is sent or charged again.
    expect((await sendMessage(db.sql, acme, i, DAY + 1000, env)).text).toBe(a.text);
    expect(twilio.requests.length).toBe(1);
  });

  test("Twilio 21610 (replied STOP to this sender) opts the phone out", async () => {
    const id = await lead({ phone: "5125550125" });
    twilio.failNumber("+15125550125", 21610, "Attempt to send to unsubscribed recipient");
    expect(parsed(await send(acme, { lead_id: id })).reason).toBe("provider_error");
    expect(parsed(await send(acme, { lead_id: id }))).toEqual({ ok: false, message_id: null, reason: "opted_out" });
    expect(twilio.requests.length).toBe(1);
  });

  test("a provider that never answers holds no connection meanwhile: on a pool of one, a note goes while three sends wait", async () => {
    const small = connect(db.url, { max: 1, statementTimeoutMs: 5000, applicationName: "leadline-test-small" });
    try {
      twilio.setMode({ kind: "hang" });
      const ids = await Promise.all([lead(), lead(), lead()]);
      // A wait far beyond the test: the sends end only when the fake lets them go.
      const patient = { ...env, providerTimeoutMs: 120_000 };
      let answered = 0;
      const hanging = ids.map((id) => sendMessage(small, acme, input({ lead_id: id }), DAY, patient).finally(() => answered++));
      await twilio.waitFor(3);
      expect(parsed(await sendMessage(small, acme, input({ lead_id: ids[0], channel: "note" }), DAY, env)).ok).toBe(true);
      expect(answered).toBe(0);
      twilio.reset(); // each held request gets a 503
      for (const r of (await Promise.all(hanging)).map(parsed)) expect(r).toEqual({ ok: false, message_id: expect.any(Number), reason: "provider_unavailable" });
      expect(await credits()).toBe(10);
    } finally {
      await small.end({ timeout: 5 });
    }
  });

  test("a provider that never answers: provider_timeout after the bounded wait, failed, refunded", async () => {
    twilio.setMode({ kind: "hang" });
    const id = await lead();
    const answer = parsed(await sendMessage(db.sql, acme, input({ lead_id: id }), DAY, { ...env, providerTimeoutMs: 300 }));
    expect(answer).toEqual({ ok: false, message_id: expect.any(Number), reason: "provider_timeout" });
    const m = await message(answer.message_id);
    expect([m.status, m.error]).toEqual(["failed", "no answer from the SMS provider within 0.3 s"]);
    expect(await credits()).toBe(10);
    twilio.reset();
  });

  test("gates, each with its reason, recording nothing", async () => {
    const cases: [string, () => Promise<number>, () => Promise<unknown>, number][] = [
      ["no_phone", () => lead({ phone: "" }), async () => {}, 200],
      ["opted_out", async () => {
        const id = await lead();
        await db.sql`insert into lead_channels (lead_id, channel, address, consent) select ${id}, 'sms', phone, 'out' from leads where id = ${id}`;
        return id;
      }, async () => {}, 200],
      ["no_consent", () => lead(), () => configureAcme({ consent: "explicit" }), 200],
      ["provider_not_configured", () => lead(), () => db.sql`update orgs set sms = null where id = 1`, 200],
      ["provider_not_configured", () => lead({ list: 900 }), async () => {}, 200], // house campaign: no org
      ["billing_not_configured", () => lead(), () => db.sql`delete from org_billing where org_id = 1`, 402],
      ["billing_frozen", () => lead(), () => db.sql`update org_billing set status = 'frozen' where org_id = 1`, 402],
      ["subscription_required", () => lead(), () => db.sql`update org_billing set subscription = 'none' where org_id = 1`, 402],
      ["insufficient_credits", () => lead(), () => db.sql`update org_billing set credits = 0.005 where org_id = 1`, 402],
    ];
    for (const [reason, make, setup, status] of cases) {
      await configureAcme();
      const id = await make();
      await setup();
      const actor = reason === "provider_not_configured" ? platform : acme;
      const a = await send(actor, { lead_id: id }, NIGHT);
      expect<unknown[]>([reason, a.status, a.text]).toEqual([reason, status, `{"ok":false,"message_id":null,"reason":"${reason}"}`]);
      expect((await db.sql`select count(*)::int as n from messages where lead_id = ${id}`)[0].n).toBe(0);
    }
    expect(twilio.requests.length).toBe(0);
  });

  test("an opt-out on another of the org's leads with the same phone wins; another org's does not count", async () => {
    const old = await lead({ phone: "5125550126" });
    await db.sql`insert into lead_channels (lead_id, channel, address, consent) values (${old}, 'sms', '5125550126', 'out')`;
    const fresh = await lead({ phone: "5125550126" });
    await db.sql`insert into lead_channels (lead_id, channel, address, consent) values (${fresh}, 'sms', '5125550126', 'in')`;
    expect(parsed(await send(acme, { lead_id: fresh }))).toMatchObject({ reason: "opted_out" });
    const elsewhere = await lead({ phone: "5125550127", list: 201 });
    await db.sql`insert into lead_channels (lead_id, channel, address, consent) values (${elsewhere}, 'sms', '5125550127', 'out')`;
    const mine = await lead({ phone: "5125550127" });
    expect(parsed(await send(acme, { lead_id: mine })).ok).toBe(true);
  });

  test("explicit consent: an opt-in lets it through", async () => {
    await configureAcme({ consent: "explicit" });
    const id = await lead();
    await db.sql`insert into lead_channels (lead_id, channel, address, consent) select ${id}, 'sms', phone, 'in' from leads where id = ${id}`;
    expect(parsed(await send(acme, { lead_id: id })).ok).toBe(true);
  });

  test("the org's billing row held past the wait: 402 billing_unavailable, nothing recorded", async () => {
    const id = await lead();
    // Locked by another connection before the send, and held until the send has met the lock.
    const locker = await other.reserve();
    try {
      await locker`begin`;
      await locker`select 1 from org_billing where org_id = 1 for update`;
      const a = await send(acme, { lead_id: id }, DAY, { ...env, billingLockMs: 150 });
      expect(a).toEqual({ status: 402, text: '{"ok":false,"message_id":null,"reason":"billing_unavailable"}' });
    } finally {
      await locker`rollback`;
      locker.release();
    }
    expect((await db.sql`select count(*)::int as n from messages where lead_id = ${id}`)[0].n).toBe(0);
  });
});

describe("outages", () => {
  test("the database away when the provider answers: the outcome is recorded once it is back, not left sending until the lease", async () => {
    const proxy = await startProxy(db.url);
    const via = connect(proxy.url, { max: 2, statementTimeoutMs: 5000, applicationName: "leadline-test-proxied" });
    try {
      twilio.setMode({ kind: "hang" });
      const id = await lead();
      const sending = sendMessage(via, acme, input({ lead_id: id }), DAY, { ...env, providerTimeoutMs: 800, deadlineMs: DEADLINE_MS }).then(
        () => null,
        (err: unknown) => err,
      );
      await twilio.waitFor(1);
      // The outcome's write is sent into a database that no longer answers, and its connection
      // then dropped: that statement is lost with it.
      proxy.hang();
      expect(await sending).not.toBeNull();
      expect((await db.sql`select status from messages where lead_id = ${id}`)[0].status).toBe("sending");
      proxy.cut();
      proxy.restore();
      const end = Date.now() + 15_000;
      while ((await db.sql`select status from messages where lead_id = ${id}`)[0].status === "sending" && Date.now() < end) await Bun.sleep(50);
      const [m] = await db.sql`select status, error from messages where lead_id = ${id}`;
      expect(m.status).toBe("failed");
      // The failed call's charge came back with it.
      expect(await credits()).toBe(10);
    } finally {
      await via.end({ timeout: 1 });
      await proxy.close();
    }
  }, 20_000);
});

describe("billing under races", () => {
  test("50 sends racing for credits that cover 10: exactly 10 go, 40 get insufficient_credits, the balance ends at 0", async () => {
    await configureAcme({ credits: 0.1 });
    const id = await lead();
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, k) => sendMessage(k % 2 ? other : db.sql, acme, input({ lead_id: id }), DAY, env)),
    );
    const ok = answers.filter((a) => parsed(a).ok);
    const refused = answers.filter((a) => !parsed(a).ok);
    expect(ok.length).toBe(10);
    expect(refused.every((a) => a.status === 402 && a.text === '{"ok":false,"message_id":null,"reason":"insufficient_credits"}')).toBe(true);
    expect(refused.length).toBe(40);
    expect(await credits()).toBe(0);
    expect(twilio.requests.length).toBe(10);
    const [l] = await db.sql`select count(*)::int as n, sum(amount)::float8 as total from credit_ledger l join messages m on m.id = l.message_id where m.lead_id = ${id}`;
    expect(l).toEqual({ n: 10, total: -0.1 });
  });

  test("ten identical sends racing on two instances: one provider call, one row, one charge, one answer", async () => {
    const id = await lead();
    const i = input({ lead_id: id, body: "once" });
    const answers = await Promise.all(Array.from({ length: 10 }, (_, k) => sendMessage(k % 2 ? other : db.sql, acme, i, DAY, env)));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(parsed(answers[0]).ok).toBe(true);
    expect(twilio.requests.length).toBe(1);
    expect((await db.sql`select count(*)::int as n from messages where operation_id = ${i.operationId}`)[0].n).toBe(1);
    expect(await credits()).toBe(9.99);
  });

  test("identical sends racing for the last credit: every one answers the send that took it, none insufficient_credits", async () => {
    // The duplicates wait for the billing row while the first holds it; then the balance is 0,
    // but the operation_id is taken: a retry answers the first send, never a refusal of its own.
    await configureAcme({ credits: 0.01 });
    const id = await lead();
    const i = input({ lead_id: id, body: "the last one" });
    const answers = await Promise.all(Array.from({ length: 6 }, (_, k) => sendMessage(k % 2 ? other : db.sql, acme, i, DAY, env)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(parsed(answers[0]).ok).toBe(true);
    expect(twilio.requests.length).toBe(1);
    expect(await credits()).toBe(0);
  });

  test("duplicates of a send still with its provider wait for its answer", async () => {
    twilio.setMode({ kind: "hang" });
    const id = await lead();
    const i = input({ lead_id: id });
    const slow = { ...env, providerTimeoutMs: 800 };
    const answers = await Promise.all(Array.from({ length: 4 }, () => sendMessage(db.sql, acme, i, DAY, slow)));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(parsed(answers[0]).reason).toBe("provider_timeout");
    expect(twilio.requests.length).toBe(1);
  });
});

describe("email", () => {
  test("HTML with escaped merge values, a text alternative, the default subject, the org's From", async () => {
    const id = await lead({ first: "<script>x</script>", email: "dana@example.com" });
    const a = await send(acme, { lead_id: id, channel: "email", body: "<p>Hello {first_name} &amp; welcome</p>" });
    const r = parsed(a);
    expect(a.text).toBe(`{"ok":true,"message_id":${r.message_id}}`);
    expect(smtp.mails.length).toBe(1);
    const mail = smtp.mails[0];
    expect(mail.envelope.to).toEqual(["dana@example.com"]);
    expect(mail.parsed.from?.text).toBe('"Acme" <hello@acme.example>');
    expect(mail.parsed.subject).toBe("Message from Acme Roofing LLC");
    expect(mail.parsed.html).toBe("<p>Hello &lt;script&gt;x&lt;/script&gt; &amp; welcome</p>");
    expect(mail.parsed.text?.trim()).toBe("Hello <script>x</script> & welcome");
    const m = await message(r.message_id);
    expect(m).toMatchObject({ status: "sent", subject: mail.parsed.subject, body: mail.parsed.html });
    expect(Number(m.cost)).toBe(0.001);
  });

  test("a given subject is merged as plain text; no email address is no_email", async () => {
    const id = await lead({ first: "Ann & Bo" });
    await send(acme, { lead_id: id, channel: "email", body: "x", subject: "For {first_name}" });
    expect(smtp.mails[0].parsed.subject).toBe("For Ann & Bo");
    const none = await lead({ email: "" });
    expect(parsed(await send(acme, { lead_id: none, channel: "email" }))).toEqual({ ok: false, message_id: null, reason: "no_email" });
  });

  test("a refused recipient: provider_error, failed, refunded", async () => {
    const id = await lead({ email: "gone@example.com" });
    smtp.rejectRecipient("gone@example.com");
    const r = parsed(await send(acme, { lead_id: id, channel: "email" }));
    expect(r).toMatchObject({ ok: false, reason: "provider_error" });
    expect((await message(r.message_id)).error).toMatch(/^SMTP 550/);
    expect(await credits()).toBe(10);
  });
});

describe("quiet hours", () => {
  test("a send in the recipient's quiet hours is queued with defer_until, then sent by the worker through the gates", async () => {
    const id = await lead({ state: "TX" });
    const i = input({ lead_id: id, body: "Morning {first_name}" });
    const a = await sendMessage(db.sql, acme, i, NIGHT, env);
    const r = parsed(a);
    expect(a.text).toBe(`{"ok":true,"message_id":${r.message_id},"defer_until":${MORNING_TX / 1000}}`);
    expect(twilio.requests.length).toBe(0);
    expect(await message(r.message_id)).toMatchObject({ status: "queued" });
    expect(await credits()).toBe(10);
    // Before its time the worker leaves it; at its time it goes, charged then.
    expect(await sendDeferred(db.sql, r.message_id, MORNING_TX - 1000, env)).toEqual({ retryAt: MORNING_TX });
    expect(twilio.requests.length).toBe(0);
    expect(await sendDeferred(db.sql, r.message_id, MORNING_TX, env)).toEqual({ done: true });
    expect(twilio.requests.length).toBe(1);
    expect(twilio.requests[0].form.Body).toBe("Morning Dana");
    expect(await message(r.message_id)).toMatchObject({ status: "sent" });
    expect(await credits()).toBe(9.99);
    // Run again (a worker that died after sending): nothing more. A retry replays the first answer.
    expect(await sendDeferred(db.sql, r.message_id, MORNING_TX + 5000, env)).toEqual({ done: true });
    expect(twilio.requests.length).toBe(1);
    expect((await sendMessage(other, acme, i, MORNING_TX + 9000, env)).text).toBe(a.text);
  });

  test("a lead who opted out while the message waited is not texted", async () => {
    const id = await lead();
    const r = parsed(await send(acme, { lead_id: id }, NIGHT));
    await db.sql`insert into lead_channels (lead_id, channel, address, consent) select ${id}, 'sms', phone, 'out' from leads where id = ${id}`;
    expect(await sendDeferred(db.sql, r.message_id, MORNING_TX, env)).toEqual({ done: true });
    expect(twilio.requests.length).toBe(0);
    expect(await message(r.message_id)).toMatchObject({ status: "failed", error: "opted_out" });
    expect(await credits()).toBe(10);
  });

  test("credits spent while it waited: failed with insufficient_credits; quiet hours moved: deferred again", async () => {
    const id = await lead();
    const r1 = parsed(await send(acme, { lead_id: id }, NIGHT));
    const r2 = parsed(await send(acme, { lead_id: id }, NIGHT));
    await db.sql`update org_billing set credits = 0 where org_id = 1`;
    await sendDeferred(db.sql, r1.message_id, MORNING_TX, env);
    expect(await message(r1.message_id)).toMatchObject({ status: "failed", error: "insufficient_credits" });
    await configureAcme({ quiet: ["21:00", "09:00"] });
    expect(await sendDeferred(db.sql, r2.message_id, MORNING_TX, env)).toEqual({ retryAt: MORNING_TX + 3_600_000 });
    expect(await message(r2.message_id)).toMatchObject({ status: "queued" });
    expect(twilio.requests.length).toBe(0);
  });

  test("the lead's state decides the zone; without one the org's timezone", async () => {
    const hawaii = await lead({ state: "HI" }); // 18:00 in Honolulu
    expect(parsed(await send(acme, { lead_id: hawaii }, NIGHT)).defer_until).toBeUndefined();
    const nowhere = await lead({ state: "" }); // 23:00 in New York → 08:00 EST = 13:00Z
    expect(parsed(await send(acme, { lead_id: nowhere }, NIGHT)).defer_until).toBe(Date.UTC(2026, 0, 16, 13) / 1000);
  });
});

describe("a process killed during the provider call", () => {
  test("never sends that message again; after its lease it is marked unknown", async () => {
    twilio.setMode({ kind: "hang" });
    const id = await lead();
    const operationId = op();
    // A child process sends and is killed (SIGKILL) while Twilio holds the request.
    const script = `
      import { connect } from ${JSON.stringify(new URL("../src/db/client.ts", import.meta.url).pathname)};
      import { sendMessage } from ${JSON.stringify(new URL("../src/messages/service.ts", import.meta.url).pathname)};
      const sql = connect(${JSON.stringify(db.url)}, { max: 1, statementTimeoutMs: 5000 });
      await sendMessage(sql, ${JSON.stringify(acme)}, { leadId: ${id}, channel: "sms", body: "once", subject: null, operationId: ${JSON.stringify(operationId)} }, ${DAY}, { baseUrl: "https://leadline.example" });
    `;
    const child = Bun.spawn([process.execPath, "-e", script], { stdout: "ignore", stderr: "inherit" });
    await twilio.waitFor(1, 10_000);
    child.kill("SIGKILL");
    await child.exited;
    twilio.setMode({ kind: "ok" });
    const [m] = await db.sql`select id, status, result from messages where operation_id = ${operationId}`;
    expect(m).toMatchObject({ status: "sending", result: null });
    // A restarted worker or a sweep finds nothing to send; a retry does not call the provider.
    expect(await sendDeferred(db.sql, m.id, DAY + 60_000, env)).toEqual({ done: true });
    const retry = parseSendInput({ operation_id: operationId, channel: "sms", body: "once", lead_id: id });
    // Before its lease ends a retry waits (here up to 2 × 150 ms) for an answer that never comes.
    const waited = await sendMessage(db.sql, acme, retry, DAY + 20_000, { ...env, providerTimeoutMs: 150 });
    expect(waited.text).toBe(`{"ok":false,"message_id":${m.id},"reason":"in_progress"}`);
    const early = await recoverInterrupted(db.sql, new Date(DAY + 30_000));
    expect(early).not.toContain(m.id);
    // Past the lease a retry settles it at once; the sweep then finds nothing left.
    const a = await sendMessage(db.sql, acme, retry, DAY + 71_000, env);
    expect(a.text).toBe(`{"ok":false,"message_id":${m.id},"reason":"outcome_unknown"}`);
    expect(await recoverInterrupted(db.sql, new Date(DAY + 72_000))).not.toContain(m.id);
    expect(twilio.requests.length).toBe(1);
    expect(await message(m.id)).toMatchObject({ status: "unknown" });
    expect(await credits()).toBe(9.99); // the provider may have it: the charge stands
  });

  test("the sweep settles every send left sending past its lease, and only those", async () => {
    const id = await lead();
    const rows = await db.sql<{ id: number }[]>`
      insert into messages (lead_id, org_id, channel, direction, body, status, cost, sending_until)
      values (${id}, 1, 'sms', 'out', 'a', 'sending', 0.01, ${new Date(DAY)}),
             (${id}, 1, 'sms', 'out', 'b', 'sending', 0.01, ${new Date(DAY + 120_000)})
      returning id`;
    const settled = await recoverInterrupted(db.sql, new Date(DAY + 1000));
    expect(settled).toContain(rows[0].id);
    expect(settled).not.toContain(rows[1].id);
    expect(await message(rows[0].id)).toMatchObject({ status: "unknown", result: `{"ok":false,"message_id":${rows[0].id},"reason":"outcome_unknown"}` });
    expect((await message(rows[1].id)).status).toBe("sending");
  });
});
