// Acting on a lead (issue 29): creating one from the console is intake itself; an edit applies
// intake's field rules, the organization's statuses and the tag rules, writes only what changed,
// and audits it with a lead.updated event in the same transaction. Every read and write is
// confined to the actor's organization, tried across two. Through the real database; the event's
// documentation and delivery through the served app.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import type { Actor } from "../src/auth/actor";
import { AppError } from "../src/errors";
import { CONSOLE_SOURCE, createLead, updateLead, type LeadUpdate } from "../src/leads/edit";
import { leadConsent, setConsent } from "../src/leads/consent";
import { parseLeadInput } from "../src/leads/model";
import { intakeLead } from "../src/leads/service";
import { DEFAULT_LEAD_STATUSES, leadStatuses, setLeadStatuses } from "../src/leads/statuses";
import { leadTags, suggestTags } from "../src/leads/tags";
import { applyProvisioning } from "../src/provision/service";
import { parseProvisioning } from "../src/provision/validate";
import { call, startApp } from "./harness/app";
import { testDatabase, type TestDatabase } from "./harness/db";
import { expectEventsMatchModels } from "./harness/events";
import { seedWorld } from "./harness/factory";
import { WebhookReceiver } from "./harness/webhook-receiver";

let db: TestDatabase;
const T0 = new Date(Date.UTC(2026, 10, 28, 15, 0, 0));
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);

const user = (orgId: number | null, id = "dana"): Actor => ({ orgId, type: "user", id, agent: null, keyId: null, address: "h-addr" });
const dana = user(1, "dana"); // org 1 (Acme)
const eli = user(2, "eli"); // org 2 (Bolt)
const admin = user(null, "root");
const siteKey: Actor = { orgId: 1, type: "api_key", id: "9", agent: null, keyId: 9 };

let phone = 5125550000;
const nextPhone = () => String(phone++);

async function newLead(actor: Actor = dana, fields: Record<string, unknown> = {}): Promise<number> {
  const r = await createLead(db.sql, actor, { phone: nextPhone(), list_id: actor.orgId === 2 ? 201 : 101, first_name: "Dana", last_name: "Diaz", email: "dana@acme.example", ...fields }, null, T0);
  return r.lead_id;
}

async function events(leadId: number, type = "lead.updated") {
  return db.sql<{ payload: { type: string; timestamp: string; data: Record<string, any> }; org_id: number | null }[]>`
    select payload, org_id from outbox_events where type = ${type} and (payload->'data'->>'lead_id')::bigint = ${leadId} order by id`;
}
const audits = (target: string) =>
  db.sql<{ action: string; org_id: number | null; actor_id: string; details: any; address: string }[]>`select action, org_id, actor_id, details, address from audit_log where target = ${target} order by id`;

/** A statement's rows as a plain array (postgres.js's RowList carries its metadata too). */
const rows = async (q: Promise<readonly unknown[]>): Promise<unknown[]> => [...(await q)];

async function refusedWith(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error("expected an AppError");
}

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
});
afterAll(() => db?.drop());

