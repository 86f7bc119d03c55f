// An organization's do-not-contact list (issue 31; src/leads/dnc.ts) through the served app, with
// a fake Twilio and an SMTP server on 127.0.0.1 and the clock passed in: the send path refuses a
// listed address `do_not_contact` (the API, an automation, a send queued by quiet hours), the
// hopper never takes a listed phone, the CLI and provisioning add with their source, audited, and
// one organization's list never touches another's.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import type { Io } from "../src/args";
import { UsageError } from "../src/errors";
import { dncCommand } from "../src/leads/dnc-command";
import { dncStatus } from "../src/leads/dnc";
import { applyProvisioning } from "../src/provision/service";
import { parseProvisioning } from "../src/provision/validate";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeKey, seedWorld } from "./harness/factory";
import { startFakeSmtp, type FakeSmtp } from "./harness/fake-smtp";
import { startFakeTwilio, type FakeTwilio } from "./harness/fake-twilio";

let db: TestDatabase;
let app: TestApp;
let twilio: FakeTwilio;
let smtp: FakeSmtp;
// 2026-01-15 12:00 in Chicago (18:00Z): outside 21:00–08:00 quiet hours everywhere in the US.
const DAY = Date.UTC(2026, 0, 15, 18);
// 2026-01-16 04:00Z: 22:00 in Chicago, inside quiet hours.
const NIGHT = Date.UTC(2026, 0, 16, 4);
const clock = new ManualClock(DAY);
let acme: string;
let bolt: string;
let leadsKey: string;

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  twilio = await startFakeTwilio();
  smtp = await startFakeSmtp();
  app = await startApp(db.url, { BASE_URL: "https://leadline.example" }, { clock });
  acme = (await makeKey(db.sql, { scopes: ["messages:write"], org: 1 })).key;
  bolt = (await makeKey(db.sql, { scopes: ["messages:write"], org: 2 })).key;
  leadsKey = (await makeKey(db.sql, { scopes: ["leads:write"], org: 1 })).key;
});
afterAll(async () => {
  await app?.stop();
  await twilio?.stop();
  await smtp?.stop();
  await db?.drop();
});

beforeEach(async () => {
  clock.set(DAY);
  twilio.reset();
  smtp.reset();
  for (const org of [1, 2]) {
    await db.sql`
      update orgs set timezone = 'America/Chicago', quiet_start = '21:00', quiet_end = '08:00', consent = 'implied',
        sms = ${db.sql.json({ base_url: twilio.url, account_sid: `AC${org}`, auth_token: `token-${org}`, from: `51255501${org}0` })},
        email = ${db.sql.json({ smtp_url: smtp.url(), from: "Shop <hello@shop.example>" })}
      where id = ${org}`;
    await db.sql`
      insert into org_billing (org_id, status, subscription, credits, sms_cost, email_cost)
      values (${org}, 'active', 'active', 100, 0.01, 0.001)
      on conflict (org_id) do update set status = 'active', subscription = 'active', credits = 100`;
  }
  await db.sql`update automations set active = false`;
});

let seq = 0;
const newPhone = () => `512557${String(++seq).padStart(4, "0")}`;

async function lead(o: { list?: number; phone?: string; email?: string; state?: string } = {}) {
  const [row] = await db.sql<{ id: number }[]>`
    insert into leads (list_id, phone, first_name, last_name, email, state)
    values (${o.list ?? 101}, ${o.phone ?? newPhone()}, 'Dana', 'Diaz', ${o.email ?? `dana${++seq}@example.com`}, ${o.state ?? "TX"})
    returning id`;
  return row.id;
}

let op = 0;
const send = (key: string, leadId: number, channel: "sms" | "email" = "sms") =>
  call(app.base, "/hooks/api_v1.php?r=messages", { method: "POST", key, json: { lead_id: leadId, channel, body: "Hi {first_name}", subject: "Hello", operation_id: `dnc-${++op}` } });

/** An Io that keeps what a command prints. */
function captured(): Io & { text: () => string } {
  let out = "";
  return {
    out: (t) => void (out += t),
    err: (t) => void (out += t),
    readInput: async () => "",
    flush: async () => {},
    text: () => out,
  };
}
const cli = async (...args: string[]) => {
  const io = captured();
  await dncCommand(db.sql, args, io, clock);
  return io.text();
};

const audits = (action: string) => db.sql`select org_id, actor_type, actor_id, action, target, details from audit_log where action = ${action} order by id`;

