// The new_lead automation: intake's trigger becomes one run per active automation of the lead's
// organization; each run sends through the one send function (src/messages/service.ts) after its
// delay, with its gates, and records their answer. Against PostgreSQL, a fake Twilio and an SMTP
// server on 127.0.0.1, with an injected clock.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { fireAutomations } from "../src/automations/jobs";
import { AUTOMATION_RUN, automationOperationId, runAutomation } from "../src/automations/service";
import { connect, type Sql } from "../src/db/client";
import { JobRunner } from "../src/jobs/queue";
import { createOrDedupLead, resolveList } from "../src/leads/queries";
import { parseLeadInput } from "../src/leads/model";
import { setLogLevel } from "../src/log";
import { DEFERRED_SEND, sendDeferred, sendMessage, type SendEnv } from "../src/messages/service";
import { systemActor } from "../src/auth/actor";
import { applyProvisioning } from "../src/provision/service";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";
import { startProxy } from "./harness/proxy";
import { startFakeSmtp, type FakeSmtp } from "./harness/fake-smtp";
import { startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";

setLogLevel("error");

let db: TestDatabase;
let twilio: FakeTwilio;
let smtp: FakeSmtp;
const env: SendEnv = { baseUrl: "https://leadline.example" };
// 2026-01-15 11:00 in Texas; and 22:00 there (inside the 21:00–08:00 quiet hours), 08:00 next day.
const DAY = Date.UTC(2026, 0, 15, 17);
const NIGHT = Date.UTC(2026, 0, 16, 4);
const MORNING_TX = Date.UTC(2026, 0, 16, 14);
const clock = new ManualClock(DAY);
const deps = () => ({ sql: db.sql, clock });

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  twilio = await startFakeTwilio();
  smtp = await startFakeSmtp();
});
afterAll(async () => {
  await db?.drop();
  await twilio?.stop();
  await smtp?.stop();
});

beforeEach(async () => {
  clock.set(DAY);
  twilio.reset();
  smtp.reset();
  await db.sql`update automations set active = false`;
  await db.sql`delete from jobs`;
  await db.sql`
    update orgs set timezone = 'America/New_York', quiet_start = '21:00', quiet_end = '08:00', consent = 'implied',
      sms = ${db.sql.json({ base_url: twilio.url, account_sid: "ACacme", auth_token: "acme-token", from: "5125550100" })},
      email = ${db.sql.json({ smtp_url: smtp.url(), from: "Acme <hello@acme.example>" })}
    where id in (1, 2)`;
  await db.sql`
    insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost)
    values (1, 'active', 'active', 10, 0.01, 0.001), (2, 'active', 'active', 10, 0.01, 0.001)
    on conflict (org_id) do update set status = 'active', subscription = 'active', credits = 10`;
});

let nextAutomation = 1;
async function automation(spec: { org?: number | null; channel?: string; body?: string; subject?: string | null; delay?: number } = {}) {
  const id = nextAutomation++;
  await applyProvisioning(db.sql, {
    automations: [
      {
        id,
        org_id: spec.org === undefined ? 1 : spec.org,
        trigger: "new_lead",
        channel: (spec.channel ?? "sms") as "sms",
        subject: spec.subject ?? null,
        body: spec.body ?? "Hi {first_name}, thanks for contacting {company}!",
        ...(spec.delay !== undefined ? { delay_seconds: spec.delay } : {}),
      },
    ],
  });
  return id;
}

let phoneSeq = 5125570000;
async function intake(fields: Record<string, unknown> = {}) {
  const input = parseLeadInput({ phone: String(phoneSeq++), list_id: 101, first_name: "Dana", state: "TX", email: "dana@example.com", ...fields })!;
  const list = (await resolveList(db.sql, null, input.listId, null))!;
  return createOrDedupLead(db.sql, list, input, new Date(clock.now()));
}