describe("creating a lead from the console: intake's service", () => {
  test("a walk-in becomes a lead of the chosen list with source console, its channels, new_lead trigger, lead.created and an audit row", async () => {
    const p = nextPhone();
    const r = await createLead(db.sql, dana, { phone: `(${p.slice(0, 3)}) ${p.slice(3, 6)}-${p.slice(6)}`, list_id: "102", first_name: "Walk", last_name: "In", email: "Walk@Example.COM", consent: { sms: true } }, null, T0);
    expect(r).toEqual({ ok: true, lead_id: expect.any(Number), deduped: false });
    const [lead] = await db.sql`select list_id, org_id, phone, email, source, source_meta, created_at from leads where id = ${r.lead_id}`;
    expect(lead).toMatchObject({ list_id: 102, org_id: 1, phone: p, email: "walk@example.com", source: CONSOLE_SOURCE, source_meta: { source: "console", via: "console" } });
    expect(lead.created_at).toEqual(T0);
    const channels = await db.sql`select channel, address, consent, consent_source from lead_channels where lead_id = ${r.lead_id} order by channel`;
    expect([...channels]).toEqual([
      { channel: "email", address: "walk@example.com", consent: "none", consent_source: null },
      { channel: "sms", address: p, consent: "in", consent_source: "console" },
    ]);
    expect(await rows(db.sql`select org_id, trigger from automation_triggers where lead_id = ${r.lead_id}`)).toEqual([{ org_id: 1, trigger: "new_lead" }]);
    const [created] = await events(r.lead_id, "lead.created");
    expect(created.payload.data).toMatchObject({ lead_id: r.lead_id, list_id: 102, org_id: 1, phone: p, source: "console" });
    expect([...(await audits(`lead:${r.lead_id}`))]).toEqual([
      { action: "lead.create", org_id: 1, actor_id: "dana", details: { list_id: 102, source: "console" }, address: "h-addr" },
    ]);
  });

  test("a duplicate changes nothing and answers the existing lead", async () => {
    const p = nextPhone();
    const first = await createLead(db.sql, dana, { phone: p, list_id: 101, first_name: "Ann" }, null, T0);
    const again = await createLead(db.sql, dana, { phone: `+1 ${p}`, list_id: 101, first_name: "Someone else" }, null, at(1));
    expect(again).toEqual({ ok: true, lead_id: first.lead_id, deduped: true });
    expect((await db.sql`select first_name from leads where id = ${first.lead_id}`)[0].first_name).toBe("Ann");
    expect(await events(first.lead_id, "lead.created")).toHaveLength(1);
    expect((await audits(`lead:${first.lead_id}`)).map((a) => a.action)).toEqual(["lead.create"]);
  });

  test("intake's rules: a bad phone is refused exactly as intake refuses it; a list outside the organization is invalid_list", async () => {
    const console = await refusedWith(createLead(db.sql, dana, { phone: "512-555", list_id: 101 }, null, T0));
    const api = await refusedWith(intakeLead(db.sql, siteKey, parseLeadInput({ phone: "512-555", list_id: 101 }), null, T0));
    expect({ code: console.code, message: console.message }).toEqual({ code: api.code, message: api.message });
    expect(console.code).toBe("bad_phone");
    expect((await refusedWith(createLead(db.sql, dana, { phone: nextPhone(), list_id: 201 }, null, T0))).code).toBe("invalid_list");
    // The house's inbound list is no list of org 1's: a console user must choose one of theirs.
    expect((await refusedWith(createLead(db.sql, dana, { phone: nextPhone() }, 900, T0))).code).toBe("invalid_list");
    expect(await rows(db.sql`select 1 from leads where list_id = 201 and source = 'console'`)).toEqual([]);
  });
});

