// The send gates as pure functions: no database.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { reasonStatus } from "../src/errors";
import {
  GATE_REASONS,
  billingGate,
  contactGate,
  emailConfig,
  gate,
  smsConfig,
  type BillingState,
  type ConsentState,
  type GateInput,
  type OrgSettings,
} from "../src/messages/gates";

const SMS = { base_url: "http://127.0.0.1:9", account_sid: "AC1", auth_token: "tok", from: "5125550100" };
const EMAIL = { smtp_url: "smtp://127.0.0.1:25", from: "Acme <hello@acme.example>" };
const org = (over: Partial<OrgSettings> = {}): OrgSettings => ({
  id: 1,
  name: "Acme",
  company: "Acme Roofing LLC",
  timezone: "America/New_York",
  quiet: { start: "21:00", end: "08:00" },
  automationCap: null,
  consent: "implied",
  sms: SMS,
  email: EMAIL,
  ...over,
});
const billing = (over: Partial<Exclude<BillingState, null | "unavailable">> = {}): BillingState => ({
  status: "active",
  subscription: "active",
  credits: 1,
  sms_cost: 0.01,
  email_cost: 0.001,
  ...over,
});
const lead = { phone: "5125550001", email: "dana@example.com", state: "TX" };
// 2026-01-15 12:00 in Texas (18:00Z): outside 21:00–08:00.
const NOON_TX = Date.UTC(2026, 0, 15, 18);
const input = (over: Partial<GateInput> = {}): GateInput => ({
  channel: "sms",
  org: org(),
  lead,
  consent: "none",
  listed: false,
  billing: billing(),
  now: NOON_TX,
  ...over,
});

