// Saved replies (issue 29, src/replies/): one validation and one writer for the service, the CLI
// and provisioning, every change audited with its previous and new values; the / picker; a
// preview for a lead that is the send path's own merge (checked against what Twilio and the SMTP
// server receive); confined to the actor's organization, tried across two.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Io } from "../src/args";
import type { Actor } from "../src/auth/actor";
import { AppError, UsageError } from "../src/errors";
import { sendMessage } from "../src/messages/service";
import { applyProvisioning } from "../src/provision/service";
import { parseProvisioning } from "../src/provision/validate";
import { repliesCommand } from "../src/replies/command";
import {
  createSavedReply,
  deleteSavedReply,
  listSavedReplies,
  previewSavedReply,
  updateSavedReply,
  type SavedReply,
} from "../src/replies/service";
import { testDatabase, type TestDatabase } from "./harness/db";
import { seedWorld } from "./harness/factory";
import { startFakeSmtp, type FakeSmtp } from "./harness/fake-smtp";
import { startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";

let db: TestDatabase;
let twilio: FakeTwilio;
let smtp: FakeSmtp;
const T0 = new Date(Date.UTC(2026, 10, 28, 16));
const user = (orgId: number | null, id = "mia"): Actor => ({ orgId, type: "user", id, agent: null, keyId: null, address: "h" });
const mia = user(1); // a manager of org 1
const eli = user(2, "eli");
const admin = user(null, "root");

async function refusedWith(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error("expected an AppError");
}

const made = async (actor: Actor, org: number, spec: Parameters<typeof createSavedReply>[3]): Promise<SavedReply> => {
  const r = await createSavedReply(db.sql, actor, org, spec, T0);
  if (!r.ok) throw new Error(r.reason);
  return r.reply;
};

const audits = (target: string) => db.sql<{ action: string; org_id: number | null; actor_id: string; details: any }[]>`
  select action, org_id, actor_id, details from audit_log where target = ${target} order by id`;

function captureIo(): Io & { text: () => string } {
  let out = "";
  return { out: (t: string) => void (out += t), err: () => {}, readInput: async () => "", flush: async () => {}, text: () => out };
}
const cli = async (...args: string[]) => {
  const io = captureIo();
  const code = await repliesCommand(db.sql, args, io, { now: () => T0.getTime() } as never);
  return { code, out: io.text() };
};

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  twilio = await startFakeTwilio();
  smtp = await startFakeSmtp();
  await db.sql`
    update orgs set sms = ${db.sql.json({ base_url: twilio.url, account_sid: "AC1", auth_token: "t", from: "5125550100" })},
                    email = ${db.sql.json({ smtp_url: smtp.url(), from: "Acme <hi@acme.example>" })}
    where id = 1`;
  await db.sql`insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost) values (1, 'active', 'active', 10, 0.01, 0.001)`;
});
afterAll(async () => {
  await twilio?.stop();
  await smtp?.stop();
  await db?.drop();
});

