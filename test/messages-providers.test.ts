// The provider clients against real servers on 127.0.0.1: the fake Twilio and an SMTP server.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { sendEmail } from "../src/messages/email";
import { renderEmail, mergeValues } from "../src/messages/merge";
import { e164, sendSms, twilioSignature, validTwilioSignature } from "../src/messages/twilio";
import { loadConfig } from "../src/config";
import { providerTimeoutOf, sendEnv } from "../src/messages/service";
import { signCallback, startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";
import { startFakeSmtp, type FakeSmtp } from "./harness/fake-smtp";
import { measured, waitBound } from "./harness/timing";

let twilio: FakeTwilio;
let smtp: FakeSmtp;
let plainSmtp: FakeSmtp;

beforeAll(async () => {
  twilio = await startFakeTwilio();
  smtp = await startFakeSmtp();
  plainSmtp = await startFakeSmtp({ starttls: false });
});
afterAll(async () => {
  await twilio?.stop();
  await smtp?.stop();
  await plainSmtp?.stop();
});
beforeEach(() => {
  twilio.reset();
  smtp.reset();
});

const cfg = () => ({ base_url: twilio.url + "/", account_sid: "AC123", auth_token: "tok en", from: "5125550100" });
const CALLBACK = "https://leadline.example/hooks/sms_status.php";

describe("Twilio client", () => {
  test("posts the form operations.md names, with basic auth, to the account's Messages resource", async () => {
    const out = await sendSms(cfg(), { to: "5125550001", body: "Hi & bye = 100%", statusCallback: CALLBACK });
    expect(out).toEqual({ ok: true, providerId: expect.stringMatching(/^SM[0-9a-f]{32}$/), status: "queued" });
    expect(twilio.requests.length).toBe(1);
    const r = twilio.requests[0];
    expect(r.path).toBe("/2010-04-01/Accounts/AC123/Messages.json");
    expect(r.auth).toEqual({ user: "AC123", pass: "tok en" });
    expect(r.contentType).toBe("application/x-www-form-urlencoded");
    expect(r.form).toEqual({ To: "+15125550001", From: "+15125550100", Body: "Hi & bye = 100%", StatusCallback: CALLBACK });
    expect(out.ok && out.providerId).toBe(r.sid!);
  });

  test("a Twilio error answer (400 with a code) is a provider_error carrying the code", async () => {
    twilio.setMode({ kind: "error", code: 21211, message: "The 'To' number +15125550001 is not a valid phone number." });
    const out = await sendSms(cfg(), { to: "5125550001", body: "x", statusCallback: CALLBACK });
    expect(out).toEqual({
      ok: false,
      reason: "provider_error",
      error: "21211: The 'To' number +15125550001 is not a valid phone number.",
      code: "21211",
    });
  });

  test("a 5xx is provider_unavailable; a closed port too", async () => {
    twilio.setMode({ kind: "server_error" });
    const out = await sendSms(cfg(), { to: "5125550001", body: "x", statusCallback: CALLBACK });
    expect(out).toMatchObject({ ok: false, reason: "provider_unavailable", error: "20500: Internal Server Error" });
    const closed = await sendSms({ ...cfg(), base_url: "http://127.0.0.1:9" }, { to: "5125550001", body: "x", statusCallback: CALLBACK });
    expect(closed).toMatchObject({ ok: false, reason: "provider_unavailable" });
  });

  test("a provider that never answers costs the bounded wait, then provider_timeout", async () => {
    twilio.setMode({ kind: "hang" });
    const { value: out, ms, late } = await measured(() => sendSms(cfg(), { to: "5125550001", body: "x", statusCallback: CALLBACK }, 300));
    expect(out).toMatchObject({ ok: false, reason: "provider_timeout", error: "no answer from the SMS provider within 0.3 s" });
    // The wait given, not less, and not the default 10 s: timers late by `late` meanwhile (test/harness/timing.ts).
    expect(ms).toBeGreaterThanOrEqual(290);
    expect(ms).toBeLessThan(waitBound(300, late));
    expect(twilio.hanging()).toBe(1);
  });

  test("E.164 for US numbers", () => {
    expect(e164("5125550001")).toBe("+15125550001");
    expect(e164("15125550001")).toBe("+15125550001");
    expect(e164("(512) 555-0001")).toBe("+15125550001");
    expect(e164("+44 20 7946 0000")).toBe("+442079460000");
    expect(e164("Acme")).toBe("Acme");
  });
});

describe("X-Twilio-Signature", () => {
  const url = "https://mycompany.com/myapp.php?foo=1&bar=2";
  const params: [string, string][] = [
    ["To", "+18005551212"],
    ["CallSid", "CA1234567890ABCDE"],
    ["Caller", "+12349013030"],
    ["Digits", "1234"],
    ["From", "+12349013030"],
  ];

  test("Twilio's documented example", () => {
    expect(twilioSignature("12345", url, params)).toBe("0/KCTR6DLpKmkAf8muzZqo1nDgQ=");
    expect(validTwilioSignature("12345", url, params, "0/KCTR6DLpKmkAf8muzZqo1nDgQ=")).toBe(true);
  });

  test("agrees with the independent signer of the fake", () => {
    const p = { MessageSid: "SM1", MessageStatus: "delivered", AccountSid: "AC1", ErrorCode: "", "Body ü": "hé" };
    expect(twilioSignature("tok", CALLBACK, Object.entries(p))).toBe(signCallback("tok", CALLBACK, p));
  });

  test("anything changed fails: token, URL, query, a parameter, a missing or truncated header", () => {
    const sig = twilioSignature("12345", url, params);
    expect(validTwilioSignature("other", url, params, sig)).toBe(false);
    expect(validTwilioSignature("12345", "https://mycompany.com/myapp.php?foo=1&bar=3", params, sig)).toBe(false);
    expect(validTwilioSignature("12345", "http://mycompany.com/myapp.php?foo=1&bar=2", params, sig)).toBe(false);
    expect(validTwilioSignature("12345", url, [...params, ["Extra", ""]], sig)).toBe(false);
    expect(validTwilioSignature("12345", url, params.slice(1), sig)).toBe(false);
    expect(validTwilioSignature("12345", url, params, null)).toBe(false);
    expect(validTwilioSignature("12345", url, params, "")).toBe(false);
    expect(validTwilioSignature("12345", url, params, sig.slice(0, -1))).toBe(false);
    expect(validTwilioSignature("12345", url, params, sig + "=")).toBe(false);
  });
});

describe("SMTP client", () => {
  const values = mergeValues({ first_name: "Dana <script>", last_name: "Diaz", phone: "5125550001", email: "dana@example.com" }, {
    company: "Acme Roofing LLC",
    name: "Acme",
  });
  const mail = () => renderEmail("<p>Hello <b>{first_name}</b>,</p><p>see you soon.</p>", null, values);

  test("sends over STARTTLS when offered: From, To, subject, HTML with escaped values, a text alternative", async () => {
    const out = await sendEmail({ smtp_url: smtp.url(), from: "Acme <hello@acme.example>" }, "dana@example.com", mail());
    expect(out).toMatchObject({ ok: true, status: "sent" });
    expect(smtp.mails.length).toBe(1);
    const m = smtp.mails[0];
    expect(m.secure).toBe(true);
    expect(m.user).toBe("mailer");
    expect(m.envelope).toEqual({ from: "hello@acme.example", to: ["dana@example.com"] });
    expect(m.parsed.from?.value).toEqual([{ address: "hello@acme.example", name: "Acme" }]);
    expect((m.parsed.to as { text: string }).text).toBe("dana@example.com");
    expect(m.parsed.subject).toBe("Message from Acme Roofing LLC");
    expect(m.parsed.html).toBe("<p>Hello <b>Dana &lt;script&gt;</b>,</p><p>see you soon.</p>");
    expect(m.parsed.text?.trim()).toBe("Hello Dana <script>,\nsee you soon.");
    expect(m.raw).toMatch(/multipart\/alternative/);
    expect(out.ok && out.providerId).toBe(m.parsed.messageId!);
  });

  test("plain SMTP when STARTTLS is not offered", async () => {
    const out = await sendEmail({ smtp_url: plainSmtp.url(), from: "hello@acme.example" }, "dana@example.com", mail());
    expect(out.ok).toBe(true);
    expect(plainSmtp.mails.at(-1)!.secure).toBe(false);
  });

  test("a refused recipient is a provider_error with the SMTP reply", async () => {
    smtp.rejectRecipient("nobody@example.com");
    const out = await sendEmail({ smtp_url: smtp.url(), from: "hello@acme.example" }, "nobody@example.com", mail());
    expect(out).toMatchObject({ ok: false, reason: "provider_error", code: "550" });
    expect(!out.ok && out.error).toMatch(/^SMTP 550: .*mailbox unavailable/);
  });

  test("a server that never answers costs the bounded wait; an unreachable one fails at once", async () => {
    smtp.setHang(true);
    const { value: out, ms, late } = await measured(() => sendEmail({ smtp_url: smtp.url(), from: "hello@acme.example" }, "dana@example.com", mail(), 400));
    expect(out).toMatchObject({ ok: false, reason: "provider_timeout" });
    expect(ms).toBeGreaterThanOrEqual(390);
    expect(ms).toBeLessThan(waitBound(400, late));
    smtp.setHang(false);
    const down = await sendEmail({ smtp_url: "smtp://127.0.0.1:9", from: "hello@acme.example" }, "dana@example.com", mail());
    expect(down).toMatchObject({ ok: false, reason: "provider_unavailable" });
  });
});

describe("the providers' wait", () => {
  test("10 s as serve configures it; an instance given another wait (StartOptions) uses it for every send", () => {
    expect(providerTimeoutOf(sendEnv({ config: loadConfig({}), unsubscribeKey: Buffer.alloc(32) }))).toBe(10_000);
    expect(providerTimeoutOf(sendEnv({ config: { ...loadConfig({}), providerTimeoutMs: 2500 }, unsubscribeKey: Buffer.alloc(32) }))).toBe(2500);
  });
});