describe("gates", () => {
  test("a send that passes every gate", () => {
    expect(gate(input())).toEqual({ ok: true, to: "5125550001", cost: 0.01, deferUntil: null });
    expect(gate(input({ channel: "email" }))).toEqual({ ok: true, to: "dana@example.com", cost: 0.001, deferUntil: null });
  });

  test("the channel: a 10-digit phone, a valid email", () => {
    expect(gate(input({ lead: { ...lead, phone: "" } }))).toEqual({ ok: false, reason: "no_phone" });
    expect(gate(input({ lead: { ...lead, phone: "512555" } }))).toEqual({ ok: false, reason: "no_phone" });
    expect(gate(input({ channel: "email", lead: { ...lead, email: "" } }))).toEqual({ ok: false, reason: "no_email" });
    expect(gate(input({ channel: "email", lead: { ...lead, email: "not an address" } }))).toEqual({ ok: false, reason: "no_email" });
    expect(gate(input({ channel: "email", lead: { ...lead, email: "a@b" } }))).toEqual({ ok: false, reason: "no_email" });
    // A lead without email can still be texted, and one without a phone emailed.
    expect(gate(input({ lead: { ...lead, email: "" } })).ok).toBe(true);
    expect(gate(input({ channel: "email", lead: { ...lead, phone: "" } })).ok).toBe(true);
  });

  test("consent: implied sends unless opted out; explicit only after an opt-in; an opt-out always wins", () => {
    const implied = org({ consent: "implied" });
    const explicit = org({ consent: "explicit" });
    const cases: [OrgSettings, ConsentState, string | null][] = [
      [implied, "none", null],
      [implied, "in", null],
      [implied, "out", "opted_out"],
      [explicit, "none", "no_consent"],
      [explicit, "in", null],
      [explicit, "out", "opted_out"],
    ];
    for (const [o, consent, reason] of cases) {
      for (const channel of ["sms", "email"] as const) {
        const r = gate(input({ org: o, consent, channel }));
        expect<string | null>(r.ok ? null : r.reason).toBe(reason);
      }
    }
  });

  test("an address on the organization's do-not-contact list is refused, whatever its consent, after the channel", () => {
    for (const channel of ["sms", "email"] as const) {
      for (const consent of ["none", "in", "out"] as const) {
        for (const mode of ["implied", "explicit"] as const) {
          expect(gate(input({ channel, consent, org: org({ consent: mode }), listed: true }))).toEqual({ ok: false, reason: "do_not_contact" });
        }
      }
      // Before the provider and billing: a listed address is refused however the org is set up.
      expect(gate(input({ channel, listed: true, org: org({ sms: null, email: null }), billing: null }))).toEqual({ ok: false, reason: "do_not_contact" });
    }
    // No address on the channel is said first: there is nothing to look up.
    expect(gate(input({ listed: true, lead: { ...lead, phone: "" } }))).toEqual({ ok: false, reason: "no_phone" });
    expect(reasonStatus("do_not_contact")).toBe(200);
  });

  test("the provider must be configured, completely", () => {
    expect(gate(input({ org: org({ sms: null }) }))).toEqual({ ok: false, reason: "provider_not_configured" });
    expect(gate(input({ channel: "email", org: org({ email: null }) }))).toEqual({ ok: false, reason: "provider_not_configured" });
    expect(gate(input({ org: org({ sms: { ...SMS, auth_token: "" } }) }))).toEqual({ ok: false, reason: "provider_not_configured" });
    expect(gate(input({ org: org({ sms: { ...SMS, base_url: "ftp://x" } }) }))).toEqual({ ok: false, reason: "provider_not_configured" });
    expect(gate(input({ org: org({ sms: "yes" }) }))).toEqual({ ok: false, reason: "provider_not_configured" });
    expect(gate(input({ channel: "email", org: org({ email: { from: "x@y.z" } }) }))).toEqual({ ok: false, reason: "provider_not_configured" });
    // A lead in a house campaign has no org: no provider.
    expect(gate(input({ org: null }))).toEqual({ ok: false, reason: "provider_not_configured" });
    // The other channel's settings do not matter.
    expect(gate(input({ org: org({ email: null }) })).ok).toBe(true);
    expect(smsConfig(SMS)).toEqual(SMS);
    expect(emailConfig({ ...EMAIL, extra: 1 })).toEqual(EMAIL);
  });

  test("billing (operations.md §3), each with its reason", () => {
    expect(billingGate("sms", null)).toEqual({ ok: false, reason: "billing_not_configured" });
    expect(billingGate("sms", "unavailable")).toEqual({ ok: false, reason: "billing_unavailable" });
    expect(billingGate("sms", billing({ status: "frozen" }))).toEqual({ ok: false, reason: "billing_frozen" });
    expect(billingGate("sms", billing({ subscription: "none" }))).toEqual({ ok: false, reason: "subscription_required" });
    expect(billingGate("sms", billing({ credits: 0.009 }))).toEqual({ ok: false, reason: "insufficient_credits" });
    expect(billingGate("sms", billing({ credits: 0.01 }))).toEqual({ ok: true, cost: 0.01 });
    expect(billingGate("email", billing({ credits: 0.009 }))).toEqual({ ok: true, cost: 0.001 });
    expect(billingGate("sms", billing({ credits: 0, sms_cost: 0 }))).toEqual({ ok: true, cost: 0 });
    // Frozen is reported before the subscription and the balance.
    expect(billingGate("sms", billing({ status: "frozen", subscription: "none", credits: 0 }))).toEqual({ ok: false, reason: "billing_frozen" });
    expect(billingGate("sms", billing({ subscription: "none", credits: 0 }))).toEqual({ ok: false, reason: "subscription_required" });
    // A row no constraint would allow is not trusted with money.
    expect(billingGate("sms", billing({ sms_cost: -1 }))).toEqual({ ok: false, reason: "billing_unavailable" });
    expect(billingGate("sms", billing({ credits: Number.NaN }))).toEqual({ ok: false, reason: "billing_unavailable" });
    expect(billingGate("sms", billing({ status: "paused" }))).toEqual({ ok: false, reason: "billing_unavailable" });
  });

  test("gate order: channel, consent, provider, billing, then quiet hours", () => {
    const everythingWrong = input({
      lead: { ...lead, phone: "" },
      consent: "out",
      org: org({ sms: null, consent: "explicit" }),
      billing: null,
    });
    expect(gate(everythingWrong)).toEqual({ ok: false, reason: "no_phone" });
    expect(gate({ ...everythingWrong, lead })).toEqual({ ok: false, reason: "opted_out" });
    expect(gate({ ...everythingWrong, lead, consent: "in" })).toEqual({ ok: false, reason: "provider_not_configured" });
    expect(gate({ ...everythingWrong, lead, consent: "in", org: org({ consent: "explicit" }) })).toEqual({
      ok: false,
      reason: "billing_not_configured",
    });
    // Billing refuses even in quiet hours: a deferral is promised only for a send that can happen.
    const night = Date.UTC(2026, 0, 15, 6); // 00:00 in Texas
    expect(gate(input({ now: night, billing: billing({ credits: 0 }) }))).toEqual({ ok: false, reason: "insufficient_credits" });
  });

  test("quiet hours defer in the lead's state's zone, else the org's", () => {
    const night = Date.UTC(2026, 0, 15, 6); // 00:00 in Texas, 01:00 in New York, 22:00 in California
    expect(gate(input({ now: night }))).toEqual({ ok: true, to: "5125550001", cost: 0.01, deferUntil: Date.UTC(2026, 0, 15, 14) });
    // 20:00 in Hawaii: outside the window there.
    expect(gate(input({ now: night, lead: { ...lead, state: "HI" } }))).toEqual({ ok: true, to: "5125550001", cost: 0.01, deferUntil: null });
    // 22:00 in California: until 08:00 PST (16:00Z).
    expect(gate(input({ now: night, lead: { ...lead, state: "CA" } }))).toMatchObject({ deferUntil: Date.UTC(2026, 0, 15, 16) });
    // No state: the org's zone (New York: 08:00 EST is 13:00Z).
    expect(gate(input({ now: night, lead: { ...lead, state: "" } }))).toMatchObject({ deferUntil: Date.UTC(2026, 0, 15, 13) });
    expect(gate(input({ now: night, lead: { ...lead, state: "" }, org: org({ timezone: "Asia/Tokyo" }) }))).toMatchObject({
      deferUntil: null, // 15:00 in Tokyo
    });
    expect(gate(input({ now: night, org: org({ quiet: null }) }))).toMatchObject({ deferUntil: null });
  });

  test("contactGate alone needs no balance and no clock", () => {
    expect(contactGate("sms", org(), lead, "none", false)).toEqual({ ok: true, to: "5125550001" });
    expect(contactGate("email", org(), { ...lead, email: "DANA@Example.com" }, "none", false)).toEqual({ ok: true, to: "dana@example.com" });
  });

  test("reasons: one documented list, billing ones are 402 and the rest 200", () => {
    expect(new Set(GATE_REASONS).size).toBe(GATE_REASONS.length);
    const billing = ["billing_frozen", "billing_not_configured", "billing_unavailable", "insufficient_credits", "subscription_required"];
    expect<string[]>(GATE_REASONS.filter((r) => reasonStatus(r) === 402).sort()).toEqual(billing);
    for (const r of GATE_REASONS) expect(reasonStatus(r)).toBe(billing.includes(r) ? 402 : 200);
    for (const r of ["empty_body", "provider_timeout", "provider_error", "provider_unavailable"]) expect(reasonStatus(r)).toBe(200);
  });

  test("property: a refusal is always one documented reason, and a pass never costs more than the credits", () => {
    const arb = fc.record({
      channel: fc.constantFrom("sms" as const, "email" as const),
      consent: fc.constantFrom("none" as const, "in" as const, "out" as const),
      listed: fc.boolean(),
      mode: fc.constantFrom("implied" as const, "explicit" as const),
      hasSms: fc.boolean(),
      hasEmail: fc.boolean(),
      phone: fc.constantFrom("", "5125550001", "12"),
      email: fc.constantFrom("", "x@example.com", "junk"),
      billing: fc.oneof(
        fc.constant(null),
        fc.constant("unavailable" as const),
        fc.record({
          status: fc.constantFrom("active", "frozen"),
          subscription: fc.constantFrom("active", "none"),
          credits: fc.double({ min: 0, max: 1, noNaN: true }),
          sms_cost: fc.double({ min: 0, max: 0.5, noNaN: true }),
          email_cost: fc.double({ min: 0, max: 0.5, noNaN: true }),
        }),
      ),
      now: fc.integer({ min: Date.UTC(2025, 0, 1), max: Date.UTC(2027, 0, 1) }),
    });
    fc.assert(
      fc.property(arb, (a) => {
        const r = gate({
          channel: a.channel,
          org: org({ consent: a.mode, sms: a.hasSms ? SMS : null, email: a.hasEmail ? EMAIL : null }),
          lead: { phone: a.phone, email: a.email, state: "TX" },
          consent: a.consent,
          listed: a.listed,
          billing: a.billing,
          now: a.now,
        });
        if (!r.ok) return (GATE_REASONS as readonly string[]).includes(r.reason);
        if (a.listed || a.consent === "out" || a.billing === null || a.billing === "unavailable") return false;
        return r.cost <= a.billing.credits && (r.deferUntil === null || r.deferUntil > a.now);
      }),
      { numRuns: 2000 },
    );
  });
});