describe("editing a lead", () => {
  test("writes only what changed; lead.updated carries exactly the changed fields with their previous values, audited and on the timeline", async () => {
    const id = await newLead();
    const r = await updateLead(db.sql, dana, id, { first_name: "Dana", last_name: " Díaz-Núñez ", city: "Austin", state: "tx", status: "CONTACTED" }, at(5), "Dana D.");
    const changes = {
      last_name: { from: "Diaz", to: "Díaz-Núñez" },
      city: { from: "", to: "Austin" },
      state: { from: "", to: "TX" },
      status: { from: "NEW", to: "CONTACTED" },
    };
    expect(r).toEqual({ ok: true, lead_id: id, changes });
    const [lead] = await db.sql`select first_name, last_name, city, state, status, updated_at from leads where id = ${id}`;
    expect(lead).toEqual({ first_name: "Dana", last_name: "Díaz-Núñez", city: "Austin", state: "TX", status: "CONTACTED", updated_at: at(5) });
    const [e, ...more] = await events(id);
    expect(more).toEqual([]);
    expect(e.org_id).toBe(1);
    expect(e.payload).toEqual({
      type: "lead.updated",
      timestamp: at(5).toISOString(),
      data: { lead_id: id, org_id: 1, changes, updated_at: at(5).toISOString(), actor_type: "user", actor_id: "dana" },
    });
    const audit = (await audits(`lead:${id}`)).filter((a) => a.action === "lead.update");
    expect(audit).toEqual([{ action: "lead.update", org_id: 1, actor_id: "dana", details: { changes }, address: "h-addr" }]);
    const timeline = await db.sql`select event, label, actor, actor_role, created_at from lead_events where lead_id = ${id}`;
    expect([...timeline]).toEqual([
      { event: "lead.updated", label: "Status: New → Contacted; changed last name, city, state", actor: "Dana D.", actor_role: "user", created_at: at(5) },
    ]);
  });

  test("nothing that differs: nothing written, no event, no audit row", async () => {
    const id = await newLead();
    const before = await db.sql`select * from leads where id = ${id}`;
    const r = await updateLead(db.sql, dana, id, { first_name: "Dana", email: "DANA@acme.example", status: "NEW", tags: { remove: ["absent"] } }, at(1));
    expect(r).toEqual({ ok: true, lead_id: id, changes: {} });
    expect(await events(id)).toHaveLength(0);
    expect((await audits(`lead:${id}`)).map((a) => a.action)).toEqual(["lead.create"]);
    expect(await rows(db.sql`select * from leads where id = ${id}`)).toEqual(before);
  });

  test("intake's field rules, one validation: cut, trimmed, uppercased, numbers as text; a bad phone or email is refused, never a 500", async () => {
    const id = await newLead();
    const r = await updateLead(db.sql, dana, id, { first_name: "x".repeat(80), postal_code: 78701, address1: "  1 Main St\u0000 " }, at(1));
    expect(r.ok && r.changes).toEqual({
      first_name: { from: "Dana", to: "x".repeat(60) },
      address1: { from: "", to: "1 Main St" },
      postal_code: { from: "", to: "78701" },
    });
    const intakeBad = await refusedWith(intakeLead(db.sql, siteKey, parseLeadInput({ phone: "555-0100" }), null, T0));
    const editBad = await refusedWith(updateLead(db.sql, dana, id, { phone: "555-0100" }, at(2)));
    expect({ code: editBad.code, message: editBad.message }).toEqual({ code: intakeBad.code, message: intakeBad.message });
    for (const bad of [{ email: "not an address" }, { status: "" }, { status: 7 }, { nickname: "D" }, { tags: { add: ["a,b"] } }, { tags: { add: [""] } }, { tags: { add: "vip" } }, { tags: { add: ["x".repeat(41)] } }] as never[]) {
      expect({ bad, code: (await refusedWith(updateLead(db.sql, dana, id, bad, at(3)))).code }).toEqual({ bad, code: "invalid_input" });
    }
    // Clearing an email is not a bad email: null clears, as intake reads an absent one.
    const cleared = await updateLead(db.sql, dana, id, { email: null }, at(4));
    expect(cleared.ok && cleared.changes).toEqual({ email: { from: "dana@acme.example", to: "" } });
    expect(await rows(db.sql`select channel from lead_channels where lead_id = ${id}`)).toEqual([{ channel: "sms" }]);
    expect(await events(id)).toHaveLength(2);
  });

  test("a status is one of the organization's list: the default one, or its own once set", async () => {
    const id = await newLead(eli);
    expect(await leadStatuses(db.sql, eli, 2)).toEqual(DEFAULT_LEAD_STATUSES);
    expect((await updateLead(db.sql, eli, id, { status: "WON" }, at(1))).ok).toBe(true);
    await setLeadStatuses(db.sql, admin, 2, [{ code: "NEW", label: "Fresh" }, { code: "QUOTED", label: "Quote sent" }, { code: "BOOKED", label: "Job booked" }], at(2));
    const refused = await refusedWith(updateLead(db.sql, eli, id, { status: "LOST" }, at(3)));
    expect(refused).toMatchObject({ code: "invalid_input", message: 'status: "LOST" is not one of the organization\'s statuses' });
    const quoted = await updateLead(db.sql, eli, id, { status: "QUOTED" }, at(4));
    expect(quoted.ok && quoted.changes).toEqual({ status: { from: "WON", to: "QUOTED" } });
    const [timeline] = await db.sql`select label from lead_events where lead_id = ${id} order by id desc limit 1`;
    expect(timeline.label).toBe("Status: WON → Quote sent");
    // Org 1 keeps the default list: org 2's codes are not its.
    expect((await refusedWith(updateLead(db.sql, dana, await newLead(), { status: "QUOTED" }, at(5)))).code).toBe("invalid_input");
  });

  test("tags: trimmed, unique on the lead regardless of case, added and removed; the event carries the sets", async () => {
    const id = await newLead();
    const a = await updateLead(db.sql, dana, id, { tags: { add: ["  VIP ", "roof   leak", "vip"] } }, at(1));
    expect(a.ok && a.changes).toEqual({ tags: { from: [], to: ["roof leak", "VIP"] } });
    const b = await updateLead(db.sql, dana, id, { tags: { add: ["Vip", "Spanish"], remove: ["ROOF LEAK"] } }, at(2));
    expect(b.ok && b.changes).toEqual({ tags: { from: ["roof leak", "VIP"], to: ["Spanish", "VIP"] } });
    expect(await leadTags(db.sql, dana, id)).toEqual(["Spanish", "VIP"]);
    expect((await events(id)).map((e) => e.payload.data.changes)).toEqual([a.ok && a.changes, b.ok && b.changes]);
  });

  test("tag suggestions: the organization's tags by prefix, most used first; none of another organization's", async () => {
    const ids = [await newLead(eli), await newLead(eli), await newLead(eli)];
    await updateLead(db.sql, eli, ids[0], { tags: { add: ["warranty", "water heater", "Spanish"] } }, at(1));
    await updateLead(db.sql, eli, ids[1], { tags: { add: ["Water heater", "spanish"] } }, at(1));
    await updateLead(db.sql, eli, ids[2], { tags: { add: ["water heater"] } }, at(1));
    expect(await suggestTags(db.sql, eli, 2, "WA")).toEqual([
      { tag: "water heater", uses: 3 },
      { tag: "warranty", uses: 1 },
    ]);
    expect(await suggestTags(db.sql, eli, 2, "")).toEqual([
      { tag: "water heater", uses: 3 },
      { tag: "Spanish", uses: 2 },
      { tag: "warranty", uses: 1 },
    ]);
    await updateLead(db.sql, eli, ids[2], { tags: { remove: ["WATER HEATER"] } }, at(2));
    await db.sql`delete from leads where id = ${ids[1]}`; // a lead deleted takes its tags' counts along
    expect(await suggestTags(db.sql, eli, 2, "w")).toEqual([
      { tag: "warranty", uses: 1 },
      { tag: "water heater", uses: 1 },
    ]);
    // Org 1 sees none of them, and cannot ask for org 2's.
    expect(await suggestTags(db.sql, dana, 1, "wa")).toEqual([]);
    expect((await refusedWith(suggestTags(db.sql, dana, 2, "wa"))).code).toBe("not_found");
    expect(await suggestTags(db.sql, admin, 2, "wa")).toHaveLength(2);
  });

  test("a lead moved to another organization takes its tags' counts along", async () => {
    await db.sql`insert into orgs (id, name) values (3, 'Cove')`;
    await db.sql`insert into campaigns (id, org_id) values ('MOVING', 1)`;
    await db.sql`insert into lists (id, campaign_id) values (301, 'MOVING')`;
    const id = await newLead(dana, { list_id: 301 });
    await updateLead(db.sql, dana, id, { tags: { add: ["mover"] } }, at(1));
    expect(await suggestTags(db.sql, admin, 1, "mov")).toEqual([{ tag: "mover", uses: 1 }]);
    await db.sql`update campaigns set org_id = 3 where id = 'MOVING'`;
    expect(await suggestTags(db.sql, admin, 1, "mov")).toEqual([]);
    expect(await suggestTags(db.sql, admin, 3, "mov")).toEqual([{ tag: "mover", uses: 1 }]);
  });

  test("concurrent edits of one lead: each agent's tags are kept, every edit has its event", async () => {
    const id = await newLead();
    const tags = Array.from({ length: 12 }, (_, i) => `t${i}`);
    const results = await Promise.all(tags.map((t, i) => updateLead(db.sql, user(1, `agent${i}`), id, { tags: { add: [t] } }, at(i))));
    expect(results.every((r) => r.ok && r.changes.tags !== undefined)).toBe(true);
    expect((await leadTags(db.sql, dana, id))!.sort()).toEqual([...tags].sort());
    const evs = await events(id);
    expect(evs).toHaveLength(12);
    // Serialized on the lead's row: each event's "from" is the set the previous one left.
    const sets = evs.map((e) => e.payload.data.changes.tags);
    for (let i = 1; i < sets.length; i++) expect(sets[i].from).toEqual(sets[i - 1].to);
  });
});

