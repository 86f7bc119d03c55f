// Twilio callbacks and message events against PostgreSQL, signed by the fake's own signer.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import {
  applyStatusCallback,
  keywordConsent,
  recordInboundSms,
  verifyInbound,
  verifyStatus,
  type CallbackEnv,
  type TwilioCallback,
} from "../src/messages/callbacks";

/** What the route answers: 403 ("forbidden") unless verified, then the callback's work. */
async function statusCallback(sql: Parameters<typeof verifyStatus>[0], env: CallbackEnv, cb: TwilioCallback, now: number): Promise<"ok" | "forbidden"> {
  const verified = await verifyStatus(sql, env, cb);
  if (!verified) return "forbidden";
  await applyStatusCallback(sql, verified, now);
  return "ok";
}
async function inboundSms(sql: Parameters<typeof verifyInbound>[0], env: CallbackEnv, cb: TwilioCallback, now: number): Promise<"ok" | "forbidden"> {
  const verified = await verifyInbound(sql, env, cb);
  if (!verified) return "forbidden";
  await recordInboundSms(sql, verified, now);
  return "ok";
}
import { resultText, parseSendInput, type Actor } from "../src/messages/model";
import { sendDeferred, sendMessage, type SendEnv } from "../src/messages/service";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";
import { signCallback, startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";
import { expectEventsMatchModels } from "./harness/events";

let db: TestDatabase;
let twilio: FakeTwilio;
const BASE = "https://leadline.example";
const env: SendEnv = { baseUrl: BASE };
const acme: Actor = { orgId: 1, type: "api_key", id: "11", agent: null, keyId: 11 };
const DAY = Date.UTC(2026, 0, 15, 17);
const NIGHT = Date.UTC(2026, 0, 16, 4);
const TOKEN = "acme-token";

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  twilio = await startFakeTwilio();
  await db.sql`
    update orgs set quiet_start = '21:00', quiet_end = '08:00',
      sms = ${db.sql.json({ base_url: twilio.url, account_sid: "ACacme", auth_token: TOKEN, from: "+1 (512) 555-0100" })}
    where id = 1`;
  await db.sql`update orgs set sms = ${db.sql.json({ base_url: twilio.url, account_sid: "ACbolt", auth_token: "bolt-token", from: "5125550200" })} where id = 2`;
  await db.sql`insert into org_billing (org_id, status, subscription, credits, sms_cost) values (1, 'active', 'active', 10, 0.01)`;
});
afterAll(async () => {
  await db?.drop();
  await twilio?.stop();
});
beforeEach(() => twilio.reset());