const runs = (leadId: number) => db.sql`select * from automation_runs where lead_id = ${leadId} order by automation_id`;
const jobOf = async (runId: number) => (await db.sql`select * from jobs where kind = ${AUTOMATION_RUN} and ref = ${runId}`)[0];
const run = (runId: number, sql: Sql = db.sql) => runAutomation(sql, clock, env, runId);

describe("new_lead", () => {
  test("a fresh lead's automation sends the rendered text once through the send path and records it", async () => {
    const auto = await automation();
    const { lead_id, deduped } = await intake({ first_name: "Dana" });
    expect(deduped).toBe(false);
    expect(await fireAutomations(deps())).toEqual({ triggers: 1, runs: 1 });
    const [r] = await runs(lead_id);
    expect(r).toMatchObject({ automation_id: auto, status: "pending", channel: "sms" });
    expect((await jobOf(r.id)).run_at.getTime()).toBe(DAY);
    expect(await run(r.id)).toEqual({ done: true });
    expect(twilio.requests).toHaveLength(1);
    expect(twilio.requests[0].form).toMatchObject({ Body: "Hi Dana, thanks for contacting Acme Roofing LLC!", To: expect.stringContaining("512557") });
    const [done] = await runs(lead_id);
    expect(done).toMatchObject({ status: "sent", reason: null, defer_until: null });
    expect(done.finished_at.getTime()).toBe(DAY);
    expect(done.result).toEqual({ ok: true, message_id: done.message_id });
    const [m] = await db.sql`select * from messages where id = ${done.message_id}`;
    expect(m).toMatchObject({
      lead_id,
      org_id: 1,
      channel: "sms",
      direction: "out",
      actor_type: "automation",
      actor_id: String(auto),
      operation_id: automationOperationId(auto, lead_id),
      status: "sent",
    });
    // The job is done; running the run again sends nothing.
    expect(await run(r.id)).toEqual({ done: true });
    expect(twilio.requests).toHaveLength(1);
  });

  test("a duplicate intake fires nothing", async () => {
    await automation();
    const first = await intake();
    await fireAutomations(deps());
    const phone = (await db.sql`select phone from leads where id = ${first.lead_id}`)[0].phone;
    const again = await intake({ phone });
    expect(again).toEqual({ lead_id: first.lead_id, deduped: true });
    expect(await fireAutomations(deps())).toEqual({ triggers: 0, runs: 0 });
    expect(await runs(first.lead_id)).toHaveLength(1);
  });

  test("every active automation of the lead's organization runs; inactive ones and other orgs' do not", async () => {
    const a1 = await automation({ body: "one" });
    const a2 = await automation({ channel: "email", body: "<p>two {first_name}</p>", subject: "Hello {first_name}" });
    const off = await automation({ body: "off" });
    await db.sql`update automations set active = false where id = ${off}`;
    const bolt = await automation({ org: 2, body: "bolt" });
    const house = await automation({ org: null, body: "house" });
    const { lead_id } = await intake({ first_name: "Eve" });
    await fireAutomations(deps());
    const made = await runs(lead_id);
    expect(made.map((r) => r.automation_id)).toEqual([a1, a2]);
    for (const r of made) expect(await run(r.id)).toEqual({ done: true });
    expect(twilio.requests.map((q) => q.form.Body)).toEqual(["one"]);
    await smtp.waitFor(1);
    expect(smtp.mails).toHaveLength(1);
    expect(smtp.mails[0].parsed.subject).toBe("Hello Eve");
    expect((await runs(lead_id)).map((r) => r.status)).toEqual(["sent", "sent"]);
    expect([bolt, house, off]).not.toContain(made[0].automation_id);
  });

  test("delay_seconds: the run's job is due that long after the trigger", async () => {
    await automation({ delay: 600 });
    const { lead_id } = await intake();
    await fireAutomations(deps());
    const [r] = await runs(lead_id);
    expect(r.due_at.getTime()).toBe(DAY + 600_000);
    expect((await jobOf(r.id)).run_at.getTime()).toBe(DAY + 600_000);
    // Through the job runner: nothing before the delay, the text once after it.
    const runner = new JobRunner(db.sql, clock, [{ kind: AUTOMATION_RUN, run: (job) => runAutomation(db.sql, clock, env, job.ref!) }], { pollMs: 10 });
    runner.start();
    try {
      clock.set(DAY + 599_000);
      await Bun.sleep(100);
      expect(twilio.requests).toHaveLength(0);
      clock.set(DAY + 600_000);
      await twilio.waitFor(1, 3000);
      await until(async () => (await runs(lead_id))[0].status === "sent");
    } finally {
      await runner.stop();
    }
    expect(twilio.requests).toHaveLength(1);
  });
});