describe("a phone or email change", () => {
  test("a number another lead of the list has is refused, naming that lead; one of another list is fine", async () => {
    const taken = nextPhone();
    const other = (await createLead(db.sql, dana, { phone: taken, list_id: 101 }, null, T0)).lead_id;
    const id = await newLead();
    expect(await updateLead(db.sql, dana, id, { phone: taken }, at(1))).toEqual({ ok: false, reason: "duplicate_phone", lead_id: other });
    const elsewhere = await newLead(dana, { list_id: 102 });
    const moved = await updateLead(db.sql, dana, elsewhere, { phone: `1-${taken}` }, at(2));
    expect(moved.ok && moved.changes.phone).toEqual({ from: expect.any(String), to: taken });
  });

  test("the SMS channel takes the new number without the old number's consent; an opt-out of the new number elsewhere still applies", async () => {
    const optedOutElsewhere = nextPhone();
    const other = await newLead(dana, { phone: optedOutElsewhere, list_id: 102 });
    await db.sql.begin((tx) => setConsent(tx, other, "sms", "out", { name: "STOP", source: "sms_keyword" }, T0));
    const id = await newLead(dana, { consent: true });
    expect((await leadConsent(db.sql, id)).find((c) => c.channel === "sms")!.consent).toBe("in");
    const fresh = nextPhone();
    await updateLead(db.sql, dana, id, { phone: fresh }, at(1));
    expect(await rows(db.sql`select address, consent, consent_at, consent_source from lead_channels where lead_id = ${id} and channel = 'sms'`)).toEqual([
      { address: fresh, consent: "none", consent_at: null, consent_source: "phone_changed" },
    ]);
    await updateLead(db.sql, dana, id, { phone: optedOutElsewhere }, at(2));
    expect((await leadConsent(db.sql, id)).find((c) => c.channel === "sms")!.consent).toBe("out");
  });

  test("an opted-out number or email stays on its lead: the change is refused, nothing written", async () => {
    const id = await newLead();
    await db.sql.begin((tx) => setConsent(tx, id, "sms", "out", { name: "STOP", source: "sms_keyword" }, T0));
    await db.sql.begin((tx) => setConsent(tx, id, "email", "out", { name: "x", source: "console" }, T0));
    expect(await updateLead(db.sql, dana, id, { phone: nextPhone(), first_name: "New" }, at(1))).toEqual({ ok: false, reason: "opted_out", channel: "sms" });
    expect(await updateLead(db.sql, dana, id, { email: "new@acme.example" }, at(1))).toEqual({ ok: false, reason: "opted_out", channel: "email" });
    expect((await db.sql`select first_name from leads where id = ${id}`)[0].first_name).toBe("Dana");
    expect(await events(id)).toHaveLength(0);
    // Other fields of the lead can still be edited.
    expect((await updateLead(db.sql, dana, id, { first_name: "New" }, at(2))).ok).toBe(true);
  });

  test("a phone change racing intakes of that number: one lead of the list ends with it, every time", async () => {
    for (let round = 0; round < 40; round++) {
      const target = nextPhone();
      const id = await newLead();
      // Two intakes started 0 to 9 ms after the edit, so in some rounds they land inside its
      // transaction, between its duplicate check and its commit (without intake's lock on (list,
      // phone) there, a second lead with the number appeared within a few rounds).
      const intakes = [round % 10, (round * 7) % 10].map((ms) =>
        Bun.sleep(ms).then(() => intakeLead(db.sql, siteKey, parseLeadInput({ phone: target, list_id: 101 }), null, at(1))),
      );
      const [edit, ...taken] = await Promise.all([updateLead(db.sql, dana, id, { phone: target }, at(1)), ...intakes]);
      const holders = await db.sql<{ id: number }[]>`select id from leads where list_id = 101 and phone = ${target}`;
      expect({ round, holders: holders.length }).toEqual({ round, holders: 1 });
      const holder = holders[0].id;
      expect(taken.every((t) => t.lead_id === holder)).toBe(true);
      if (edit.ok) expect(holder).toBe(id);
      else expect(edit).toEqual({ ok: false, reason: "duplicate_phone", lead_id: holder });
    }
  }, 60_000);
});