describe("the rules, one writer", () => {
  test("created with its fields as stored, audited; a name is unique in its organization regardless of case", async () => {
    const r = await made(mia, 1, { name: "  Hours ", body: "Hi {first_name}, we are open 8-6.", channels: ["sms", "note"] });
    expect(r).toMatchObject({ org_id: 1, name: "Hours", body: "Hi {first_name}, we are open 8-6.", subject: "", channels: ["sms", "note"] });
    expect([...(await audits(`saved_reply:${r.id}`))]).toEqual([
      { action: "saved_reply.create", org_id: 1, actor_id: "mia", details: { name: "Hours", body: r.body, subject: "", channels: ["sms", "note"] } },
    ]);
    expect(await createSavedReply(db.sql, mia, 1, { name: "HOURS", body: "x" }, T0)).toEqual({ ok: false, reason: "name_taken" });
    // Another organization may have its own "Hours".
    expect((await made(eli, 2, { name: "hours", body: "Bolt is open 24/7." })).channels).toEqual(["sms", "email", "note"]);
  });

  test("bad fields are refused with what is wrong, never a 500", async () => {
    for (const [spec, message] of [
      [{ name: "x", body: "Hi {frist_name}" }, "saved_reply.body: unknown merge field {frist_name}; known: {first_name}"],
      [{ name: "x", body: "ok", subject: "About {appointment_time}" }, "saved_reply.subject: unknown merge field {appointment_time}"],
      [{ name: "   ", body: "ok" }, "saved_reply.name: must not be blank"],
      [{ name: "a\u0007b", body: "ok" }, "saved_reply.name: must not hold a control character"],
      [{ name: "x", body: "" }, "saved_reply.body:"],
      [{ name: "x", body: "ok", channels: ["fax"] }, "saved_reply.channels[0]:"],
      [{ name: "x", body: "ok", channels: [] }, "saved_reply.channels:"],
      [{ name: "x", body: "ok", color: "red" }, "saved_reply.color:"],
      [{ name: "x".repeat(61), body: "ok" }, "saved_reply.name:"],
    ] as const) {
      const err = await refusedWith(createSavedReply(db.sql, mia, 1, spec as never, T0));
      expect({ code: err.code, starts: err.message.startsWith(message) ? message : err.message }).toEqual({ code: "invalid_input", starts: message });
    }
  });

  test("an update changes only what is given, audited field by field; nothing changed writes nothing", async () => {
    const r = await made(mia, 1, { name: "Follow up", body: "Checking in, {first_name}!" });
    const u = await updateSavedReply(db.sql, mia, r.id, { body: "Just checking in, {first_name}!", channels: ["sms"] }, T0);
    expect(u.ok && u.reply).toMatchObject({ name: "Follow up", body: "Just checking in, {first_name}!", channels: ["sms"] });
    expect(await updateSavedReply(db.sql, mia, r.id, { channels: ["sms"] }, T0)).toMatchObject({ ok: true, changed: false });
    expect((await audits(`saved_reply:${r.id}`)).map((a) => [a.action, a.details])).toEqual([
      ["saved_reply.create", expect.anything()],
      ["saved_reply.update", { changes: { body: { from: "Checking in, {first_name}!", to: "Just checking in, {first_name}!" }, channels: { from: ["sms", "email", "note"], to: ["sms"] } } }],
    ]);
    expect(await updateSavedReply(db.sql, mia, r.id, { name: "hours" }, T0)).toEqual({ ok: false, reason: "name_taken" });
    const gone = await deleteSavedReply(db.sql, mia, r.id);
    expect(gone.id).toBe(r.id);
    expect((await audits(`saved_reply:${r.id}`)).at(-1)).toMatchObject({ action: "saved_reply.delete", org_id: 1, details: { name: "Follow up" } });
  });
});

describe("the / picker", () => {
  test("by name prefix, any case, in name order, only the channel's; another organization's never", async () => {
    await made(mia, 1, { name: "Estimate booked", body: "See you {first_name}!", channels: ["sms", "email"] });
    await made(mia, 1, { name: "estimate follow-up", body: "Any questions about the estimate?", channels: ["email"] });
    const names = async (actor: Actor, org: number | null, prefix: string, channel?: "sms" | "email" | "note") =>
      (await listSavedReplies(db.sql, actor, org, { prefix, channel })).map((r) => r.name);
    expect(await names(mia, 1, "EST")).toEqual(["Estimate booked", "estimate follow-up"]);
    expect(await names(mia, 1, "est", "sms")).toEqual(["Estimate booked"]);
    expect(await names(mia, 1, "h", "note")).toEqual(["Hours"]);
    expect(await names(eli, 2, "")).toEqual(["hours"]);
    expect((await refusedWith(listSavedReplies(db.sql, eli, 1, {}))).code).toBe("not_found");
    expect(await names(admin, 2, "")).toEqual(["hours"]);
  });

  test("another organization's reply is not_found to read, change, delete or preview", async () => {
    const [acmeReply] = await listSavedReplies(db.sql, mia, 1, { prefix: "hours" });
    const [lead] = await db.sql<{ id: number }[]>`insert into leads (list_id, phone) values (201, '2145550111') returning id`;
    expect((await refusedWith(updateSavedReply(db.sql, eli, acmeReply.id, { body: "mine now" }, T0))).code).toBe("not_found");
    expect((await refusedWith(deleteSavedReply(db.sql, eli, acmeReply.id))).code).toBe("not_found");
    expect((await refusedWith(previewSavedReply(db.sql, eli, acmeReply.id, lead.id, "sms"))).code).toBe("not_found");
    // Nor is org 1's reply usable on org 2's lead by the admin: a reply serves its organization's leads.
    expect((await refusedWith(previewSavedReply(db.sql, admin, acmeReply.id, lead.id, "sms"))).code).toBe("not_found");
    expect((await listSavedReplies(db.sql, mia, 1, { prefix: "hours" }))[0].body).toBe(acmeReply.body);
  });
});

