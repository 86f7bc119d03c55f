// Messaging through HTTP (issue 7): POST r=messages on two instances of the real service, the
// providers as real servers on 127.0.0.1, Twilio's callbacks signed as Twilio signs them, time set
// on an injected clock.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { TEST_DEADLINE_MS } from "./harness/deadline";
import type { Subprocess } from "bun";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";
import { signCallback, startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";
import { startFakeSmtp, type FakeSmtp } from "./harness/fake-smtp";
import { expectEventsMatchModels } from "./harness/events";

const PUBLIC = "https://leadline.example";
const TOKEN = "acme-token";
// 2026-01-15 12:00 EST; 2026-01-15 23:00 EST (22:00 CST, inside 21:00–08:00); 08:00 CST next day.
const DAY = Date.UTC(2026, 0, 15, 17);
const NIGHT = Date.UTC(2026, 0, 16, 4);
const MORNING_TX = Date.UTC(2026, 0, 16, 14);

let db: TestDatabase;
let app: TestApp;
let app2: TestApp;
let twilio: FakeTwilio;
let smtp: FakeSmtp;
const clock = new ManualClock(DAY);

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  twilio = await startFakeTwilio();
  smtp = await startFakeSmtp();
  app = await startApp(db.url, { BASE_URL: PUBLIC }, { clock });
  app2 = await startApp(db.url, { BASE_URL: PUBLIC }, { clock });
});
afterAll(async () => {
  await app?.stop();
  await app2?.stop();
  await db?.drop();
  await twilio?.stop();
  await smtp?.stop();
});

async function configureAcme(o: { credits?: number; consent?: string; quiet?: boolean } = {}) {
  await db.sql`
    update orgs set timezone = 'America/New_York', consent = ${o.consent ?? "implied"},
      quiet_start = ${o.quiet === false ? null : "21:00"}, quiet_end = ${o.quiet === false ? null : "08:00"},
      sms = ${db.sql.json({ base_url: twilio.url, account_sid: "ACacme", auth_token: TOKEN, from: "5125550100" })},
      email = ${db.sql.json({ smtp_url: smtp.url(), from: "Acme <hello@acme.example>" })}
    where id = 1`;
  await db.sql`
    insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost)
    values (1, 'active', 'active', ${o.credits ?? 10}, 0.01, 0.001)
    on conflict (org_id) do update set status = 'active', subscription = 'active', credits = excluded.credits,
      sms_cost = excluded.sms_cost, email_cost = excluded.email_cost`;
}

beforeEach(async () => {
  twilio.reset();
  smtp.reset();
  clock.set(DAY);
  await configureAcme();
  // Deferred sends left by earlier tests would go out under this test's clock.
  await db.sql`delete from jobs`;
});

/** A fresh key per use keeps every test far below the hourly limit of 300. */
const key = async (org: number | null = 1, scopes = ["messages:write", "conversations:read"]) =>
  (await makeKey(db.sql, { scopes, org })).key;