describe("lead.updated is written in the edit's transaction", () => {
  test("an edit whose transaction fails at commit leaves no event, no audit row and no change", async () => {
    const id = await newLead();
    await db.sql.unsafe(`
      create function fail_lead_updated() returns trigger language plpgsql as $$
      begin raise exception 'commit refused for the test'; end $$;
      create constraint trigger fail_lead_updated after insert on outbox_events deferrable initially deferred
        for each row when (new.type = 'lead.updated' and new.payload->'data'->'changes'->'city'->>'to' = 'Nowhere')
        execute function fail_lead_updated();`);
    try {
      await expect(updateLead(db.sql, dana, id, { city: "Nowhere", tags: { add: ["x"] }, status: "LOST" }, at(1))).rejects.toThrow("commit refused");
      expect(await events(id)).toHaveLength(0);
      expect((await audits(`lead:${id}`)).map((a) => a.action)).toEqual(["lead.create"]);
      expect((await db.sql`select city, status from leads where id = ${id}`)[0]).toEqual({ city: "", status: "NEW" });
      expect(await leadTags(db.sql, dana, id)).toEqual([]);
      expect(await rows(db.sql`select 1 from lead_events where lead_id = ${id}`)).toEqual([]);
      // The same edit without the failure commits all of it together.
      const ok = await updateLead(db.sql, dana, id, { city: "Somewhere", tags: { add: ["x"] }, status: "LOST" }, at(2));
      expect(ok.ok).toBe(true);
      expect(await events(id)).toHaveLength(1);
    } finally {
      await db.sql.unsafe(`drop trigger fail_lead_updated on outbox_events; drop function fail_lead_updated();`);
    }
  });
});