describe("the preview is the send path's merge", () => {
  test("SMS: what Twilio receives; email: the subject and HTML the SMTP server receives; a note as typed", async () => {
    const [lead] = await db.sql<{ id: number }[]>`
      insert into leads (list_id, phone, first_name, last_name, email, city) values (101, '5125550177', 'Zoë <b>', 'O''Hara & Sons', 'zoe@example.com', 'Austin') returning id`;
    const reply = await made(mia, 1, {
      name: "Welcome",
      subject: "Welcome {first_name} from {company}",
      body: "<p>Hi {full_name} in {city}, {company} here: call {phone} or {email}. {{first_name}}</p>",
    });
    const sms = await previewSavedReply(db.sql, mia, reply.id, lead.id, "sms");
    expect(sms).toEqual({ ok: true, channel: "sms", subject: reply.subject, body: "<p>Hi Zoë <b> O'Hara & Sons in Austin, Acme Roofing LLC here: call 5125550177 or zoe@example.com. {Zoë <b>}</p>" });
    const sent = await sendMessage(db.sql, mia, { leadId: lead.id, channel: "sms", body: reply.body, subject: null, operationId: "pv-sms" }, T0.getTime(), { baseUrl: "https://leadline.example" });
    expect(sent.ok).toBe(true);
    expect(twilio.requests.at(-1)!.form.Body).toBe(sms.ok ? sms.body : "");

    const email = await previewSavedReply(db.sql, mia, reply.id, lead.id, "email");
    const mailed = await sendMessage(db.sql, mia, { leadId: lead.id, channel: "email", body: reply.body, subject: reply.subject, operationId: "pv-email" }, T0.getTime(), { baseUrl: "https://leadline.example" });
    expect(mailed.ok).toBe(true);
    await smtp.waitFor(1);
    const mail = smtp.mails.at(-1)!.parsed;
    expect(email.ok && { subject: email.subject, body: email.body }).toEqual({ subject: mail.subject!, body: (mail.html as string).trim() });
    expect(email.ok && email.body).toContain("Zoë &lt;b&gt; O&#39;Hara &amp; Sons");
    const [row] = await db.sql`select subject, body from messages where operation_id = 'pv-email'`;
    expect(email.ok && { subject: email.subject, body: email.body }).toEqual({ subject: row.subject, body: row.body });

    expect(await previewSavedReply(db.sql, mia, reply.id, lead.id, "note")).toEqual({ ok: true, channel: "note", subject: reply.subject, body: reply.body });
    const smsOnly = await made(mia, 1, { name: "sms only", body: "x", channels: ["sms"] });
    expect(await previewSavedReply(db.sql, mia, smsOnly.id, lead.id, "email")).toEqual({ ok: false, reason: "not_for_channel" });
  });
});