describe("the send path refuses a listed address", () => {
  test("an API send to a listed phone or email is 200 do_not_contact: nothing recorded, charged or sent; the rest of the lead's channels still go", async () => {
    const phone = newPhone();
    const id = await lead({ phone, email: "listed@example.com" });
    await cli("add", "--org", "1", "--phone", `+1 (${phone.slice(0, 3)}) ${phone.slice(3, 6)}-${phone.slice(6)}`, "--note", "asked on a call");
    const refused = await send(acme, id, "sms");
    expect(refused.status).toBe(200);
    expect(refused.body).toEqual({ ok: false, message_id: null, reason: "do_not_contact" });
    expect(twilio.requests.length).toBe(0);
    expect((await db.sql`select count(*)::int as n from messages where lead_id = ${id}`)[0].n).toBe(0);
    expect(Number((await db.sql`select credits from org_billing where org_id = 1`)[0].credits)).toBe(100);
    // Email to the same lead still goes: only the phone is listed.
    expect((await send(acme, id, "email")).body).toMatchObject({ ok: true });
    await smtp.waitFor(1);
    await cli("add", "--org", "1", "--email", "LISTED@Example.com");
    expect((await send(acme, id, "email")).body).toEqual({ ok: false, message_id: null, reason: "do_not_contact" });
    expect(smtp.mails.length).toBe(1);
    // Off the list again, it sends.
    await cli("remove", "--org", "1", "--phone", phone);
    expect((await send(acme, id, "sms")).body).toMatchObject({ ok: true, message_id: expect.any(Number) });
  });

  test("a listed address is refused even after an opt-in; the refusal wins over the organization's consent mode", async () => {
    const phone = newPhone();
    const id = await lead({ phone });
    await db.sql`insert into lead_channels (lead_id, channel, address, consent, consent_at, consent_source) values (${id}, 'sms', ${phone}, 'in', now(), 'test')`;
    await db.sql`update orgs set consent = 'explicit' where id = 1`;
    await cli("add", "--org", "1", "--phone", phone);
    expect((await send(acme, id)).body).toEqual({ ok: false, message_id: null, reason: "do_not_contact" });
  });

  test("an automation's send to a listed phone is blocked do_not_contact and texts nobody", async () => {
    const file = parseProvisioning(JSON.stringify({ automations: [{ id: 31, org_id: 1, trigger: "new_lead", channel: "sms", body: "Thanks {first_name}!", sources: ["web"] }] }));
    await applyProvisioning(db.sql, file);
    const listedPhone = newPhone();
    await cli("add", "--org", "1", "--phone", listedPhone);
    const intake = (phone: string) =>
      call(app.base, "/hooks/lead_intake.php", { method: "POST", key: leadsKey, json: { phone, list_id: 101, first_name: "Al", source: "web" } });
    const listed = (await intake(listedPhone)).body.lead_id;
    const other = (await intake(newPhone())).body.lead_id;
    const settled = async () => {
      const end = Date.now() + 10_000;
      for (;;) {
        const runs = await db.sql`select lead_id, status, reason from automation_runs where automation_id = 31 and lead_id in (${listed}, ${other}) order by lead_id`;
        if (runs.length === 2 && runs.every((r) => r.status !== "pending")) return runs;
        if (Date.now() > end) throw new Error(`runs not settled: ${JSON.stringify(runs)}`);
        await Bun.sleep(25);
      }
    };
    const runs = await settled();
    expect(runs.find((r) => r.lead_id === listed)).toMatchObject({ status: "blocked", reason: "do_not_contact" });
    expect(runs.find((r) => r.lead_id === other)).toMatchObject({ status: "sent" });
    expect(twilio.requests.map((r) => r.form.To)).toEqual([expect.stringContaining((await db.sql`select phone from leads where id = ${other}`)[0].phone)]);
  });

  test("a send queued by quiet hours whose address is listed meanwhile fails do_not_contact when its time comes", async () => {
    const phone = newPhone();
    const id = await lead({ phone });
    clock.set(NIGHT);
    const queued = await send(acme, id);
    // Read before any matcher sees the body (bun's toMatchObject writes its matchers into it).
    const { message_id: messageId, defer_until: deferUntil } = queued.body;
    expect(typeof deferUntil).toBe("number");
    await cli("add", "--org", "1", "--phone", phone);
    clock.set(deferUntil * 1000 + 1000);
    const end = Date.now() + 10_000;
    let row: { status: string; error: string } | undefined;
    while (Date.now() < end) {
      [row] = await db.sql<{ status: string; error: string }[]>`select status, error from messages where id = ${messageId}`;
      if (row.status !== "queued") break;
      await Bun.sleep(25);
    }
    expect(row).toEqual({ status: "failed", error: "do_not_contact" });
    expect(twilio.requests.length).toBe(0);
  });
});