describe("confinement across two organizations", () => {
  test("another organization's lead is not_found to edit, and stays as it was", async () => {
    const acme = await newLead(dana);
    const bolt = await newLead(eli);
    for (const [actor, id] of [[eli, acme], [dana, bolt]] as const) {
      expect((await refusedWith(updateLead(db.sql, actor, id, { first_name: "Mallory", tags: { add: ["x"] } }, at(1)))).code).toBe("not_found");
      expect(await leadTags(db.sql, actor, id)).toBeNull();
    }
    expect((await db.sql`select first_name from leads where id in ${db.sql([acme, bolt])}`).map((r) => r.first_name)).toEqual(["Dana", "Dana"]);
    expect([...(await events(acme)), ...(await events(bolt))]).toEqual([]);
  });

  test("an admin edits any organization's lead; the audit row and the event are that organization's", async () => {
    const id = await newLead(eli);
    const r = await updateLead(db.sql, admin, id, { status: "QUOTED" }, at(1));
    expect(r.ok).toBe(true);
    const [e] = await events(id);
    expect(e.org_id).toBe(2);
    expect((await audits(`lead:${id}`)).find((a) => a.action === "lead.update")).toMatchObject({ org_id: 2, actor_id: "root" });
  });

  test("statuses: an organization reads and sets only its own list", async () => {
    expect((await refusedWith(leadStatuses(db.sql, dana, 2))).code).toBe("not_found");
    expect((await refusedWith(setLeadStatuses(db.sql, dana, 2, [{ code: "NEW", label: "New" }], at(1)))).code).toBe("not_found");
    expect((await leadStatuses(db.sql, eli, 2)).map((s) => s.code)).toEqual(["NEW", "QUOTED", "BOOKED"]);
  });
});