async function until(pred: () => Promise<boolean>, ms = 3000) {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error("timed out");
    await Bun.sleep(10);
  }
}

describe("gates", () => {
  test("quiet hours: the run records the deferral, and the deferred send goes when they end", async () => {
    await automation();
    clock.set(NIGHT);
    const { lead_id } = await intake();
    await fireAutomations(deps());
    const [r] = await runs(lead_id);
    expect(await run(r.id)).toEqual({ done: true });
    expect(twilio.requests).toHaveLength(0);
    const [d] = await runs(lead_id);
    expect(d).toMatchObject({ status: "deferred", reason: null });
    expect(d.defer_until.getTime()).toBe(MORNING_TX);
    // Messaging's deferred-send job, due at the end of quiet hours, sends it.
    const [job] = await db.sql`select * from jobs where kind = ${DEFERRED_SEND} and ref = ${d.message_id}`;
    expect(job.run_at.getTime()).toBe(MORNING_TX);
    const runner = new JobRunner(db.sql, clock, [{ kind: DEFERRED_SEND, run: (j) => sendDeferred(db.sql, j.ref!, clock.now(), env) }], { pollMs: 10 });
    runner.start();
    try {
      clock.set(MORNING_TX - 1000);
      await Bun.sleep(100);
      expect(twilio.requests).toHaveLength(0);
      clock.set(MORNING_TX);
      await twilio.waitFor(1, 3000);
    } finally {
      await runner.stop();
    }
    expect(twilio.requests[0].form.Body).toBe("Hi Dana, thanks for contacting Acme Roofing LLC!");
    expect((await db.sql`select status from messages where id = ${d.message_id}`)[0].status).toBe("sent");
  });

  test("consent, billing and a missing channel block the run, each recorded with its reason", async () => {
    const sms = await automation();
    const email = await automation({ channel: "email", body: "<p>Hi</p>" });
    const cases: [string, () => Promise<unknown>, Record<string, unknown>, [string, string]][] = [
      ["no_consent", () => db.sql`update orgs set consent = 'explicit' where id = 1`, {}, ["no_consent", "no_consent"]],
      ["billing", () => db.sql`update org_billing set status = 'frozen' where org_id = 1`, {}, ["billing_frozen", "billing_frozen"]],
      ["credits", () => db.sql`update org_billing set credits = 0 where org_id = 1`, {}, ["insufficient_credits", "insufficient_credits"]],
      ["no billing", () => db.sql`delete from org_billing where org_id = 1`, {}, ["billing_not_configured", "billing_not_configured"]],
      ["no email", async () => {}, { email: "" }, ["sent", "no_email"]],
      ["no provider", () => db.sql`update orgs set sms = null where id = 1`, {}, ["provider_not_configured", "sent"]],
    ];
    for (const [name, setup, fields, [smsWant, emailWant]] of cases) {
      await db.sql`update orgs set consent = 'implied', sms = ${db.sql.json({ base_url: twilio.url, account_sid: "ACacme", auth_token: "acme-token", from: "5125550100" })} where id = 1`;
      await db.sql`
        insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost)
        values (1, 'active', 'active', 10, 0.01, 0.001)
        on conflict (org_id) do update set status = 'active', subscription = 'active', credits = 10`;
      await setup();
      const { lead_id } = await intake(fields);
      await fireAutomations(deps());
      for (const r of await runs(lead_id)) await run(r.id);
      const got = await runs(lead_id);
      const outcome = (r: (typeof got)[number]) => (r.status === "sent" ? "sent" : r.reason);
      expect({ name, sms: outcome(got.find((r) => r.automation_id === sms)!), email: outcome(got.find((r) => r.automation_id === email)!) }).toEqual({
        name,
        sms: smsWant,
        email: emailWant,
      });
      for (const r of got) if (r.status !== "sent") expect(r).toMatchObject({ status: "blocked", message_id: null });
    }
  });

  test("a provider failure is recorded as failed, with the message it recorded", async () => {
    await automation();
    twilio.setMode({ kind: "error", code: 21211, message: "The 'To' number is not a valid phone number." });
    const { lead_id } = await intake();
    await fireAutomations(deps());
    const [r] = await runs(lead_id);
    await run(r.id);
    const [f] = await runs(lead_id);
    expect(f).toMatchObject({ status: "failed", reason: "provider_error" });
    expect(f.message_id).not.toBeNull();
  });
});

