// The booking service straight against PostgreSQL (no HTTP): slots, book, reschedule, leads and
// events written with them, tokens, and the capacity rule under real races.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { connect, type Sql } from "../src/db/client";
import { bookingService, type BookingService } from "../src/booking/service";
import { conversationJson } from "../src/conversations/queries";
import { testDatabase, type TestDatabase } from "./harness/db";
import { makeLead, seedWorld } from "./harness/factory";
import { expectEventsMatchModels } from "./harness/events";

let db: TestDatabase;
// Monday Nov 23 2026, 06:00 in Chicago.
const T0 = Date.parse("2026-11-23T12:00:00Z");
const clock = { t: T0, now() { return this.t; } };
let svc: BookingService;
const BASE = "https://book.example";

const WEEKDAYS = { mon: [["09:00", "17:00"]], tue: [["09:00", "12:00"], ["13:00", "17:00"]], wed: [["09:00", "17:00"]], thu: [["09:00", "17:00"]], fri: [["09:00", "17:00"]] };

async function makeCalendar(
  sql: Sql,
  c: { id: number; slug: string; org?: number | null; name?: string; tz?: string; capacity?: number; notice?: number; horizon?: number; slot?: number; hours?: unknown },
) {
  await sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours)
            values (${c.id}, ${c.org === undefined ? 1 : c.org}, ${c.name ?? "Estimates"}, ${c.tz ?? "America/Chicago"}, ${c.slot ?? 30},
                    ${c.capacity ?? 1}, ${c.notice ?? 60}, ${c.horizon ?? 14}, ${sql.json((c.hours ?? WEEKDAYS) as never)})`;
  await sql`insert into calendar_links (slug, calendar_id) values (${c.slug}, ${c.id})`;
}

/** Mon Nov 23 2026 at hh:mm Chicago (CST, UTC-6), as epoch seconds. */
const mon = (hh: number, mm = 0) => Date.UTC(2026, 10, 23, hh + 6, mm) / 1000;
const tue = (hh: number, mm = 0) => mon(hh, mm) + 86400;

let phoneSeq = 0;
const person = (extra: Record<string, unknown> = {}) => ({
  name: "Jane Public",
  phone: `(512) 555-${String(1000 + ++phoneSeq).slice(-4)}`,
  email: "Jane@Example.com",
  ...extra,
});

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await makeCalendar(db.sql, { id: 1, slug: "acme-estimate" });
  await makeCalendar(db.sql, { id: 2, slug: "acme-crew", name: "Crew visit", capacity: 3 });
  await makeCalendar(db.sql, { id: 3, slug: "house-calls", org: null, name: "House calls", tz: "Asia/Kolkata", notice: 0 });
  svc = bookingService(db.sql, clock, { baseUrl: BASE, inboundListId: null });
});
afterAll(async () => {
  await db?.drop();
});
beforeEach(() => {
  clock.t = T0;
});

describe("slots", () => {
  test("the contract's fields, in the calendar's zone, after the notice", async () => {
    const r = await svc.slots({ s: "acme-estimate" });
    expect(Object.keys(r).sort()).toEqual(["name", "ok", "slots", "tz"]);
    if (!r.ok) throw new Error("expected slots");
    expect(r.tz).toBe("America/Chicago");
    expect(r.name).toBe("Estimates");
    expect(Object.keys(r.slots[0]).sort()).toEqual(["day", "dayKey", "epoch", "label", "remaining", "time"]);
    expect(r.slots[0]).toEqual({
      epoch: mon(9), label: "Monday, November 23, 2026 at 9:00 AM CST", dayKey: "2026-11-23", day: "Monday, November 23", time: "9:00 AM", remaining: 1,
    });
    // Weekdays only, 16 slots a day (Tuesday 14), 14 days from Monday: 10 weekdays.
    expect(r.slots).toHaveLength(8 * 16 + 2 * 14);
    expect(new Set(r.slots.map((s) => s.dayKey)).size).toBe(10);
  });

  test("slug or s, any case; unknown or malformed links answer unknown_link with empty slots", async () => {
    expect((await svc.slots({ slug: "ACME-Estimate" })).ok).toBe(true);
    for (const fields of [{ s: "nope" }, {}, { s: "" }, { s: "a/b" }, { s: ["acme-estimate"] }, { slug: { x: 1 } }, { s: "x".repeat(65) }]) {
      expect(await svc.slots(fields)).toEqual({ ok: false, error: "unknown_link", slots: [] });
    }
  });

  test("the JSON text answered is exactly the value's JSON (with seats taken, tokens, unknown links)", async () => {
    const text = (t: string | Uint8Array) => (typeof t === "string" ? t : new TextDecoder().decode(t));
    const b = await svc.book({ slug: "acme-crew", epoch: tue(11), ...person() });
    if (!b.ok) throw new Error(JSON.stringify(b));
    for (const fields of [{ s: "acme-estimate" }, { s: "acme-crew" }, { s: "acme-crew", r: b.token }, { s: "acme-estimate", r: "junk" }, { s: "nope" }, { s: "house-calls" }]) {
      expect(JSON.parse(text(await svc.slotsJson(fields)))).toEqual(JSON.parse(JSON.stringify(await svc.slots(fields))));
    }
    const crew = JSON.parse(text(await svc.slotsJson({ s: "acme-crew" })));
    expect(crew.slots.find((x: { epoch: number }) => x.epoch === tue(11)).remaining).toBe(2);
  });

  test("a change of the calendar's hours shows on the next read", async () => {
    await makeCalendar(db.sql, { id: 40, slug: "changing", hours: { mon: [["09:00", "10:00"]] }, horizon: 1 });
    expect((await svc.slots({ s: "changing" })).slots).toHaveLength(2);
    await db.sql`update calendars set hours = ${db.sql.json({ mon: [["09:00", "11:00"]] })} where id = 40`;
    expect((await svc.slots({ s: "changing" })).slots).toHaveLength(4);
    await db.sql`update calendars set capacity = 2 where id = 40`;
    expect((await svc.slots({ s: "changing" })).slots[0].remaining).toBe(2);
  });
});

describe("book", () => {
  test("answers the contract's fields plus token and reschedule_url; the token is stored only as a hash", async () => {
    const r = await svc.book({ slug: "acme-estimate", epoch: mon(10), ...person() });
    if (!r.ok) throw new Error(JSON.stringify(r));
    expect(Object.keys(r).sort()).toEqual(["appt_id", "label", "ok", "reschedule_url", "token"]);
    expect(r.label).toBe("Monday, November 23, 2026 at 10:00 AM CST");
    expect(r.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(r.reschedule_url).toBe(`${BASE}/book/acme-estimate?r=${r.token}`);
    const [row] = await db.sql`select *, token_hash = ${createHash("sha256").update(Buffer.from(r.token, "base64url")).digest()} as hash_ok
                               from appointments where id = ${r.appt_id}`;
    expect(row.hash_ok).toBe(true);
    expect(row.status).toBe("pending");
    expect(row.slot_epoch).toBe(mon(10));
    expect(row.email).toBe("jane@example.com");
    // Nothing of the token is stored as it is: neither its text nor any 8 of its bytes in a row.
    const raw = Buffer.from(r.token, "base64url");
    const [full] = await db.sql`select * from appointments where id = ${r.appt_id}`;
    expect(Buffer.from(full.token_selector).equals(createHash("sha256").update(raw.subarray(0, 16)).digest())).toBe(true);
    for (const v of Object.values(full)) {
      const bytes = Buffer.isBuffer(v) || v instanceof Uint8Array ? Buffer.from(v) : Buffer.from(String(v));
      expect(bytes.includes(r.token)).toBe(false);
      for (let i = 0; i + 8 <= raw.length; i += 8) expect(bytes.includes(raw.subarray(i, i + 8))).toBe(false);
    }
    // The slot is gone for the next visitor.
    const after = await svc.slots({ s: "acme-estimate" });
    expect(after.slots.some((s) => s.epoch === mon(10))).toBe(false);
  });

  test("every validation failure is a value with a clear code", async () => {
    const ok = { slug: "acme-estimate", epoch: mon(11), ...person() };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...ok, slug: "nope" }, "unknown_link"],
      [{ slug: "nope" }, "unknown_link"],
      [{ ...ok, slug: undefined }, "unknown_link"],
      [{ ...ok, epoch: undefined }, "bad_epoch"],
      [{ ...ok, epoch: "soon" }, "bad_epoch"],
      [{ ...ok, epoch: mon(11) + 0.5 }, "bad_epoch"],
      [{ ...ok, epoch: -mon(11) }, "bad_epoch"],
      [{ ...ok, epoch: [mon(11)] }, "bad_epoch"],
      [{ ...ok, epoch: T0 / 1000 - 60 }, "bad_epoch"],
      [{ ...ok, epoch: T0 / 1000 }, "bad_epoch"],
      [{ ...ok, epoch: 1e300 }, "bad_epoch"],
      [{ ...ok, name: undefined }, "name_required"],
      [{ ...ok, name: "   " }, "name_required"],
      [{ ...ok, name: { first: "Jane" } }, "name_required"],
      [{ ...ok, phone: undefined }, "phone_required"],
      [{ ...ok, phone: "" }, "phone_required"],
      [{ ...ok, phone: "555-1234" }, "bad_phone"],
      [{ ...ok, epoch: mon(11) + 60 }, "slot_unavailable"], // off the grid
      [{ ...ok, epoch: mon(6) + 86400 * 5 }, "slot_unavailable"], // Saturday
      [{ ...ok, epoch: mon(6, 30) }, "slot_unavailable"], // before hours
      [{ ...ok, epoch: mon(9) + 86400 * 14 }, "slot_unavailable"], // beyond the horizon
      [{ ...ok, epoch: mon(11) + 86400 * 1 + 3600 * 1 }, "slot_unavailable"], // Tuesday 12:00, the lunch gap
    ];
    for (const [fields, error] of cases) expect([fields, await svc.book(fields)]).toEqual([fields, { ok: false, error }]);
    clock.t = mon(9, 30) * 1000; // 9:30: 10:00 is within the hour of notice
    expect(await svc.book({ ...ok, epoch: mon(10) })).toEqual({ ok: false, error: "slot_unavailable" });
    expect(await svc.book({ ...ok, epoch: mon(10, 30) })).toMatchObject({ ok: true });
    expect(await db.sql`select 1 from appointments where slot_epoch = ${mon(11)}`).toHaveLength(0);
  });

  test("an invalid email is silently emptied; JSON numbers and digit strings are both epochs", async () => {
    const r = await svc.book({ s: "acme-estimate", epoch: String(mon(12)), ...person({ email: "not an email" }) });
    if (!r.ok) throw new Error(JSON.stringify(r));
    const [row] = await db.sql`select email from appointments where id = ${r.appt_id}`;
    expect(row.email).toBe("");
  });

  test("matches the newest lead with the phone's last 10 digits anywhere, and writes its conversation event", async () => {
    const older = await makeLead(db.sql, { list: 101, phone: "5125557001", first: "Old" });
    const newer = await makeLead(db.sql, { list: 201, phone: "5125557001", first: "New" }); // another org
    const outboxBefore = await db.sql`select count(*)::int as n from outbox_events where type = 'lead.created'`;
    clock.t = T0 + 5000;
    const r = await svc.book({ slug: "acme-estimate", epoch: mon(13), name: "Pat Doe", phone: "+1 (512) 555-7001", email: "pat@x.org" });
    if (!r.ok) throw new Error(JSON.stringify(r));
    const [appt] = await db.sql`select lead_id, phone, name from appointments where id = ${r.appt_id}`;
    expect(appt).toEqual({ lead_id: newer, phone: "5125557001", name: "Pat Doe" });
    expect(older).toBeLessThan(newer);
    const conv = JSON.parse((await conversationJson(db.sql, null, newer))!);
    expect(conv.entries).toEqual([
      {
        kind: "event",
        event: "appointment.booked",
        label: "Appointment booked for Monday, November 23, 2026 at 1:00 PM CST",
        actor: "acme-estimate",
        actor_role: "booking",
        note: "Pat Doe (5125557001, pat@x.org) booked Estimates through the booking link.",
        epoch: (T0 + 5000) / 1000,
      },
    ]);
    const outboxAfter = await db.sql`select count(*)::int as n from outbox_events where type = 'lead.created'`;
    expect(outboxAfter[0].n).toBe(outboxBefore[0].n);
    const [evt] = await db.sql`select org_id, payload from outbox_events where type = 'appointment.booked' and (payload->'data'->>'appt_id')::bigint = ${r.appt_id}`;
    expect(evt.org_id).toBe(1);
    expect(evt.payload).toEqual({
      type: "appointment.booked",
      timestamp: new Date(T0 + 5000).toISOString(),
      data: {
        appt_id: r.appt_id, calendar_id: 1, calendar: "Estimates", link: "acme-estimate", org_id: 1, lead_id: newer,
        epoch: mon(13), label: "Monday, November 23, 2026 at 1:00 PM CST", starts_at: "2026-11-23T19:00:00.000Z",
        name: "Pat Doe", phone: "5125557001", email: "pat@x.org", status: "pending", created_at: new Date(T0 + 5000).toISOString(),
        attribution: null,
      },
    });
  });

  test("without a match and without an inbound list the appointment is kept without a lead", async () => {
    const r = await svc.book({ slug: "acme-estimate", epoch: mon(14), name: "No Lead", phone: "5125550990" });
    if (!r.ok) throw new Error(JSON.stringify(r));
    const [appt] = await db.sql`select lead_id from appointments where id = ${r.appt_id}`;
    expect(appt.lead_id).toBeNull();
    expect(await db.sql`select 1 from leads where phone = '5125550990'`).toHaveLength(0);
    const [evt] = await db.sql`select payload from outbox_events where type = 'appointment.booked' and (payload->'data'->>'appt_id')::bigint = ${r.appt_id}`;
    expect(evt.payload.data.lead_id).toBeNull();
  });

  test("without a match, a fresh lead in COMMS_INBOUND_LIST_ID (setting, or environment over it) as intake makes one", async () => {
    await db.sql`insert into settings (key, value) values ('COMMS_INBOUND_LIST_ID', '900')`;
    try {
      const r = await svc.book({ slug: "acme-estimate", epoch: mon(14, 30), name: "Fresh  Lead Person", phone: "512-555-0991", email: "fresh@x.org" });
      if (!r.ok) throw new Error(JSON.stringify(r));
      const [lead] = await db.sql`select l.id, l.list_id, l.first_name, l.last_name, l.email, l.source, l.source_meta
                                  from leads l join appointments a on a.lead_id = l.id where a.id = ${r.appt_id}`;
      expect(lead).toMatchObject({ list_id: 900, first_name: "Fresh", last_name: "Lead Person", email: "fresh@x.org", source: "booking", source_meta: { source: "booking", via: "booking" } });
      const channels = await db.sql`select channel, address, consent from lead_channels where lead_id = ${lead.id} order by channel`;
      expect([...channels]).toEqual([{ channel: "email", address: "fresh@x.org", consent: "none" }, { channel: "sms", address: "5125550991", consent: "none" }]);
      expect([...(await db.sql`select trigger from automation_triggers where lead_id = ${lead.id}`)]).toEqual([{ trigger: "new_lead" }]);
      const [created] = await db.sql`select payload from outbox_events where type = 'lead.created' and (payload->'data'->>'lead_id')::bigint = ${lead.id}`;
      expect(created.payload.data).toMatchObject({ lead_id: lead.id, list_id: 900, campaign: "HOUSE", phone: "5125550991", source: "booking" });
      const conv = JSON.parse((await conversationJson(db.sql, null, lead.id))!);
      expect(conv.entries.map((e: { event: string }) => e.event)).toEqual(["appointment.booked"]);

      // The environment's list wins over the setting.
      const env = bookingService(db.sql, clock, { baseUrl: BASE, inboundListId: 102 });
      const r2 = await env.book({ slug: "acme-estimate", epoch: mon(15), name: "Env Lead", phone: "5125550992" });
      if (!r2.ok) throw new Error(JSON.stringify(r2));
      const [l2] = await db.sql`select l.list_id from leads l join appointments a on a.lead_id = l.id where a.id = ${r2.appt_id}`;
      expect(l2.list_id).toBe(102);
    } finally {
      await db.sql`delete from settings where key = 'COMMS_INBOUND_LIST_ID'`;
    }
  });

  test("a slot that fills leaves nothing written: no lead, no event", async () => {
    await db.sql`insert into settings (key, value) values ('COMMS_INBOUND_LIST_ID', '900')`;
    try {
      const first = await svc.book({ slug: "acme-estimate", epoch: mon(15, 30), name: "A", phone: "5125550993" });
      expect(first.ok).toBe(true);
      const events = await db.sql`select count(*)::int as n from outbox_events`;
      const second = await svc.book({ slug: "acme-estimate", epoch: mon(15, 30), name: "B", phone: "5125550994" });
      expect(second).toEqual({ ok: false, error: "slot_unavailable" });
      expect(await db.sql`select 1 from leads where phone = '5125550994'`).toHaveLength(0);
      expect((await db.sql`select count(*)::int as n from outbox_events`)[0].n).toBe(events[0].n);
    } finally {
      await db.sql`delete from settings where key = 'COMMS_INBOUND_LIST_ID'`;
    }
  });
});

describe("capacity under real races", () => {
  test("20 concurrent books of a one-seat slot: exactly one succeeds, the rest slot_unavailable", async () => {
    const racer = connect(db.url, { max: 20, statementTimeoutMs: 10_000 });
    try {
      const s = bookingService(racer, clock, { baseUrl: BASE, inboundListId: null });
      const results = await Promise.all(Array.from({ length: 20 }, () => s.book({ slug: "acme-estimate", epoch: tue(9), ...person() })));
      expect(results.filter((r) => r.ok)).toHaveLength(1);
      expect(results.filter((r) => !r.ok).map((r) => (r as { error: string }).error)).toEqual(Array(19).fill("slot_unavailable"));
      expect((await db.sql`select count(*)::int as n from appointments where calendar_id = 1 and slot_epoch = ${tue(9)}`)[0].n).toBe(1);
    } finally {
      await racer.end();
    }
  });

  test("the same across two separate clients (two instances' pools), with capacity 3", async () => {
    const a = connect(db.url, { max: 10, statementTimeoutMs: 10_000 });
    const b = connect(db.url, { max: 10, statementTimeoutMs: 10_000 });
    try {
      const sa = bookingService(a, clock, { baseUrl: BASE, inboundListId: null });
      const sb = bookingService(b, clock, { baseUrl: BASE, inboundListId: null });
      const one = () => [sa, sb].flatMap((s) => Array.from({ length: 10 }, () => s.book({ slug: "acme-estimate", epoch: tue(9, 30), ...person() })));
      const three = () => [sa, sb].flatMap((s) => Array.from({ length: 10 }, () => s.book({ slug: "acme-crew", epoch: tue(9, 30), ...person() })));
      const [r1, r3] = await Promise.all([Promise.all(one()), Promise.all(three())]);
      expect(r1.filter((r) => r.ok)).toHaveLength(1);
      expect(r3.filter((r) => r.ok)).toHaveLength(3);
      expect([...r1, ...r3].filter((r) => !r.ok).every((r) => (r as { error: string }).error === "slot_unavailable")).toBe(true);
      const seats = await db.sql`select calendar_id, count(*)::int as n from appointments where slot_epoch = ${tue(9, 30)} group by 1 order by 1`;
      expect([...seats]).toEqual([{ calendar_id: 1, n: 1 }, { calendar_id: 2, n: 3 }]);
      const crew = await sa.slots({ s: "acme-crew" });
      expect(crew.slots.some((s) => s.epoch === tue(9, 30))).toBe(false);
    } finally {
      await Promise.all([a.end(), b.end()]);
    }
  });

  test("the database itself refuses a seat past capacity, whoever writes", async () => {
    const racer = connect(db.url, { max: 12, statementTimeoutMs: 10_000 });
    try {
      const insert = (i: number) =>
        racer`insert into appointments (calendar_id, link_slug, slot_epoch, name, phone, token_selector, token_hash)
              values (2, 'acme-crew', ${tue(10)}, 'direct', '5125550000', ${Buffer.from(`sel-${i}-${Math.random()}`)}, ${Buffer.alloc(32)})`
          .then(() => "ok", (e) => e.code);
      const outcomes = await Promise.all(Array.from({ length: 12 }, (_, i) => insert(i)));
      expect(outcomes.filter((o) => o === "ok")).toHaveLength(3);
      expect(outcomes.filter((o) => o === "LB001")).toHaveLength(9);
      // A cancelled appointment frees its seat; restoring it when the slot is full is refused.
      await db.sql`update appointments set status = 'cancelled' where id = (select min(id) from appointments where calendar_id = 2 and slot_epoch = ${tue(10)})`;
      expect(await insert(99)).toBe("ok");
      expect(await db.sql`update appointments set status = 'pending' where calendar_id = 2 and slot_epoch = ${tue(10)} and status = 'cancelled'`.then(() => "ok", (e) => e.code)).toBe("LB001");
      // Repeatable read would count from a stale snapshot: refused outright.
      const rr = await db.sql
        .begin("isolation level repeatable read", (tx) =>
          tx`insert into appointments (calendar_id, link_slug, slot_epoch, name, phone, token_selector, token_hash)
             values (1, 'acme-estimate', ${tue(16)}, 'rr', '5125550000', ${Buffer.from("rr")}, ${Buffer.alloc(32)})`)
        .then(() => "ok", (e) => e.code);
      expect(rr).toBe("LB002");
    } finally {
      await racer.end();
    }
  });
});

describe("reschedule", () => {
  async function booked(epoch: number, slug = "acme-estimate") {
    const r = await svc.book({ slug, epoch, ...person() });
    if (!r.ok) throw new Error(JSON.stringify(r));
    return r;
  }

  test("moves a pending appointment: {ok, appt_id, epoch}; the old seat frees in the same transaction", async () => {
    const leadId = await makeLead(db.sql, { list: 101, phone: "5125558001" });
    const b = await svc.book({ slug: "acme-estimate", epoch: tue(13), name: "Move Me", phone: "5125558001" });
    if (!b.ok) throw new Error(JSON.stringify(b));
    clock.t = T0 + 60_000;
    const r = await svc.reschedule({ token: b.token, epoch: tue(14) });
    expect(r).toEqual({ ok: true, appt_id: b.appt_id, epoch: tue(14) });
    const slots = (await svc.slots({ s: "acme-estimate" })).slots.map((s) => s.epoch);
    expect(slots).toContain(tue(13));
    expect(slots).not.toContain(tue(14));
    const conv = JSON.parse((await conversationJson(db.sql, null, leadId))!);
    expect(conv.entries.at(-1)).toEqual({
      kind: "event",
      event: "appointment.rescheduled",
      label: "Appointment moved to Tuesday, November 24, 2026 at 2:00 PM CST",
      actor: "acme-estimate",
      actor_role: "booking",
      note: "Move Me moved Estimates from Tuesday, November 24, 2026 at 1:00 PM CST through the reschedule link.",
      epoch: (T0 + 60_000) / 1000,
    });
    const [evt] = await db.sql`select payload from outbox_events where type = 'appointment.rescheduled' and (payload->'data'->>'appt_id')::bigint = ${b.appt_id}`;
    expect(evt.payload).toEqual({
      type: "appointment.rescheduled",
      timestamp: new Date(T0 + 60_000).toISOString(),
      data: {
        appt_id: b.appt_id, calendar_id: 1, calendar: "Estimates", link: "acme-estimate", org_id: 1, lead_id: leadId,
        epoch: tue(14), label: "Tuesday, November 24, 2026 at 2:00 PM CST", starts_at: "2026-11-24T20:00:00.000Z",
        previous_epoch: tue(13), previous_label: "Tuesday, November 24, 2026 at 1:00 PM CST", previous_starts_at: "2026-11-24T19:00:00.000Z",
        name: "Move Me", phone: "5125558001", email: "", status: "pending", updated_at: new Date(T0 + 60_000).toISOString(),
      },
    });
    // `r` works as the token's name too; moving again, and to where it already is.
    expect(await svc.reschedule({ r: b.token, epoch: String(tue(14, 30)) })).toEqual({ ok: true, appt_id: b.appt_id, epoch: tue(14, 30) });
    expect(await svc.reschedule({ r: b.token, epoch: tue(14, 30) })).toEqual({ ok: true, appt_id: b.appt_id, epoch: tue(14, 30) });
  });

  test("tokens: missing, malformed, unknown, a known selector with a wrong secret", async () => {
    const b = await booked(tue(15));
    const wrongSecret = Buffer.from(b.token, "base64url");
    wrongSecret[31] ^= 1;
    const cases: [Record<string, unknown>, string][] = [
      [{ epoch: tue(16) }, "token_required"],
      [{ token: "", epoch: tue(16) }, "token_required"],
      [{ token: { a: 1 }, epoch: tue(16) }, "token_required"],
      [{ token: "abc", epoch: tue(16) }, "unknown_token"],
      [{ token: b.token + "A", epoch: tue(16) }, "unknown_token"],
      [{ token: Buffer.alloc(32, 7).toString("base64url"), epoch: tue(16) }, "unknown_token"],
      [{ token: wrongSecret.toString("base64url"), epoch: tue(16) }, "unknown_token"],
      [{ token: b.token }, "bad_epoch"],
      [{ token: b.token, epoch: "x" }, "bad_epoch"],
      [{ token: b.token, epoch: T0 / 1000 - 3600 }, "bad_epoch"],
      [{ token: b.token, epoch: tue(16) + 60 }, "slot_unavailable"],
      [{ token: b.token, epoch: tue(12) }, "slot_unavailable"], // lunch
    ];
    for (const [fields, error] of cases) expect([fields, await svc.reschedule(fields)]).toEqual([fields, { ok: false, error }]);
    const [row] = await db.sql`select slot_epoch from appointments where id = ${b.appt_id}`;
    expect(row.slot_epoch).toBe(tue(15));
  });

  test("only pending appointments move; a full slot refuses and the old seat stays taken", async () => {
    const b = await booked(tue(15, 30));
    const other = await booked(tue(16));
    expect(await svc.reschedule({ token: b.token, epoch: tue(16) })).toEqual({ ok: false, error: "slot_unavailable" });
    const [row] = await db.sql`select slot_epoch from appointments where id = ${b.appt_id}`;
    expect(row.slot_epoch).toBe(tue(15, 30));
    await db.sql`update appointments set status = 'confirmed' where id = ${other.appt_id}`;
    expect(await svc.reschedule({ token: other.token, epoch: tue(16, 30) })).toEqual({ ok: false, error: "not_pending" });
  });

  test("concurrent moves into one free seat: exactly one lands", async () => {
    const racer = connect(db.url, { max: 10, statementTimeoutMs: 10_000 });
    try {
      const s = bookingService(racer, clock, { baseUrl: BASE, inboundListId: null });
      const appts = await Promise.all(Array.from({ length: 8 }, (_, i) => booked(mon(9) + 86400 * 2 + i * 1800))); // Wednesday
      const target = mon(9) + 86400 * 3; // Thursday 9:00
      const results = await Promise.all(appts.map((a) => s.reschedule({ token: a.token, epoch: target })));
      expect(results.filter((r) => r.ok)).toHaveLength(1);
      expect(results.filter((r) => !r.ok).every((r) => (r as { error: string }).error === "slot_unavailable")).toBe(true);
      expect((await db.sql`select count(*)::int as n from appointments where slot_epoch = ${target} and calendar_id = 1`)[0].n).toBe(1);
      // The losers kept their seats.
      expect((await db.sql`select count(*)::int as n from appointments where calendar_id = 1 and slot_epoch = any(${appts.map((_, i) => mon(9) + 86400 * 2 + i * 1800)}::int8[])`)[0].n).toBe(7);
    } finally {
      await racer.end();
    }
  });

  test("the slots read shows the appointment a valid token moves, null for a token of another calendar", async () => {
    const b = await booked(tue(10, 30));
    const r = await svc.slots({ s: "acme-estimate", r: b.token });
    expect(r.ok && r.appointment).toEqual({ appt_id: b.appt_id, epoch: tue(10, 30), label: "Tuesday, November 24, 2026 at 10:30 AM CST", status: "pending" });
    const other = await svc.slots({ s: "acme-crew", r: b.token });
    expect(other.ok && other.appointment).toBeNull();
    expect((await svc.slots({ s: "acme-estimate", token: "junk" })).ok && (await svc.slots({ s: "acme-estimate", token: "junk" }) as { appointment: unknown }).appointment).toBeNull();
  });
});

test("every event written matches its model (src/events/model.ts)", () => expectEventsMatchModels(db.sql, ["appointment.booked", "appointment.rescheduled", "lead.created"]));