describe("statuses", () => {
  test("a list is validated as one: codes, labels, NEW; its change audited with the previous and new lists", async () => {
    for (const [list, message] of [
      [[{ code: "CONTACTED", label: "Contacted" }], "statuses: must include NEW, the status every lead starts with"],
      [[{ code: "NEW", label: "New" }, { code: "NEW", label: "Again" }], 'statuses[1].code: duplicate "NEW"'],
      [[{ code: "NEW", label: "New" }, { code: "OLD", label: "new" }], 'statuses[1].label: duplicate "new"'],
      [[{ code: "new", label: "New" }], "statuses[0].code:"],
      [[], "statuses:"],
    ] as const) {
      const err = await refusedWith(setLeadStatuses(db.sql, dana, 1, list as never, at(1)));
      expect({ code: err.code, message: err.message.startsWith(message) }).toEqual({ code: "invalid_input", message: true });
    }
    const custom = [{ code: "NEW", label: "New" }, { code: "SOLD", label: "Sold" }];
    expect(await setLeadStatuses(db.sql, dana, 1, custom, at(2))).toEqual({ changed: true });
    expect(await setLeadStatuses(db.sql, dana, 1, custom, at(3))).toEqual({ changed: false });
    expect(await setLeadStatuses(db.sql, dana, 1, null, at(4))).toEqual({ changed: true });
    expect(await leadStatuses(db.sql, dana, 1)).toEqual(DEFAULT_LEAD_STATUSES);
    expect((await audits("org:1")).filter((a) => a.action === "lead_statuses.update").map((a) => a.details)).toEqual([
      { from: DEFAULT_LEAD_STATUSES, to: custom },
      { from: custom, to: DEFAULT_LEAD_STATUSES },
    ]);
  });

  test("provisioning sets orgs[].statuses through the same rules: given replaces, absent keeps, null restores the default", async () => {
    const org = (statuses?: unknown) => JSON.stringify({ orgs: [{ id: 2, name: "Bolt", ...(statuses === undefined ? {} : { statuses }) }] });
    const list = [{ code: "NEW", label: "New" }, { code: "ESTIMATE", label: "Estimate booked" }];
    await applyProvisioning(db.sql, parseProvisioning(org(list)), { now: at(1) });
    expect(await leadStatuses(db.sql, eli, 2)).toEqual(list);
    await applyProvisioning(db.sql, parseProvisioning(org()), { now: at(2) });
    expect(await leadStatuses(db.sql, eli, 2)).toEqual(list);
    expect(() => parseProvisioning(org([{ code: "ESTIMATE", label: "Estimate" }]))).toThrow("orgs[0].statuses: must include NEW");
    expect(() => parseProvisioning(org([{ code: "NEW", label: "New", color: "red" }]))).toThrow("orgs[0].statuses[0].color: unknown field");
    await applyProvisioning(db.sql, parseProvisioning(org(null)), { now: at(3) });
    expect(await leadStatuses(db.sql, eli, 2)).toEqual(DEFAULT_LEAD_STATUSES);
    const rows = (await audits("org:2")).filter((a) => a.action === "lead_statuses.update" && a.actor_id === "provision");
    expect(rows.map((a) => a.details.to)).toEqual([list, DEFAULT_LEAD_STATUSES]);
  });
});

describe("lead.updated on the wire", () => {
  test("/openapi.json documents it; a provisioned webhook subscribed to it receives it signed", async () => {
    const rx = await WebhookReceiver.start();
    const secret = "whsec_" + Buffer.from("lead-edit test signing key 32 b").toString("base64");
    const app = await startApp(db.url, { WEBHOOK_ALLOW_PRIVATE: "true" });
    try {
      const doc = (await call(app.base, "/openapi.json")).body;
      const hook = doc.webhooks["lead.updated"].post;
      const schema = hook.requestBody.content["application/json"].schema;
      expect(Object.keys(schema.properties.data.properties).sort()).toEqual(["actor_id", "actor_type", "changes", "lead_id", "org_id", "updated_at"]);
      expect(Object.keys(schema.properties.data.properties.changes.properties)).toContain("status");
      await applyProvisioning(db.sql, parseProvisioning(JSON.stringify({ webhooks: [{ id: 50, org_id: 1, url: rx.url("/lu"), secret, events: ["lead.updated"] }] })), { now: T0 });
      const id = await newLead();
      await updateLead(db.sql, dana, id, { status: "QUALIFIED" }, at(1));
      const mine = () => rx.at("/lu").filter((r) => JSON.parse(r.body).data.lead_id === id);
      for (let i = 0; i < 300 && mine().length === 0; i++) await Bun.sleep(50);
      const [got] = mine();
      const body = new Webhook(secret.slice(6)).verify(got.body, got.headers) as { type: string; data: Record<string, unknown> };
      expect(body).toMatchObject({ type: "lead.updated", data: { lead_id: id, changes: { status: { from: "NEW", to: "QUALIFIED" } } } });
    } finally {
      await app.stop();
      await rx.stop();
    }
  }, 60_000);

  test("every event written matches its model", () => expectEventsMatchModels(db.sql, ["lead.created", "lead.updated"]));
});

// Type check of the refusal shape the console renders.
export type _Refusals = Extract<LeadUpdate, { ok: false }>["reason"];