let seq = 0;
async function lead(phone: string, list = 101) {
  const [row] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, state) values (${list}, ${phone}, 'Dana', 'TX') returning id`;
  return row.id;
}
const sendSms = async (leadId: number, now = DAY) =>
  JSON.parse(resultText(await sendMessage(db.sql, acme, parseSendInput({ operation_id: `cb-${++seq}`, channel: "sms", body: "hello", lead_id: leadId }), now, env)));

/** A callback as Twilio would sign it (or with the signature given). */
function signed(path: string, params: Record<string, string>, token = TOKEN, signature?: string): TwilioCallback {
  return { pathAndQuery: path, params: Object.entries(params), signature: signature ?? signCallback(token, BASE + path, params) };
}
const events = async (type: string) =>
  (await db.sql`select org_id, payload from outbox_events where type = ${type} order by id`).map((r) => ({ org_id: r.org_id, ...r.payload }));
const message = async (id: number) => (await db.sql`select * from messages where id = ${id}`)[0];
const credits = async () => Number((await db.sql`select credits from org_billing where org_id = 1`)[0].credits);

describe("events", () => {
  test("message.sent when the provider takes it, with the contract's payload shape", async () => {
    const r = await sendSms(await lead("5125550301"));
    const sid = twilio.requests[0].sid;
    const sent = (await events("message.sent")).find((e) => e.data.message_id === r.message_id);
    expect(sent).toEqual({
      org_id: 1,
      type: "message.sent",
      timestamp: new Date(DAY).toISOString(),
      data: {
        message_id: r.message_id,
        lead_id: expect.any(Number),
        org_id: 1,
        channel: "sms",
        to: "5125550301",
        status: "sent",
        provider_id: sid,
        operation_id: expect.stringMatching(/^cb-/),
        actor_type: "api_key",
        actor_id: "11",
      },
    });
  });

  test("message.failed on a provider error, with reason and error", async () => {
    twilio.setMode({ kind: "error", code: 21211, message: "Invalid 'To' Phone Number" });
    const r = await sendSms(await lead("5125550302"));
    const failed = (await events("message.failed")).find((e) => e.data.message_id === r.message_id);
    expect(failed?.data).toMatchObject({ status: "failed", reason: "provider_error", error: "21211: Invalid 'To' Phone Number", provider_id: null });
  });

  test("message.failed when a deferred send meets a gate at its time; nothing for a deferral itself", async () => {
    const id = await lead("5125550303");
    const r = await sendSms(id, NIGHT);
    expect((await events("message.sent")).some((e) => e.data.message_id === r.message_id)).toBe(false);
    await db.sql`insert into lead_channels (lead_id, channel, address, consent) values (${id}, 'sms', '5125550303', 'out')`;
    await sendDeferred(db.sql, r.message_id, NIGHT + 86_400_000, env);
    const failed = (await events("message.failed")).find((e) => e.data.message_id === r.message_id);
    expect(failed?.data).toMatchObject({ status: "failed", reason: "opted_out", error: "opted_out" });
  });
});

describe("status callbacks", () => {
  test("queued → sent → delivered, never backwards out of a final status", async () => {
    const r = await sendSms(await lead("5125550311"));
    const sid = twilio.requests[0].sid!;
    const status = (s: string, extra: Record<string, string> = {}) =>
      statusCallback(db.sql, { baseUrl: BASE }, signed("/hooks/sms_status.php", { MessageSid: sid, MessageStatus: s, AccountSid: "ACacme", ...extra }), DAY + 1000);
    expect(await status("queued")).toBe("ok");
    expect((await message(r.message_id)).status).toBe("sent"); // queued is behind sent
    expect(await status("sent")).toBe("ok");
    expect(await status("delivered")).toBe("ok");
    expect((await message(r.message_id)).status).toBe("delivered");
    const before = await credits();
    for (const s of ["sent", "queued", "failed", "undelivered"]) await status(s, { ErrorCode: "30003" });
    expect(await message(r.message_id)).toMatchObject({ status: "delivered", error: "" });
    expect(await credits()).toBe(before); // nothing refunded for a delivered message
  });

  test("undelivered with an ErrorCode: recorded, refunded, message.failed; then final", async () => {
    const r = await sendSms(await lead("5125550312"));
    const sid = twilio.requests[0].sid!;
    const before = await credits();
    const cb = signed("/hooks/sms_status.php", { SmsSid: sid, SmsStatus: "undelivered", MessageSid: sid, MessageStatus: "undelivered", ErrorCode: "30003", AccountSid: "ACacme" });
    expect(await statusCallback(db.sql, { baseUrl: BASE }, cb, DAY + 2000)).toBe("ok");
    expect(await message(r.message_id)).toMatchObject({ status: "undelivered", error: "30003" });
    expect(await credits()).toBeCloseTo(before + 0.01, 6);
    expect(await statusCallback(db.sql, { baseUrl: BASE }, cb, DAY + 3000)).toBe("ok"); // Twilio retried it
    expect(await credits()).toBeCloseTo(before + 0.01, 6);
    const failed = (await events("message.failed")).filter((e) => e.data.message_id === r.message_id);
    expect(failed.length).toBe(1);
    expect(failed[0].data).toMatchObject({ status: "undelivered", reason: "delivery_failed", error: "30003" });
    await statusCallback(db.sql, { baseUrl: BASE }, signed("/hooks/sms_status.php", { MessageSid: sid, MessageStatus: "delivered" }), DAY + 4000);
    expect((await message(r.message_id)).status).toBe("undelivered");
  });

  test("forgeries change nothing: wrong token, wrong URL, altered parameter, no signature, another org's token", async () => {
    const r = await sendSms(await lead("5125550313"));
    const sid = twilio.requests[0].sid!;
    const p = { MessageSid: sid, MessageStatus: "failed", ErrorCode: "30008", AccountSid: "ACacme" };
    const forged: TwilioCallback[] = [
      signed("/hooks/sms_status.php", p, "wrong"),
      signed("/hooks/sms_status.php", p, "bolt-token"),
      { ...signed("/hooks/sms_status.php", p), pathAndQuery: "/hooks/sms_status.php?x=1" },
      { ...signed("/hooks/sms_status.php", p), params: Object.entries({ ...p, ErrorCode: "1" }) },
      { ...signed("/hooks/sms_status.php", p), signature: null },
      { ...signed("/hooks/sms_status.php", p), signature: "" },
    ];
    for (const cb of forged) expect(await statusCallback(db.sql, { baseUrl: BASE }, cb, DAY)).toBe("forbidden");
    expect((await message(r.message_id)).status).toBe("sent");
    // The query is part of what is signed.
    expect(await statusCallback(db.sql, { baseUrl: BASE }, signed("/hooks/sms_status.php?org=1", { ...p, MessageStatus: "delivered" }), DAY)).toBe("ok");
    expect((await message(r.message_id)).status).toBe("delivered");
  });

  test("an unknown sid: 200 when its account's org signed it, 403 otherwise", async () => {
    const p = { MessageSid: "SMnope", MessageStatus: "delivered", AccountSid: "ACacme" };
    expect(await statusCallback(db.sql, { baseUrl: BASE }, signed("/hooks/sms_status.php", p), DAY)).toBe("ok");
    expect(await statusCallback(db.sql, { baseUrl: BASE }, signed("/hooks/sms_status.php", p, "x"), DAY)).toBe("forbidden");
    expect(await statusCallback(db.sql, { baseUrl: BASE }, signed("/hooks/sms_status.php", { ...p, AccountSid: "ACzzz" }), DAY)).toBe("forbidden");
    expect(await statusCallback(db.sql, { baseUrl: BASE }, signed("/hooks/sms_status.php", {}), DAY)).toBe("forbidden");
  });
});

describe("inbound SMS", () => {
  const inbound = (from: string, body: string, sid = `SMin${++seq}`, token = TOKEN, to = "+15125550100") =>
    inboundSms(db.sql, { baseUrl: BASE }, signed("/hooks/sms_inbound.php", { From: from, To: to, Body: body, MessageSid: sid, AccountSid: "ACacme" }, token), DAY + seq * 1000);
  const inbox = async (leadId: number) => db.sql`select * from messages where lead_id = ${leadId} and direction = 'in' order by id`;

  test("stored exactly as given on the org's newest lead with that phone, status received, with message.received", async () => {
    const older = await lead("5125550321");
    const newer = await lead("5125550321");
    const elsewhere = await lead("5125550321", 201); // Bolt's lead: another org
    const body = "  Hi <b>there</b> & 'you' \u{1F600}  ";
    expect(await inbound("+15125550321", body, "SMfirst")).toBe("ok");
    expect((await inbox(older)).length + (await inbox(elsewhere)).length).toBe(0);
    const [m] = await inbox(newer);
    expect(m).toMatchObject({ channel: "sms", direction: "in", status: "received", body, provider_id: "SMfirst", org_id: 1, actor_type: "provider", actor_id: "twilio" });
    expect(m.meta).toEqual({ from: "+15125550321", to: "+15125550100", consent: null });
    const evt = (await events("message.received")).find((e) => e.data.message_id === m.id);
    expect(evt).toEqual({
      org_id: 1,
      type: "message.received",
      timestamp: expect.any(String),
      data: { message_id: m.id, lead_id: newer, org_id: 1, channel: "sms", from: "+15125550321", to: "+15125550100", body, provider_id: "SMfirst", consent: null },
    });
    // Twilio retrying the same webhook stores nothing twice.
    expect(await inbound("+15125550321", body, "SMfirst")).toBe("ok");
    expect((await inbox(newer)).length).toBe(1);
  });

  test("STOP opts every org lead on the phone out and sends stop; START opts back in", async () => {
    const a = await lead("5125550322");
    const b = await lead("5125550322");
    const other = await lead("5125550322", 201);
    expect((await sendSms(b)).ok).toBe(true);
    expect(await inbound("5125550322", "  stop \n")).toBe("ok");
    const consent = async (id: number) => (await db.sql`select consent from lead_channels where lead_id = ${id} and channel = 'sms'`)[0]?.consent;
    expect([await consent(a), await consent(b), await consent(other)]).toEqual(["out", "out", undefined]);
    expect(await sendSms(a)).toEqual({ ok: false, message_id: null, reason: "opted_out" });
    expect(await sendSms(b)).toEqual({ ok: false, message_id: null, reason: "opted_out" });
    expect(await inbound("5125550322", "Start")).toBe("ok");
    expect([await consent(a), await consent(b)]).toEqual(["in", "in"]);
    expect((await sendSms(a)).ok).toBe(true);
  });

  test("every STOP and START word, whole body only, any case", () => {
    for (const w of ["STOP", "stopall", "Unsubscribe", "CANCEL", "end", "QUIT", " quit "]) expect(keywordConsent(w)).toBe("out");
    for (const w of ["START", "unstop", "\tStart\n"]) expect(keywordConsent(w)).toBe("in");
    for (const w of ["please stop", "STOP!", "stopp", "", "yes", "START NOW"]) expect(keywordConsent(w)).toBeNull();
  });

  test("a forgery stores nothing and opts nobody out; an unknown number or sender is acknowledged", async () => {
    const id = await lead("5125550323");
    expect(await inbound("5125550323", "STOP", "SMforged", "wrong")).toBe("forbidden");
    expect(await inbound("5125550323", "STOP", "SMforged2", "bolt-token")).toBe("forbidden");
    expect(await inbound("5125550323", "STOP", "SMforged3", TOKEN, "+15125559999")).toBe("forbidden"); // no org has that number
    expect((await inbox(id)).length).toBe(0);
    expect((await db.sql`select count(*)::int as n from lead_channels where lead_id = ${id}`)[0].n).toBe(0);
    expect(await inbound("5125559876", "hello?")).toBe("ok"); // nobody we know
  });
});

test("every event written matches its model (src/events/model.ts)", () => expectEventsMatchModels(db.sql, ["message.received"]));