describe("exactly once", () => {
  test("two instances firing triggers at once make one run per automation and lead", async () => {
    await automation();
    await automation({ body: "second" });
    const leads: number[] = [];
    for (let i = 0; i < 40; i++) leads.push((await intake()).lead_id);
    const other = connect(db.url, { max: 2, statementTimeoutMs: 0 });
    try {
      const fire = async (sql: Sql) => {
        for (;;) if ((await fireAutomations({ sql, clock }, 7)).triggers === 0) return;
      };
      await Promise.all([fire(db.sql), fire(other), fire(db.sql)]);
    } finally {
      await other.end();
    }
    const [c] = await db.sql`
      select count(*)::int as runs, count(distinct (automation_id, lead_id))::int as pairs
      from automation_runs where lead_id = any(${leads}::bigint[])`;
    expect(c).toEqual({ runs: 80, pairs: 80 });
    const [j] = await db.sql`select count(*)::int as n from jobs where kind = ${AUTOMATION_RUN}`;
    expect(j.n).toBe(80);
  });

  test("a run executed by two instances at once, or again after a crash, sends once", async () => {
    await automation();
    const { lead_id } = await intake();
    await fireAutomations(deps());
    const [r] = await runs(lead_id);
    const other = connect(db.url, { max: 2, statementTimeoutMs: 0 });
    try {
      await Promise.all([run(r.id), run(r.id, other)]);
    } finally {
      await other.end();
    }
    expect(twilio.requests).toHaveLength(1);
    // A worker that sent and died before recording the run: the retry replays the send's answer.
    await db.sql`update automation_runs set status = 'pending', message_id = null, result = null where id = ${r.id}`;
    expect(await run(r.id)).toEqual({ done: true });
    expect(twilio.requests).toHaveLength(1);
    expect((await runs(lead_id))[0]).toMatchObject({ status: "sent" });
  });

  test("a database too slow for a send's step leaves the run pending: its job runs it again, and it sends once", async () => {
    await automation();
    const { lead_id } = await intake();
    await fireAutomations(deps());
    const [r] = await runs(lead_id);
    // Every round trip 1.2 s or more: the run's first read has no deadline, the send's steps one of 1 s.
    const proxy = await startProxy(db.url);
    const slow = connect(proxy.url, { max: 2, statementTimeoutMs: 0 });
    try {
      proxy.delay(600);
      await expect(run(r.id, slow)).rejects.toMatchObject({ code: "unavailable" });
    } finally {
      await slow.end({ timeout: 1 });
      await proxy.close();
    }
    expect((await runs(lead_id))[0]).toMatchObject({ status: "pending", reason: null });
    expect(twilio.requests).toHaveLength(0);
    expect(await run(r.id)).toEqual({ done: true });
    expect(twilio.requests).toHaveLength(1);
    expect((await runs(lead_id))[0]).toMatchObject({ status: "sent" });
  }, 20_000);

  test("the run sends what the automation said when the lead came in, so a retry after an edit is no conflict", async () => {
    const auto = await automation({ body: "before" });
    const { lead_id } = await intake();
    await fireAutomations(deps());
    const [r] = await runs(lead_id);
    // Sent by a run whose worker died before recording it …
    const actor = systemActor("automation", String(auto), 1);
    await sendMessage(db.sql, actor, { leadId: lead_id, channel: "sms", body: "before", subject: null, operationId: automationOperationId(auto, lead_id) }, clock.now(), env);
    expect(twilio.requests).toHaveLength(1);
    // … then the automation is edited; the retried run still replays the first send.
    await db.sql`update automations set body = 'after' where id = ${auto}`;
    expect(await run(r.id)).toEqual({ done: true });
    expect(twilio.requests).toHaveLength(1);
    expect((await runs(lead_id))[0]).toMatchObject({ status: "sent", body: "before" });
  });

  test("a run of an automation switched off meanwhile, or for a lead gone from its organization, is skipped", async () => {
    const auto = await automation();
    const a = await intake();
    const b = await intake();
    await fireAutomations(deps());
    await db.sql`update automations set active = false where id = ${auto}`;
    const [ra] = await runs(a.lead_id);
    await run(ra.id);
    expect((await runs(a.lead_id))[0]).toMatchObject({ status: "skipped", reason: "automation_inactive" });
    await db.sql`update automations set active = true where id = ${auto}`;
    await db.sql`update leads set list_id = 201 where id = ${b.lead_id}`;
    const [rb] = await runs(b.lead_id);
    await run(rb.id);
    expect((await runs(b.lead_id))[0]).toMatchObject({ status: "skipped", reason: "lead_not_found" });
    expect(twilio.requests).toHaveLength(0);
  });
});