let phoneSeq = 0;
async function lead(o: { list?: number; phone?: string; email?: string; state?: string; first?: string } = {}) {
  const phone = o.phone ?? `51266${String(10000 + ++phoneSeq).slice(-5)}`;
  const [row] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, last_name, email, state)
    values (${o.list ?? 101}, ${phone}, ${o.first ?? "Dana"}, 'Diaz', ${o.email ?? "dana@example.com"}, ${o.state ?? "TX"})
    returning id`;
  return row.id;
}

let opSeq = 0;
const op = () => `http-${++opSeq}`;

/** POST r=messages; the raw text as well, for byte-for-byte comparisons. */
async function post(k: string | null, body: unknown, via: TestApp = app, init: { contentType?: string; raw?: string } = {}) {
  const headers: Record<string, string> = { "content-type": init.contentType ?? "application/json" };
  if (k !== null) headers["x-api-key"] = k;
  const res = await fetch(`${via.base}/hooks/api_v1.php?r=messages`, {
    method: "POST",
    headers,
    body: init.raw ?? JSON.stringify(body),
  });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, text, body: json, type: res.headers.get("content-type") };
}
const sms = (k: string, leadId: number, extra: Record<string, unknown> = {}, via?: TestApp) =>
  post(k, { lead_id: leadId, channel: "sms", body: "Hi {first_name}", operation_id: op(), ...extra }, via);

const conversation = async (k: string, leadId: number) =>
  (await call(app.base, `/hooks/api_v1.php?r=conversations/${leadId}`, { key: k })).body;
const message = async (id: number) => (await db.sql`select * from messages where id = ${id}`)[0];
const credits = async () => Number((await db.sql`select credits from org_billing where org_id = 1`)[0].credits);

/** Waits for background work (the job runner), checking the database; time rules still move only by the clock. */
async function until(check: () => Promise<boolean>, ms = 5000) {
  const end = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > end) throw new Error("condition not reached in time");
    await Bun.sleep(25);
  }
}

function signedPost(path: string, params: Record<string, string>, token = TOKEN, signature?: string) {
  return fetch(app.base + path, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "x-twilio-signature": signature ?? signCallback(token, PUBLIC + path, params),
    },
    body: new URLSearchParams(params).toString(),
  });
}

describe("input", () => {
  test("a lead outside the key's organization and a missing lead get the same 404", async () => {
    const k = await key();
    const boltLead = await lead({ list: 201 });
    for (const channel of ["sms", "email", "note"]) {
      const out = await post(k, { lead_id: boltLead, channel, body: "x", operation_id: op() });
      const missing = await post(k, { lead_id: 99_999_999, channel, body: "x", operation_id: op() });
      expect([out.status, out.text]).toEqual([404, missing.text]);
      expect(out.body).toEqual({ ok: false, error: "not_found" });
    }
  });

  test("operation_id: 1 to 96 of [A-Za-z0-9_.:-], else 422 {ok: false, error: bad_operation_id}", async () => {
    const k = await key();
    const id = await lead();
    for (const bad of [undefined, null, "", "a".repeat(97), "has space", "slash/no", "é", "tab\t", 7, true, ["a"], { a: 1 }]) {
      const r = await post(k, { lead_id: id, channel: "note", body: "x", operation_id: bad });
      expect([r.status, r.text]).toEqual([422, '{"ok":false,"error":"bad_operation_id"}']);
    }
    for (const good of ["a", "A-Z_0.9:x", "x".repeat(96)]) {
      expect((await post(k, { lead_id: id, channel: "note", body: "x", operation_id: good })).body.ok).toBe(true);
    }
  });

  test("junk of any type in any field gets a 4xx with a contract code", async () => {
    const k = await key();
    const id = await lead();
    const base = { lead_id: id, channel: "note", body: "x" };
    const cases: [Record<string, unknown>, number, string][] = [
      [{ lead_id: "abc" }, 404, "not_found"],
      [{ lead_id: [id] }, 404, "not_found"],
      [{ lead_id: { id } }, 404, "not_found"],
      [{ lead_id: true }, 404, "not_found"],
      [{ lead_id: -1 }, 404, "not_found"],
      [{ lead_id: 1.5 }, 404, "not_found"],
      [{ lead_id: 1e300 }, 404, "not_found"],
      [{ lead_id: null }, 404, "not_found"],
      [{ channel: "SMS" }, 422, "invalid_input"],
      [{ channel: "fax" }, 422, "invalid_input"],
      [{ channel: 1 }, 422, "invalid_input"],
      [{ channel: ["sms"] }, 422, "invalid_input"],
      [{ channel: null }, 422, "invalid_input"],
      [{ body: 42 }, 422, "invalid_input"],
      [{ body: { html: "x" } }, 422, "invalid_input"],
      [{ body: ["x"] }, 422, "invalid_input"],
      [{ body: "nul\u0000byte" }, 422, "invalid_input"],
      [{ subject: 5 }, 422, "invalid_input"],
      [{ subject: {} }, 422, "invalid_input"],
    ];
    for (const [over, status, error] of cases) {
      const r = await post(k, { ...base, operation_id: op(), ...over });
      expect([JSON.stringify(over), r.status, r.body?.error]).toEqual([JSON.stringify(over), status, error]);
    }
    // A string lead_id of digits is an id, as elsewhere in the API.
    expect((await post(k, { ...base, lead_id: String(id), operation_id: op() })).body.ok).toBe(true);
  });

  test("bodies that are not a JSON object, too large, or unauthenticated", async () => {
    const k = await key();
    const bad: [string | null, string, number, string][] = [
      [k, "[1,2]", 422, "malformed_body"],
      [k, '"text"', 422, "malformed_body"],
      [k, "42", 422, "malformed_body"],
      [k, "null", 422, "malformed_body"],
      [k, "{not json", 422, "malformed_json"],
      [k, "", 422, "bad_operation_id"],
      [k, JSON.stringify({ body: "x".repeat(70 * 1024) }), 413, "body_too_large"],
      [null, "{}", 403, "forbidden"],
      ["lk_nonsense_key_value", "{}", 403, "forbidden"],
      [await key(1, ["conversations:read"]), "{}", 403, "wrong_scope"],
    ];
    for (const [kk, raw, status, error] of bad) {
      const r = await post(kk, null, app, { raw });
      expect([raw.slice(0, 20), r.status, r.body?.error]).toEqual([raw.slice(0, 20), status, error]);
    }
    const get = await call(app.base, "/hooks/api_v1.php?r=messages", { key: k });
    expect([get.status, get.body]).toEqual([404, { ok: false, error: "not_found" }]);
  });

  test("every request counts against the key's api_v1 limit (300 an hour), refused ones too", async () => {
    const k = await key();
    const id = await lead();
    const answers = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        post(k, i % 3 === 0 ? { lead_id: id, channel: "note", body: "x", operation_id: "bad op" } : { lead_id: id, channel: "note", body: "x", operation_id: `rl-${i % 2}` }),
      ),
    );
    expect(answers.filter((a) => a.status === 429).length).toBe(0);
    const over = await post(k, { lead_id: id, channel: "note", body: "x", operation_id: "rl-0" });
    expect([over.status, over.body]).toEqual([429, { ok: false, error: "rate_limited" }]);
    clock.advance(3_600_000); // the next hour
    expect((await post(k, { lead_id: id, channel: "note", body: "x", operation_id: "rl-0" })).status).toBe(200);
  });

  test("an empty body is 200 {ok: false, reason: empty_body, message_id: null}", async () => {
    const k = await key();
    const id = await lead();
    for (const channel of ["sms", "email", "note"]) {
      for (const body of ["", "  \n ", undefined]) {
        const r = await post(k, { lead_id: id, channel, body, operation_id: op() });
        expect([r.status, r.body]).toEqual([200, { ok: false, reason: "empty_body", message_id: null }]);
      }
    }
  });

  test("the key may come in the JSON body, and the body may be a form", async () => {
    const k = await key();
    const id = await lead();
    const inBody = await post(null, { api_key: k, lead_id: id, channel: "note", body: "via body key", operation_id: op() });
    expect(inBody.status).toBe(200);
    expect(inBody.body.ok).toBe(true);
    const form = await post(null, null, app, {
      contentType: "application/x-www-form-urlencoded",
      raw: new URLSearchParams({ api_key: k, lead_id: String(id), channel: "note", body: "via form", operation_id: op() }).toString(),
    });
    expect(form.body.ok).toBe(true);
    expect((await message(form.body.message_id)).body).toBe("via form");
  });
});

describe("notes", () => {
  test("stored, no provider, never billed, deferred or gated; in the conversation with every field", async () => {
    await db.sql`delete from org_billing where org_id = 1`;
    clock.set(NIGHT);
    const k = await key();
    const id = await lead();
    await db.sql`insert into lead_channels (lead_id, channel, address, consent) select ${id}, 'sms', phone, 'out' from leads where id = ${id}`;
    const body = "  <img src=x onerror=alert(1)> «ünïcödé» \u{1F600}\n";
    const r = await post(k, { lead_id: id, channel: "note", body, operation_id: op(), extra: "ignored" });
    expect([r.status, r.type]).toEqual([200, "application/json; charset=utf-8"]);
    expect(r.text).toBe(`{"ok":true,"message_id":${r.body.message_id}}`);
    expect(twilio.requests.length + smtp.mails.length).toBe(0);
    const conv = await conversation(k, id);
    const entry = conv.entries.find((e: any) => e.id === r.body.message_id);
    expect(entry).toEqual({
      kind: "msg",
      id: r.body.message_id,
      channel: "note",
      direction: "out",
      actor_type: "api_key",
      actor_id: expect.any(String),
      subject: "",
      body,
      status: "stored",
      error: "",
      meta: null,
      epoch: NIGHT / 1000,
    });
  });
});

describe("conversation", () => {
  test("msg entries carry every contract field for notes, sent, deferred, failed and received messages", async () => {
    clock.set(NIGHT);
    const k = await key();
    const id = await lead({ phone: "5126600060", state: "HI" }); // 18:00 in Honolulu: not quiet
    await post(k, { lead_id: id, channel: "note", body: "note", operation_id: op() });
    await sms(k, id, { body: "sent" });
    twilio.setMode({ kind: "error", code: 21211, message: "invalid" });
    await sms(k, id, { body: "failed" });
    await db.sql`update leads set state = 'TX' where id = ${id}`; // 22:00 in Texas: quiet
    expect((await sms(k, id, { body: "deferred" })).body.defer_until).toBe(MORNING_TX / 1000);
    await signedPost("/hooks/sms_inbound.php", { From: "+15126600060", To: "+15125550100", Body: "received", MessageSid: "SMconv1" });
    const entries = (await conversation(k, id)).entries;
    const fields = ["actor_id", "actor_type", "body", "channel", "direction", "epoch", "error", "id", "kind", "meta", "status", "subject"];
    expect(entries.map((e: any) => [e.body, e.status])).toEqual([
      ["note", "stored"],
      ["sent", "sent"],
      ["failed", "failed"],
      ["deferred", "queued"],
      ["received", "received"],
    ]);
    for (const e of entries) {
      expect(Object.keys(e).sort()).toEqual(fields);
      expect(typeof e.id).toBe("number");
      for (const f of ["channel", "direction", "actor_type", "actor_id", "subject", "body", "status", "error"]) expect(typeof e[f]).toBe("string");
      expect(e.meta === null || typeof e.meta === "object").toBe(true);
      expect(e.epoch).toBe(NIGHT / 1000);
    }
    expect(entries[2].error).toBe("21211: invalid");
  });
});

describe("idempotency", () => {
  test("ten identical SMS sends racing on two instances: one provider call, one row, one charge, the same bytes", async () => {
    const k = await key();
    const id = await lead();
    const payload = { lead_id: id, channel: "sms", body: "Once only", operation_id: op() };
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => post(k, payload, i % 2 ? app2 : app)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(answers[0].body).toEqual({ ok: true, message_id: expect.any(Number) });
    expect(twilio.requests.length).toBe(1);
    expect((await db.sql`select count(*)::int as n from messages where operation_id = ${payload.operation_id}`)[0].n).toBe(1);
    expect((await db.sql`select count(*)::int as n from credit_ledger where message_id = ${answers[0].body.message_id}`)[0].n).toBe(1);
    expect(await credits()).toBe(9.99);
    // Later retries, on either instance, still replay the first answer.
    expect((await post(k, payload, app2)).text).toBe(answers[0].text);
    expect(twilio.requests.length).toBe(1);
  });

  test("the same operation_id with another lead, channel, body or subject is 409 operation_id_conflict", async () => {
    const k = await key();
    const id = await lead();
    const first = { lead_id: id, channel: "email", body: "b", subject: "s", operation_id: op() };
    expect((await post(k, first)).body.ok).toBe(true);
    for (const change of [{ lead_id: await lead() }, { channel: "sms" }, { body: "other" }, { subject: "other" }, { subject: undefined }]) {
      const r = await post(k, { ...first, ...change });
      expect([r.status, r.body.ok, r.body.error]).toEqual([409, false, "operation_id_conflict"]);
    }
    expect(smtp.mails.length).toBe(1);
  });

  test("scoped to the key's organization; platform keys share the house scope", async () => {
    const acmeKey = await key(1);
    const boltKey = await key(2);
    const p1 = await key(null);
    const p2 = await key(null);
    const acmeLead = await lead();
    const boltLead = await lead({ list: 201 });
    const shared = op();
    const a = await post(acmeKey, { lead_id: acmeLead, channel: "note", body: "x", operation_id: shared });
    const b = await post(boltKey, { lead_id: boltLead, channel: "note", body: "x", operation_id: shared });
    expect(a.body.message_id).not.toBe(b.body.message_id);
    const first = await post(p1, { lead_id: acmeLead, channel: "note", body: "x", operation_id: shared });
    expect(first.body.message_id).not.toBe(a.body.message_id);
    expect((await post(p2, { lead_id: acmeLead, channel: "note", body: "x", operation_id: shared })).text).toBe(first.text);
    expect((await post(p2, { lead_id: boltLead, channel: "note", body: "x", operation_id: shared })).status).toBe(409);
  });
});

describe("gates", () => {
  test("each refusal has its reason; billing ones are 402; nothing is recorded or sent", async () => {
    const cases: [string, number, Record<string, unknown>, () => Promise<number>, () => Promise<unknown>][] = [
      ["no_phone", 200, {}, () => lead({ phone: "" }), async () => {}],
      ["no_email", 200, { channel: "email" }, () => lead({ email: "" }), async () => {}],
      ["no_email", 200, { channel: "email" }, () => lead({ email: "not-an-address" }), async () => {}],
      ["opted_out", 200, {}, async () => {
        const id = await lead();
        await db.sql`insert into lead_channels (lead_id, channel, address, consent) select ${id}, 'sms', phone, 'out' from leads where id = ${id}`;
        return id;
      }, async () => {}],
      ["no_consent", 200, {}, () => lead(), () => configureAcme({ consent: "explicit" })],
      ["provider_not_configured", 200, {}, () => lead(), () => db.sql`update orgs set sms = null where id = 1`],
      ["provider_not_configured", 200, { channel: "email" }, () => lead(), () => db.sql`update orgs set email = null where id = 1`],
      ["billing_not_configured", 402, {}, () => lead(), () => db.sql`delete from org_billing where org_id = 1`],
      ["billing_frozen", 402, {}, () => lead(), () => db.sql`update org_billing set status = 'frozen' where org_id = 1`],
      ["subscription_required", 402, {}, () => lead(), () => db.sql`update org_billing set subscription = 'none' where org_id = 1`],
      ["insufficient_credits", 402, {}, () => lead(), () => db.sql`update org_billing set credits = 0 where org_id = 1`],
      ["insufficient_credits", 402, { channel: "email" }, () => lead(), () => db.sql`update org_billing set credits = 0.0009 where org_id = 1`],
    ];
    for (const [reason, status, extra, make, setup] of cases) {
      await configureAcme();
      const k = await key();
      const id = await make();
      await setup();
      const r = await sms(k, id, extra);
      expect([reason, r.status, r.text]).toEqual([reason, status, `{"ok":false,"message_id":null,"reason":"${reason}"}`]);
      expect((await db.sql`select count(*)::int as n from messages where lead_id = ${id}`)[0].n).toBe(0);
    }
    expect(twilio.requests.length + smtp.mails.length).toBe(0);
  });

  test("billing_unavailable: the org's billing row held by someone else past the wait (2 s)", async () => {
    const k = await key();
    const id = await lead();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = db.sql.begin(async (tx) => {
      await tx`select 1 from org_billing where org_id = 1 for update`;
      locked();
      await held;
    });
    await isLocked;
    try {
      const r = await sms(k, id);
      expect([r.status, r.text]).toEqual([402, '{"ok":false,"message_id":null,"reason":"billing_unavailable"}']);
    } finally {
      release();
      await holder;
    }
  });

  test("50 sends racing on two instances for credits that cover 10: exactly 10 go out, 40 get 402", async () => {
    await configureAcme({ credits: 0.1 });
    const keys = await Promise.all([key(), key()]);
    const id = await lead();
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => sms(keys[i % 2], id, {}, i % 2 ? app2 : app)));
    const sent = answers.filter((a) => a.status === 200 && a.body.ok === true);
    const refused = answers.filter((a) => a.status === 402);
    expect(sent.length).toBe(10);
    expect(refused.length).toBe(40);
    for (const r of refused) expect(r.text).toBe('{"ok":false,"message_id":null,"reason":"insufficient_credits"}');
    expect(twilio.requests.length).toBe(10);
    expect(await credits()).toBe(0);
  });
});

describe("SMS and email providers", () => {
  test("SMS: Twilio gets To, From, Body (merged as plain text) and StatusCallback at BASE_URL, with basic auth", async () => {
    const k = await key();
    const id = await lead({ phone: "5126600001", first: "Jo & <Co>" });
    const r = await sms(k, id, { body: "Hi {first_name}, {company} here. Call {phone}." });
    expect(r.body).toEqual({ ok: true, message_id: expect.any(Number) });
    expect(twilio.requests[0].auth).toEqual({ user: "ACacme", pass: TOKEN });
    expect(twilio.requests[0].form).toEqual({
      To: "+15126600001",
      From: "+15125550100",
      Body: "Hi Jo & <Co>, Acme Roofing LLC here. Call 5126600001.",
      StatusCallback: `${PUBLIC}/hooks/sms_status.php`,
    });
    const entry = (await conversation(k, id)).entries.at(-1);
    // The conversation shows the text the lead received (issue 18), not the template.
    expect(entry).toMatchObject({ kind: "msg", channel: "sms", direction: "out", status: "sent", error: "", body: "Hi Jo & <Co>, Acme Roofing LLC here. Call 5126600001." });
  });

  test("a Twilio error answer is ok: false with a reason, recorded failed with the provider's error, charged nothing", async () => {
    const k = await key();
    const id = await lead({ phone: "5126600002" });
    twilio.failNumber("+15126600002", 21211, "The 'To' number +15126600002 is not a valid phone number.");
    const r = await sms(k, id);
    expect([r.status, r.text]).toEqual([200, `{"ok":false,"message_id":${r.body.message_id},"reason":"provider_error"}`]);
    const entry = (await conversation(k, id)).entries.find((e: any) => e.id === r.body.message_id);
    expect(entry).toMatchObject({ status: "failed", error: "21211: The 'To' number +15126600002 is not a valid phone number." });
    expect(await credits()).toBe(10);
  });

  test("email: HTML body with escaped merge values, text alternative, default subject, the org's From", async () => {
    const k = await key();
    const id = await lead({ first: '<b onclick="x">Bo</b>', email: "bo@example.com" });
    const r = await post(k, { lead_id: id, channel: "email", body: "<h1>Hi {first_name}</h1><p>From {company}</p>", operation_id: op() });
    expect(r.body).toEqual({ ok: true, message_id: expect.any(Number) });
    const mail = smtp.mails[0];
    expect(mail.envelope).toEqual({ from: "hello@acme.example", to: ["bo@example.com"] });
    expect(mail.parsed.from?.value).toEqual([{ address: "hello@acme.example", name: "Acme" }]);
    expect(mail.parsed.subject).toBe("Message from Acme Roofing LLC");
    expect(mail.parsed.html).toBe("<h1>Hi &lt;b onclick=&quot;x&quot;&gt;Bo&lt;/b&gt;</h1><p>From Acme Roofing LLC</p>");
    expect(mail.parsed.text?.trim()).toBe('Hi <b onclick="x">Bo</b>\nFrom Acme Roofing LLC');
    expect(mail.secure).toBe(true); // STARTTLS was offered, so it was used
    expect(await credits()).toBe(9.999);
    const entry = (await conversation(k, id)).entries.at(-1);
    expect(entry).toMatchObject({ channel: "email", subject: "Message from Acme Roofing LLC", status: "sent", meta: { to: "bo@example.com" } });
  });

  test("a provider that never answers starves nobody: more hanging sends than connections, and notes and reads still go", async () => {
    // The provider's wait (StartOptions.providerTimeoutMs) far beyond the test: the sends end only when the
    // fake lets them go, so they are surely still waiting while the notes are asked for.
    const patient = await startApp(db.url, { BASE_URL: PUBLIC }, { clock, providerTimeoutMs: 120_000 });
    try {
      const k = await key();
      const ids = await Promise.all(Array.from({ length: 6 }, () => lead()));
      twilio.setMode({ kind: "hang" });
      // More hanging sends than the instance has connections (4).
      let answered = 0;
      const hanging = ids.map((id) => sms(k, id, {}, patient).finally(() => answered++));
      await twilio.waitFor(6);
      const other = await key();
      for (let i = 0; i < 5; i++) expect((await post(other, { lead_id: ids[0], channel: "note", body: "meanwhile", operation_id: op() }, patient)).body.ok).toBe(true);
      expect((await call(patient.base, `/hooks/api_v1.php?r=conversations/${ids[0]}`, { key: other })).status).toBe(200);
      expect([answered, twilio.hanging()]).toEqual([0, 6]);
      twilio.reset(); // each held request gets a 503
      for (const a of await Promise.all(hanging)) expect([a.status, a.body.reason]).toEqual([200, "provider_unavailable"]);
      expect(await credits()).toBe(10);
    } finally {
      await patient.stop();
    }
  }, 30_000);

  test("a provider that never answers costs its request the bounded wait, then provider_timeout, refunded", async () => {
    const WAIT_MS = 1000;
    const brief = await startApp(db.url, { BASE_URL: PUBLIC }, { clock, providerTimeoutMs: WAIT_MS });
    try {
      const k = await key();
      const ids = await Promise.all([lead(), lead()]);
      twilio.setMode({ kind: "hang" });
      const t0 = performance.now();
      const answers = await Promise.all(ids.map((id) => sms(k, id, {}, brief)));
      // Not before the wait was over (a busy machine only makes it later; the end itself is
      // proven by the answer: the fake never answers).
      expect(performance.now() - t0).toBeGreaterThanOrEqual(WAIT_MS);
      for (const a of answers) expect([a.status, a.body.reason]).toEqual([200, "provider_timeout"]);
      expect(twilio.hanging()).toBe(2);
      const [m] = await db.sql`select status, error from messages where id = ${answers[0].body.message_id}`;
      expect(m).toEqual({ status: "failed", error: "no answer from the SMS provider within 1 s" });
      expect(await credits()).toBe(10);
    } finally {
      twilio.reset();
      await brief.stop();
    }
  }, 30_000);
});

describe("quiet hours", () => {
  test("deferred in the recipient's quiet hours; the worker sends it when they end, charged then", async () => {
    clock.set(NIGHT);
    const k = await key();
    const id = await lead({ state: "TX" });
    const r = await sms(k, id, { body: "Good morning {first_name}" });
    expect([r.status, r.text]).toEqual([200, `{"ok":true,"message_id":${r.body.message_id},"defer_until":${MORNING_TX / 1000}}`]);
    expect(await message(r.body.message_id)).toMatchObject({ status: "queued" });
    let entry = (await conversation(k, id)).entries.at(-1);
    // Merged when queued: the conversation shows now what goes out in the morning.
    expect(entry).toMatchObject({ status: "queued", error: "", body: "Good morning Dana" });
    clock.set(MORNING_TX - 1000);
    await Bun.sleep(600); // the runner polls every 250 ms: nothing is due yet
    expect(twilio.requests.length).toBe(0);
    expect(await credits()).toBe(10);
    clock.set(MORNING_TX);
    await twilio.waitFor(1);
    await until(async () => (await message(r.body.message_id)).status === "sent");
    expect(twilio.requests[0].form.Body).toBe("Good morning Dana");
    expect(await credits()).toBe(9.99);
    // A retry still answers as the first time.
    expect((await sms(k, id, { body: "Good morning {first_name}", operation_id: (await message(r.body.message_id)).operation_id })).text).toBe(r.text);
    expect(twilio.requests.length).toBe(1);
  });

  test("a lead who texts STOP while the message waits is not texted", async () => {
    clock.set(NIGHT);
    const k = await key();
    const id = await lead({ phone: "5126600010" });
    const r = await sms(k, id);
    expect(r.body.defer_until).toBe(MORNING_TX / 1000);
    const stop = await signedPost("/hooks/sms_inbound.php", { From: "+15126600010", To: "+15125550100", Body: "STOP", MessageSid: "SMstop1", AccountSid: "ACacme" });
    expect(stop.status).toBe(200);
    clock.set(MORNING_TX + 60_000);
    await until(async () => (await message(r.body.message_id)).status === "failed");
    expect(await message(r.body.message_id)).toMatchObject({ error: "opted_out" });
    expect(twilio.requests.length).toBe(0);
    expect(await credits()).toBe(10);
  });

  test("the lead's state decides the zone, else the org's timezone", async () => {
    clock.set(NIGHT); // 18:00 in Honolulu, 20:00 in California, 22:00 in Texas, 23:00 in New York
    const k = await key();
    expect((await sms(k, await lead({ state: "HI" }))).body).toEqual({ ok: true, message_id: expect.any(Number) });
    expect((await sms(k, await lead({ state: "California" }))).body).toEqual({ ok: true, message_id: expect.any(Number) });
    expect((await sms(k, await lead({ state: "TX" }))).body.defer_until).toBe(MORNING_TX / 1000);
    expect((await sms(k, await lead({ state: "New York" }))).body.defer_until).toBe(Date.UTC(2026, 0, 16, 13) / 1000);
    expect((await sms(k, await lead({ state: "" }))).body.defer_until).toBe(Date.UTC(2026, 0, 16, 13) / 1000);
  });
});

describe("the timeline shows what was sent", () => {
  const entryOf = async (k: string, leadId: number, id: number) => (await conversation(k, leadId)).entries.find((e: any) => e.id === id);

  test("API sends: the SMS entry's body is the Body Twilio got; the email entry's body and subject are the HTML and Subject sent", async () => {
    const k = await key();
    const id = await lead({ first: "Dana & <Co>", email: "dana.co@example.com" });
    const s = await sms(k, id, { body: "Hi {first_name}, thanks for contacting {company}!" });
    expect((await entryOf(k, id, s.body.message_id)).body).toBe(twilio.requests[0].form.Body);
    expect(twilio.requests[0].form.Body).toBe("Hi Dana & <Co>, thanks for contacting Acme Roofing LLC!");
    for (const subject of ["Hello {first_name} from {company}", undefined]) {
      smtp.reset();
      const e = await post(k, { lead_id: id, channel: "email", body: "<p>Hi {first_name}</p>", subject, operation_id: op() });
      const mail = smtp.mails[0];
      const entry = await entryOf(k, id, e.body.message_id);
      expect([entry.body, entry.subject]).toEqual([mail.parsed.html, mail.parsed.subject]);
      expect(entry.body).toBe("<p>Hi Dana &amp; &lt;Co&gt;</p>");
      expect(entry.subject).toBe(subject ? "Hello Dana & <Co> from Acme Roofing LLC" : "Message from Acme Roofing LLC");
    }
  });

  test("deferred sends: the queued entry already shows the merged text, and it is exactly what goes out when quiet hours end", async () => {
    clock.set(NIGHT);
    const k = await key();
    const id = await lead({ state: "TX", first: "Ruth", email: "ruth@example.com" });
    const s = await sms(k, id, { body: "Morning {first_name}, {company} here" });
    const e = await post(k, { lead_id: id, channel: "email", body: "<p>Morning {first_name}</p>", subject: "For {first_name}", operation_id: op() });
    expect([s.body.defer_until, e.body.defer_until]).toEqual([MORNING_TX / 1000, MORNING_TX / 1000]);
    const queuedSms = await entryOf(k, id, s.body.message_id);
    const queuedEmail = await entryOf(k, id, e.body.message_id);
    expect([queuedSms.status, queuedSms.body]).toEqual(["queued", "Morning Ruth, Acme Roofing LLC here"]);
    expect([queuedEmail.status, queuedEmail.body, queuedEmail.subject]).toEqual(["queued", "<p>Morning Ruth</p>", "For Ruth"]);
    // A name edited overnight does not change a message the agent has already seen queued.
    await db.sql`update leads set first_name = 'Renamed' where id = ${id}`;
    clock.set(MORNING_TX);
    await twilio.waitFor(1);
    await smtp.waitFor(1);
    await until(async () => (await message(s.body.message_id)).status === "sent" && (await message(e.body.message_id)).status === "sent");
    const sentSms = await entryOf(k, id, s.body.message_id);
    const sentEmail = await entryOf(k, id, e.body.message_id);
    expect(sentSms.body).toBe(twilio.requests[0].form.Body);
    expect(sentSms.body).toBe(queuedSms.body);
    expect([sentEmail.body, sentEmail.subject]).toEqual([smtp.mails[0].parsed.html, smtp.mails[0].parsed.subject]);
    expect([sentEmail.body, sentEmail.subject]).toEqual([queuedEmail.body, queuedEmail.subject]);
    expect(smtp.mails[0].parsed.text?.trim()).toBe("Morning Ruth");
  });

  test("a message queued before its text was stored merged (sql/0014) is merged when it goes, and then shows what went", async () => {
    clock.set(NIGHT);
    const k = await key();
    const id = await lead({ state: "TX", first: "Olga" });
    const s = await sms(k, id, { body: "Hi {first_name}" });
    // What the row of such a message holds: the template, merged = false.
    await db.sql`update messages set body = 'Hi {first_name} of {company}', merged = false where id = ${s.body.message_id}`;
    clock.set(MORNING_TX);
    await twilio.waitFor(1);
    await until(async () => (await message(s.body.message_id)).status === "sent");
    expect(twilio.requests[0].form.Body).toBe("Hi Olga of Acme Roofing LLC");
    expect(await message(s.body.message_id)).toMatchObject({ body: "Hi Olga of Acme Roofing LLC", merged: true });
  });

  test("the idempotency identity stays the request's fields: the same template replays, another template is 409", async () => {
    const k = await key();
    const id = await lead({ first: "Ivy" });
    for (const night of [false, true]) {
      clock.set(night ? NIGHT : DAY);
      twilio.reset();
      smtp.reset();
      const smsReq = { lead_id: id, channel: "sms", body: "Hi {first_name}", operation_id: op() };
      const emailReq = { lead_id: id, channel: "email", body: "<b>{first_name}</b>", subject: "To {first_name}", operation_id: op() };
      for (const req of [smsReq, emailReq]) {
        const first = await post(k, req);
        expect(first.status).toBe(200);
        // The stored text is merged; the retry (same template) still replays the first answer byte for byte.
        expect((await post(k, req, app2)).text).toBe(first.text);
        // The merged text as a "template" is a different request.
        const merged = await message(first.body.message_id);
        for (const change of [{ body: merged.body }, { body: req.body + " " }, ...(req.channel === "email" ? [{ subject: merged.subject }] : [])]) {
          const r = await post(k, { ...req, ...change });
          expect([r.status, r.body.error]).toEqual([409, "operation_id_conflict"]);
        }
      }
      expect(twilio.requests.length + smtp.mails.length).toBe(night ? 0 : 2);
    }
  });
});

describe("Twilio callbacks", () => {
  test("status: queued → sent → delivered, never backwards; the conversation follows", async () => {
    const k = await key();
    const id = await lead();
    const r = await sms(k, id);
    const sid = twilio.requests[0].sid!;
    const status = (s: string, extra: Record<string, string> = {}) =>
      signedPost("/hooks/sms_status.php", { MessageSid: sid, MessageStatus: s, AccountSid: "ACacme", ...extra });
    const first = await status("queued");
    expect([first.status, await first.text()]).toEqual([200, ""]);
    expect((await status("sent")).status).toBe(200);
    expect((await status("delivered")).status).toBe(200);
    for (const s of ["sent", "failed", "undelivered", "queued"]) expect((await status(s, { ErrorCode: "30003" })).status).toBe(200);
    const entry = (await conversation(k, id)).entries.find((e: any) => e.id === r.body.message_id);
    expect(entry).toMatchObject({ status: "delivered", error: "" });
  });

  test("status: failed or undelivered carries the ErrorCode, refunds, and is final", async () => {
    const k = await key();
    const id = await lead();
    const r = await sms(k, id);
    const sid = twilio.requests[0].sid!;
    expect(await credits()).toBe(9.99);
    const res = await signedPost("/hooks/sms_status.php", { MessageSid: sid, MessageStatus: "undelivered", ErrorCode: "30005", AccountSid: "ACacme" });
    expect(res.status).toBe(200);
    await signedPost("/hooks/sms_status.php", { MessageSid: sid, MessageStatus: "delivered", AccountSid: "ACacme" });
    expect((await conversation(k, id)).entries.find((e: any) => e.id === r.body.message_id)).toMatchObject({ status: "undelivered", error: "30005" });
    expect(await credits()).toBe(10);
  });

  test("a forged callback is 403 and changes nothing", async () => {
    const k = await key();
    const id = await lead({ phone: "5126600020" });
    const r = await sms(k, id);
    const sid = twilio.requests[0].sid!;
    const p = { MessageSid: sid, MessageStatus: "failed", ErrorCode: "30008", AccountSid: "ACacme" };
    const forgeries = [
      await signedPost("/hooks/sms_status.php", p, "not-the-token"),
      await signedPost("/hooks/sms_status.php", p, TOKEN, "AAAAAAAAAAAAAAAAAAAAAAAAAAA="),
      await fetch(app.base + "/hooks/sms_status.php", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(p).toString() }),
      // Signed for another URL (the signature covers BASE_URL, path and query).
      await fetch(app.base + "/hooks/sms_status.php?x=1", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signCallback(TOKEN, PUBLIC + "/hooks/sms_status.php", p) },
        body: new URLSearchParams(p).toString(),
      }),
      await signedPost("/hooks/sms_inbound.php", { From: "+15126600020", To: "+15125550100", Body: "STOP", MessageSid: "SMforged" }, "nope"),
    ];
    for (const f of forgeries) expect([f.status, await f.json()]).toEqual([403, { ok: false, error: "forbidden" }]);
    expect(await message(r.body.message_id)).toMatchObject({ status: "sent", error: "" });
    expect((await db.sql`select count(*)::int as n from lead_channels where lead_id = ${id}`)[0].n).toBe(0);
  });

  test("junk bodies to the callbacks are 403 or 413, never 5xx", async () => {
    const junk: [string, RequestInit][] = [
      ["/hooks/sms_status.php", { method: "POST" }],
      ["/hooks/sms_status.php", { method: "POST", body: "{not json", headers: { "content-type": "application/json" } }],
      ["/hooks/sms_status.php", { method: "POST", body: "[1,2]", headers: { "content-type": "application/json" } }],
      ["/hooks/sms_inbound.php", { method: "POST", body: "%%%&&&===", headers: { "content-type": "application/x-www-form-urlencoded" } }],
      ["/hooks/sms_inbound.php", { method: "POST", body: JSON.stringify({ From: 1, To: null, Body: {} }), headers: { "content-type": "application/json" } }],
      ["/hooks/sms_inbound.php", { method: "POST", body: "x".repeat(100 * 1024), headers: { "content-type": "application/x-www-form-urlencoded" } }],
    ];
    for (const [path, init] of junk) {
      const res = await fetch(app.base + path, init);
      expect([403, 413]).toContain(res.status);
    }
    expect((await fetch(app.base + "/hooks/sms_status.php")).status).toBe(405);
  });

  test("inbound: stored exactly as sent on the newest lead of the org whose number it is; empty TwiML back", async () => {
    const k = await key();
    const older = await lead({ phone: "5126600030" });
    const newer = await lead({ phone: "5126600030" });
    const body = "Is 9am ok? <script>x</script> \u{1F44D}";
    const res = await signedPost("/hooks/sms_inbound.php", { From: "+15126600030", To: "+15125550100", Body: body, MessageSid: "SMin1", AccountSid: "ACacme" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/xml; charset=utf-8");
    expect(await res.text()).toBe('<?xml version="1.0" encoding="UTF-8"?><Response></Response>');
    expect((await conversation(k, older)).entries.length).toBe(0);
    const entry = (await conversation(k, newer)).entries.at(-1);
    expect(entry).toEqual({
      kind: "msg",
      id: expect.any(Number),
      channel: "sms",
      direction: "in",
      actor_type: "provider",
      actor_id: "twilio",
      subject: "",
      body,
      status: "received",
      error: "",
      meta: { from: "+15126600030", to: "+15125550100", consent: null },
      epoch: DAY / 1000,
    });
  });

  test("STOP opts the lead out until START; every stop word, any case, whole body only", async () => {
    const k = await key();
    const id = await lead({ phone: "5126600040" });
    const text = (Body: string, sid: string) => signedPost("/hooks/sms_inbound.php", { From: "5126600040", To: "5125550100", Body, MessageSid: sid });
    let n = 0;
    for (const word of ["STOP", "stopall", " Unsubscribe ", "CANCEL", "end", "Quit"]) {
      expect((await text("START", `SMs${++n}`)).status).toBe(200);
      expect((await sms(k, id)).body.ok).toBe(true);
      expect((await text(word, `SMs${++n}`)).status).toBe(200);
      expect([word, (await sms(k, id)).body]).toEqual([word, { ok: false, message_id: null, reason: "opted_out" }]);
    }
    await text("please stop calling", `SMs${++n}`);
    expect((await sms(k, id)).body.reason).toBe("opted_out");
    await text("unstop", `SMs${++n}`);
    expect((await sms(k, id)).body.ok).toBe(true);
    await text("stop it", `SMs${++n}`);
    expect((await sms(k, id)).body.ok).toBe(true);
  });

  test("events: message.sent, message.failed and message.received are outbox rows with {type, timestamp, data}", async () => {
    const k = await key();
    const id = await lead({ phone: "5126600050" });
    const ok = await sms(k, id);
    twilio.setMode({ kind: "error", code: 21614, message: "not a mobile number" });
    const bad = await sms(k, id);
    await signedPost("/hooks/sms_inbound.php", { From: "5126600050", To: "5125550100", Body: "hello", MessageSid: "SMev1" });
    const rows = await db.sql`select org_id, type, payload from outbox_events where type like 'message.%' and (payload->'data'->>'lead_id')::bigint = ${id} order by id`;
    expect(rows.map((r) => r.type)).toEqual(["message.sent", "message.failed", "message.received"]);
    for (const r of rows) {
      expect(Object.keys(r.payload).sort()).toEqual(["data", "timestamp", "type"]);
      expect(r.payload.type).toBe(r.type);
      expect(r.payload.timestamp).toBe(new Date(DAY).toISOString());
      expect(r.org_id).toBe(1);
    }
    expect(rows[0].payload.data).toMatchObject({ message_id: ok.body.message_id, lead_id: id, channel: "sms", status: "sent" });
    expect(rows[1].payload.data).toMatchObject({ message_id: bad.body.message_id, reason: "provider_error", error: "21614: not a mobile number" });
    expect(rows[2].payload.data).toMatchObject({ lead_id: id, body: "hello", from: "5126600050", to: "5125550100" });
  });
});

describe("a process killed between the provider call and recording its outcome", () => {
  test("never re-sends that message after a restart", async () => {
    const k = await key();
    const id = await lead();
    // The child runs on the real clock: no quiet hours, so its send goes now.
    await configureAcme({ quiet: false });
    twilio.setMode({ kind: "hang" });
    const child: Subprocess<"ignore", "pipe", "inherit"> = Bun.spawn([process.execPath, "src/main.ts", "serve"], {
      cwd: new URL("..", import.meta.url).pathname,
      env: { ...process.env, DATABASE_URL: db.url, PORT: "0", HOST: "127.0.0.1", BASE_URL: PUBLIC, LOG_LEVEL: "info", REQUEST_DEADLINE_MS: String(TEST_DEADLINE_MS) },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "inherit",
    });
    try {
      const port = await listeningPort(child);
      const payload = { lead_id: id, channel: "sms", body: "exactly once", operation_id: op() };
      void fetch(`http://127.0.0.1:${port}/hooks/api_v1.php?r=messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": k },
        body: JSON.stringify(payload),
      }).catch(() => {});
      await twilio.waitFor(1, 10_000);
      child.kill("SIGKILL");
      expect(twilio.requests[0].form.Body).toBe("exactly once");
      await child.exited;
      twilio.setMode({ kind: "ok" });
      const [m] = await db.sql`select id, status, sending_until from messages where operation_id = ${payload.operation_id}`;
      expect(m.status).toBe("sending");
      // After the restart (these instances), once the dead sender's lease is over, a retry answers at once.
      clock.set(m.sending_until.getTime() + 1000);
      const retry = await post(k, payload, app2);
      expect([retry.status, retry.text]).toEqual([200, `{"ok":false,"message_id":${m.id},"reason":"outcome_unknown"}`]);
      expect((await post(k, payload, app)).text).toBe(retry.text);
      expect(twilio.requests.length).toBe(1);
      expect(await message(m.id)).toMatchObject({ status: "unknown" });
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  }, 30_000);
});

async function listeningPort(child: Subprocess<"ignore", "pipe", "inherit">): Promise<number> {
  const reader = child.stdout.getReader();
  let buffered = "";
  const end = performance.now() + 15_000;
  while (performance.now() < end) {
    const { done, value } = await reader.read();
    if (done) break;
    buffered += new TextDecoder().decode(value);
    for (const line of buffered.split("\n")) {
      if (!line.includes('"listening"')) continue;
      reader.releaseLock();
      return JSON.parse(line).port;
    }
  }
  throw new Error(`the child server did not start: ${buffered}`);
}

test("every event written matches its model (src/events/model.ts)", () => expectEventsMatchModels(db.sql, ["message.sent", "message.failed"]));