describe("the hopper", () => {
  test("never takes a listed phone; listing a phone takes its leads out of it", async () => {
    const listedPhone = newPhone();
    await cli("add", "--org", "1", "--phone", listedPhone);
    const intake = (phone: string) => call(app.base, "/hooks/lead_intake.php", { method: "POST", key: leadsKey, json: { phone, list_id: 101, hopper: true } });
    const listed = (await intake(listedPhone)).body.lead_id;
    const laterPhone = newPhone();
    const later = (await intake(laterPhone)).body.lead_id;
    const inHopper = async (id: number) => (await db.sql`select count(*)::int as n from hopper where lead_id = ${id}`)[0].n;
    expect(await inHopper(listed)).toBe(0);
    expect(await inHopper(later)).toBe(1);
    // The lead itself is created as usual (the contract's intake is unchanged).
    expect((await db.sql`select phone from leads where id = ${listed}`)[0].phone).toBe(listedPhone);
    await cli("add", "--org", "1", "--phone", laterPhone);
    expect(await inHopper(later)).toBe(0);
    // Another organization's list does not keep a lead out of this one's hopper.
    const boltPhone = newPhone();
    await cli("add", "--org", "2", "--phone", boltPhone);
    expect(await inHopper((await intake(boltPhone)).body.lead_id)).toBe(1);
  });
});

describe("adding and removing, with source and audit", () => {
  test("the CLI adds, lists and removes, normalized, each change audited with its source; an address listed twice keeps its first entry", async () => {
    clock.set(Date.UTC(2026, 0, 20, 15));
    expect(await cli("add", "--org", "2", "--phone", "1-512-555-7001", "--note", "  wrote   in ")).toContain("added phone 5125557001");
    expect(await cli("add", "--org", "2", "--phone", "5125557001", "--note", "again")).toContain("already on");
    expect(await cli("add", "--org", "2", "--email", "Eve@Example.COM")).toContain("added email eve@example.com");
    const listed = JSON.parse(await cli("list", "--org", "2", "--json"));
    expect(listed).toEqual(
      expect.arrayContaining([
        { kind: "phone", address: "5125557001", source: "cli", note: "wrote in", added_at: "2026-01-20T15:00:00.000Z" },
        { kind: "email", address: "eve@example.com", source: "cli", note: "", added_at: "2026-01-20T15:00:00.000Z" },
      ]),
    );
    const table = await cli("list", "--org", "2");
    expect(table).toContain("KIND");
    expect(table).toMatch(/phone\s+5125557001\s+cli\s+2026-01-20T15:00:00Z\s+"wrote in"/);
    expect(await cli("remove", "--org", "2", "--email", "eve@example.com")).toContain("removed");
    expect(await cli("remove", "--org", "2", "--email", "eve@example.com")).toContain("is not on");
    const added = (await audits("dnc.add")).filter((a) => a.target === "dnc:phone:5125557001" && a.org_id === 2);
    expect(added).toEqual([{ org_id: 2, actor_type: "operator", actor_id: "cli", action: "dnc.add", target: "dnc:phone:5125557001", details: { source: "cli", note: "wrote in" } }]);
    expect((await audits("dnc.remove")).filter((a) => a.target === "dnc:email:eve@example.com")).toEqual([
      { org_id: 2, actor_type: "operator", actor_id: "cli", action: "dnc.remove", target: "dnc:email:eve@example.com", details: { added_by: "cli" } },
    ]);
  });

  test("racing additions of one address make one entry and one audit row", async () => {
    const phone = newPhone();
    const outs = await Promise.all(Array.from({ length: 8 }, (_, i) => cli("add", "--org", "1", "--phone", phone, "--note", `try ${i}`)));
    expect(outs.filter((o) => o.startsWith("added")).length).toBe(1);
    expect((await db.sql`select count(*)::int as n from do_not_contact where org_id = 1 and address = ${phone}`)[0].n).toBe(1);
    expect((await audits("dnc.add")).filter((a) => a.target === `dnc:phone:${phone}`).length).toBe(1);
  });

  test("the CLI refuses bad input with usage errors and an unknown organization with an error, changing nothing", async () => {
    const before = (await db.sql`select count(*)::int as n from do_not_contact`)[0].n;
    for (const args of [
      ["add", "--phone", "5125550000"],
      ["add", "--org", "1"],
      ["add", "--org", "1", "--phone", "5125550000", "--email", "a@b.co"],
      ["add", "--org", "1", "--phone", "555-0100"],
      ["add", "--org", "1", "--email", "not an address"],
      ["add", "--org", "0", "--phone", "5125550000"],
      ["add", "--org", "1", "--phone", "5125550000", "--note", "x".repeat(501)],
      ["list"],
      ["purge", "--org", "1"],
      [],
    ]) {
      await expect(cli(...args)).rejects.toBeInstanceOf(UsageError);
    }
    await expect(cli("add", "--org", "999", "--phone", "5125550000")).rejects.toThrow("organization 999 does not exist");
    expect((await db.sql`select count(*)::int as n from do_not_contact`)[0].n).toBe(before);
  });

  test("provisioning's do_not_contact section adds with source provision, audited, and applying it again changes nothing", async () => {
    const text = JSON.stringify({
      do_not_contact: [
        { org_id: 1, phone: "(512) 555-7100", note: "from the old CRM" },
        { org_id: 1, email: "Old@Example.com" },
        { org_id: 2, phone: "5125557100" },
      ],
    });
    const first = await applyProvisioning(db.sql, parseProvisioning(text), { now: new Date(DAY) });
    expect(first.counts.do_not_contact).toEqual({ created: 3, updated: 0, unchanged: 0 });
    const again = await applyProvisioning(db.sql, parseProvisioning(text), { now: new Date(DAY + 1000) });
    expect(again.counts.do_not_contact).toEqual({ created: 0, updated: 0, unchanged: 3 });
    expect([...(await db.sql`select org_id, kind, address, source, note, added_at from do_not_contact where source = 'provision' order by org_id, kind`)]).toEqual([
      { org_id: 1, kind: "email", address: "old@example.com", source: "provision", note: "", added_at: new Date(DAY) },
      { org_id: 1, kind: "phone", address: "5125557100", source: "provision", note: "from the old CRM", added_at: new Date(DAY) },
      { org_id: 2, kind: "phone", address: "5125557100", source: "provision", note: "", added_at: new Date(DAY) },
    ]);
    const rows = (await audits("dnc.add")).filter((a) => a.actor_id === "provision");
    expect(rows.length).toBe(3);
    expect(rows[0]).toMatchObject({ actor_type: "operator", details: { source: "provision" } });
  });

  test("provisioning rejects an entry without exactly one usable address, or of an unknown organization, by its path", async () => {
    const problems = (file: unknown) => {
      try {
        parseProvisioning(JSON.stringify(file));
        return [];
      } catch (err) {
        return (err as { problems: string[] }).problems;
      }
    };
    expect(
      problems({
        do_not_contact: [
          { org_id: 1 },
          { org_id: 1, phone: "5125550100", email: "a@b.co" },
          { org_id: 1, phone: "555-0100" },
          { org_id: 1, email: "nope" },
          { org_id: 1, phone: "5125550100", reason: "x" },
          { phone: "5125550100" },
        ],
      }),
    ).toEqual([
      "do_not_contact[4].reason: unknown field",
      "do_not_contact[5].org_id: required",
      "do_not_contact[0]: give one of phone and email",
      "do_not_contact[1]: give one of phone and email",
      "do_not_contact[2].phone: expected a phone number of at least 10 digits",
      "do_not_contact[3].email: expected an email address",
    ]);
    await expect(applyProvisioning(db.sql, parseProvisioning(JSON.stringify({ do_not_contact: [{ org_id: 77, phone: "5125550100" }] })))).rejects.toThrow(
      "do_not_contact[0].org_id: org 77 does not exist",
    );
  });
});