describe("provisioning", () => {
  test("delay_seconds is kept; an unknown trigger is an error", async () => {
    await applyProvisioning(db.sql, {
      automations: [{ id: 900, org_id: 1, trigger: "new_lead", channel: "sms", body: "x", delay_seconds: 90, active: false }],
    });
    expect((await db.sql`select delay_seconds from automations where id = 900`)[0].delay_seconds).toBe(90);
    const { parseProvisioning } = await import("../src/provision/validate");
    expect(() =>
      parseProvisioning(JSON.stringify({ automations: [{ id: 901, org_id: 1, trigger: "new-lead", channel: "sms", body: "x" }] })),
    ).toThrow("automations[0].trigger");
    expect(() =>
      parseProvisioning(JSON.stringify({ automations: [{ id: 901, org_id: 1, trigger: "new_lead", channel: "sms", body: "x", delay_seconds: -1 }] })),
    ).toThrow("automations[0].delay_seconds");
  });
});

describe("serve", () => {
  test("over HTTP, the conversation shows the automations' texts as sent, at once and after quiet hours", async () => {
    const { startApp, call } = await import("./harness/app");
    const { makeKey } = await import("./harness/factory");
    await automation({ body: "Hi {first_name}, thanks for contacting {company}!" });
    await automation({ channel: "email", subject: "Welcome, {first_name}", body: "<p>Hi {first_name} &amp; welcome to {company}</p>" });
    const { key } = await makeKey(db.sql, { scopes: ["leads:write", "conversations:read"], org: 1 });
    const app = await startApp(db.url, {}, { clock });
    try {
      for (const at of [DAY, NIGHT]) {
        clock.set(at);
        twilio.reset();
        smtp.reset();
        const body = { phone: String(phoneSeq++), list_id: 101, first_name: "Dana", state: "TX", email: "dana.auto@example.com" };
        const r = await call(app.base, "/hooks/lead_intake.php", { method: "POST", key, json: body });
        expect(r.body).toMatchObject({ ok: true, deduped: false });
        const leadId = r.body.lead_id;
        // The two runs race: entries in channel order (email, sms).
        const entries = async () =>
          (await call(app.base, `/hooks/api_v1.php?r=conversations/${leadId}`, { key })).body.entries
            .filter((e: any) => e.kind === "msg")
            .sort((a: any, b: any) => a.channel.localeCompare(b.channel));
        if (at === NIGHT) {
          await until(async () => {
            const both = await runs(leadId);
            return both.length === 2 && both.every((x) => x.status === "deferred");
          });
          // Queued until morning, and already showing what will go.
          const queued = await entries();
          expect(queued.map((e: any) => [e.channel, e.status, e.body, e.subject])).toEqual([
            ["email", "queued", "<p>Hi Dana &amp; welcome to Acme Roofing LLC</p>", "Welcome, Dana"],
            ["sms", "queued", "Hi Dana, thanks for contacting Acme Roofing LLC!", ""],
          ]);
          clock.set(MORNING_TX);
        }
        await twilio.waitFor(1, 5000);
        await smtp.waitFor(1, 5000);
        await until(async () => (await entries()).every((e: any) => e.status === "sent"));
        const [emailEntry, textEntry] = await entries();
        expect(textEntry.body).toBe(twilio.requests[0].form.Body);
        expect(textEntry.body).toBe("Hi Dana, thanks for contacting Acme Roofing LLC!");
        expect([emailEntry.body, emailEntry.subject]).toEqual([smtp.mails[0].parsed.html, smtp.mails[0].parsed.subject]);
        expect([emailEntry.body, emailEntry.subject]).toEqual(["<p>Hi Dana &amp; welcome to Acme Roofing LLC</p>", "Welcome, Dana"]);
        expect(smtp.mails[0].parsed.text?.trim()).toBe("Hi Dana & welcome to Acme Roofing LLC");
      }
    } finally {
      await app.stop();
    }
  });

  test("an intake over HTTP is texted by the running service once; its duplicate is not; both events reach a webhook", async () => {
    const { startApp, call } = await import("./harness/app");
    const { makeKey } = await import("./harness/factory");
    const { WebhookReceiver } = await import("./harness/webhook-receiver");
    const rx = await WebhookReceiver.start();
    await db.sql`
      insert into webhooks (id, org_id, url, secret, events)
      values (77, 1, ${rx.url("/auto")}, ${"whsec_" + Buffer.alloc(24, 3).toString("base64")}, '{lead.created,message.sent}')`;
    // Earlier tests' events were never fanned out: not this test's to deliver.
    await db.sql`update outbox_events set dispatched_at = now() where dispatched_at is null`;
    await automation({ body: "Welcome {first_name}" });
    const { key } = await makeKey(db.sql, { scopes: ["leads:write"], org: 1 });
    const app = await startApp(db.url, { WEBHOOK_ALLOW_PRIVATE: "true" }, { clock });
    try {
      const body = { phone: String(phoneSeq++), list_id: 101, first_name: "Ari", state: "TX" };
      const r = await call(app.base, "/hooks/lead_intake.php", { method: "POST", key, json: body });
      expect(r.body).toMatchObject({ ok: true, deduped: false });
      await twilio.waitFor(1, 5000);
      expect(twilio.requests[0].form.Body).toBe("Welcome Ari");
      const again = await call(app.base, "/hooks/lead_intake.php", { method: "POST", key, json: body });
      expect(again.body).toMatchObject({ ok: true, deduped: true, lead_id: r.body.lead_id });
      await until(async () => (await runs(r.body.lead_id))[0]?.status === "sent");
      await Bun.sleep(400);
      expect(twilio.requests).toHaveLength(1);
      const [done] = await runs(r.body.lead_id);
      expect(done.status).toBe("sent");
      await rx.waitFor(2);
      const bodies = rx.at("/auto").map((x) => JSON.parse(x.body));
      expect(bodies.map((b) => b.type).sort()).toEqual(["lead.created", "message.sent"]);
      const sent = bodies.find((b) => b.type === "message.sent");
      expect(sent.data).toMatchObject({
        message_id: done.message_id,
        lead_id: r.body.lead_id,
        org_id: 1,
        channel: "sms",
        status: "sent",
        actor_type: "automation",
        operation_id: expect.stringMatching(/^automation\/\d+\/lead\/\d+$/),
      });
    } finally {
      await app.stop();
      await rx.stop();
      await db.sql`update webhooks set active = false where id = 77`;
    }
  });
});