describe("the CLI and provisioning use the same rules", () => {
  test("replies add | list | remove", async () => {
    const add = await cli("add", "--org", "2", "--name", "Missed call", "--body", "Sorry we missed you, {first_name}!", "--channels", "sms", "--json");
    expect(add.code).toBe(0);
    const created = JSON.parse(add.out);
    expect(created).toMatchObject({ org_id: 2, name: "Missed call", channels: ["sms"] });
    expect((await audits(`saved_reply:${created.id}`))[0]).toMatchObject({ action: "saved_reply.create", org_id: 2, actor_id: "cli" });
    const listed = JSON.parse((await cli("list", "--org", "2", "--json")).out);
    expect(listed.map((r: SavedReply) => r.name)).toEqual(["hours", "Missed call"]);
    expect((await cli("list", "--prefix", "miss")).out).toContain('"Missed call"');
    await expect(cli("add", "--org", "2", "--name", "missed CALL", "--body", "x")).rejects.toThrow(UsageError);
    await expect(cli("add", "--org", "2", "--name", "y", "--body", "Hi {nme}")).rejects.toThrow("unknown merge field {nme}");
    await expect(cli("add", "--org", "2", "--name", "y", "--body", "x", "--channels", "fax")).rejects.toThrow(UsageError);
    await expect(cli("add", "--org", "99", "--name", "y", "--body", "x")).rejects.toThrow("no such saved reply or organization");
    await expect(cli("add", "--name", "y", "--body", "x")).rejects.toThrow("--org is required");
    expect((await cli("remove", String(created.id))).out).toContain(`removed saved reply ${created.id}`);
    await expect(cli("remove", String(created.id))).rejects.toThrow("no such saved reply");
    await expect(cli("frobnicate")).rejects.toThrow(UsageError);
  });

  test("provisioning's saved_replies[]: created by id, updated and audited, refused with the path of what is wrong", async () => {
    const file = (replies: unknown[]) => parseProvisioning(JSON.stringify({ saved_replies: replies }));
    await applyProvisioning(db.sql, file([{ id: 500, org_id: 1, name: "Directions", body: "We are at 1 Main St, {city}." }]), { now: T0 });
    const [r] = await listSavedReplies(db.sql, mia, 1, { prefix: "directions" });
    expect(r).toMatchObject({ id: 500, org_id: 1, body: "We are at 1 Main St, {city}.", channels: ["sms", "email", "note"] });
    await applyProvisioning(db.sql, file([{ id: 500, org_id: 1, name: "Directions", body: "We are at 2 Main St." }]), { now: T0 });
    expect((await audits("saved_reply:500")).map((a) => [a.action, a.actor_id, a.details.changes ?? null])).toEqual([
      ["saved_reply.create", "provision", null],
      ["saved_reply.update", "provision", { body: { from: "We are at 1 Main St, {city}.", to: "We are at 2 Main St." } }],
    ]);
    // The identity continues after the ids a file gave.
    expect((await made(mia, 1, { name: "after provisioning", body: "x" })).id).toBeGreaterThan(500);
    expect(() => file([{ id: 501, org_id: 1, name: "x", body: "Hi {frist_name}" }])).toThrow("saved_replies[0].body: unknown merge field {frist_name}");
    expect(() => file([{ id: 501, org_id: 1, name: "x", body: "ok", extra: 1 }])).toThrow("saved_replies[0].extra: unknown field");
    expect(() => file([{ id: 501, org_id: 1, name: "x", body: "ok" }, { id: 501, org_id: 1, name: "y", body: "ok" }])).toThrow("saved_replies[1].id: duplicate 501");
    await expect(applyProvisioning(db.sql, file([{ id: 502, org_id: 77, name: "x", body: "ok" }]), { now: T0 })).rejects.toThrow("saved_replies[0].org_id: org 77 does not exist");
    await expect(applyProvisioning(db.sql, file([{ id: 503, org_id: 1, name: "HOURS", body: "ok" }]), { now: T0 })).rejects.toThrow(
      'saved_replies[0].name: org 1 already has a saved reply named "HOURS"',
    );
    expect(await db.sql`select id from saved_replies where id in (502, 503)`).toHaveLength(0);
  });
});