describe("tenant confinement", () => {
  test("one organization's list refuses only its own sends; dncStatus reads only within the actor's organization", async () => {
    const phone = newPhone();
    const email = `shared${seq}@example.com`;
    const acmeLead = await lead({ list: 101, phone, email });
    const boltLead = await lead({ list: 201, phone, email });
    await cli("add", "--org", "1", "--phone", phone);
    await cli("add", "--org", "1", "--email", email);
    expect((await send(acme, acmeLead)).body.reason).toBe("do_not_contact");
    expect((await send(acme, acmeLead, "email")).body.reason).toBe("do_not_contact");
    expect((await send(bolt, boltLead)).body).toMatchObject({ ok: true });
    expect((await send(bolt, boltLead, "email")).body).toMatchObject({ ok: true });
    // A key of one organization cannot send to the other's lead at all (404), listed or not.
    expect((await send(bolt, acmeLead)).status).toBe(404);
    const acmeStatus = await dncStatus(db.sql, { orgId: 1 }, acmeLead);
    expect(acmeStatus).toMatchObject({ phone: { org_id: 1, kind: "phone", address: phone, source: "cli" }, email: { kind: "email", address: email } });
    expect(await dncStatus(db.sql, { orgId: 2 }, boltLead)).toEqual({ phone: null, email: null });
    // Another organization's lead is the same as a missing one.
    expect(await dncStatus(db.sql, { orgId: 2 }, acmeLead)).toBeNull();
    expect(await dncStatus(db.sql, { orgId: 2 }, 999_999_999)).toBeNull();
    // The platform reads any lead, against the lead's own organization's list.
    expect((await dncStatus(db.sql, { orgId: null }, boltLead))!.phone).toBeNull();
  });
});
