// Appointment states after booking (src/booking/states.ts) against PostgreSQL: each allowed
// transition with its conversation and outbound events in one transaction, every refusal,
// confinement to the actor's organization, and a cancellation's seat offered again.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import type { Actor } from "../src/auth/actor";
import { bookingService, type BookingService } from "../src/booking/service";
import { actionProblem, actionsFor, changeAppointmentStatus, type StatusAction } from "../src/booking/states";
import type { Sql } from "../src/db/client";
import { testDatabase, type TestDatabase } from "./harness/db";
import { expectEventsMatchModels } from "./harness/events";
import { seedWorld } from "./harness/factory";

let db: TestDatabase;
// Monday Nov 23 2026, 06:00 in Chicago.
const T0 = Date.parse("2026-11-23T12:00:00Z");
const clock = { t: T0, now() { return this.t; } };
let svc: BookingService;

/** Mon Nov 23 2026 at hh:mm Chicago (CST, UTC-6), as epoch seconds. */
const mon = (hh: number, mm = 0) => Date.UTC(2026, 10, 23, hh + 6, mm) / 1000;

const userOf = (orgId: number | null, id = "mgr1"): Actor => ({ orgId, type: "user" as Actor["type"], id, agent: null, keyId: null });
const acme = userOf(1);

async function makeCalendar(sql: Sql, id: number, slug: string, org: number | null, capacity = 1) {
  await sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours)
            values (${id}, ${org}, 'Estimates', 'America/Chicago', 30, ${capacity}, 0, 14,
                    ${sql.json({ mon: [["09:00", "17:00"]], tue: [["09:00", "17:00"]] })})`;
  await sql`insert into calendar_links (slug, calendar_id) values (${slug}, ${id})`;
}

let seq = 0;
async function booked(slug: string, epoch: number): Promise<number> {
  const r = await svc.book({ slug, epoch, name: "Jane Public", phone: `512555${String(1000 + ++seq)}` });
  if (!r.ok) throw new Error(JSON.stringify(r));
  return r.appt_id;
}

const change = (actor: Actor, id: number, action: StatusAction) =>
  db.sql.begin((tx) => changeAppointmentStatus(tx, actor, new Date(clock.now()), id, action));

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  await makeCalendar(db.sql, 1, "acme-estimate", 1);
  await makeCalendar(db.sql, 2, "bolt-estimate", 2);
  await makeCalendar(db.sql, 3, "house-calls", null);
  svc = bookingService(db.sql, clock, { baseUrl: "https://book.example", inboundListId: 101 });
});
afterAll(async () => {
  await db?.drop();
});
beforeEach(() => {
  clock.t = T0;
});

describe("the rules", () => {
  const start = mon(10) * 1000;
  test("confirm and cancel before the start; completed and no-show from the start on; cancelled is final", () => {
    expect(actionsFor("pending", start, start - 1)).toEqual(["confirm", "cancel"]);
    expect(actionsFor("confirmed", start, start - 1)).toEqual(["cancel"]);
    expect(actionsFor("pending", start, start)).toEqual(["complete", "no_show"]);
    expect(actionsFor("confirmed", start, start + 1)).toEqual(["complete", "no_show"]);
    expect(actionsFor("completed", start, start + 1)).toEqual(["no_show"]);
    expect(actionsFor("no_show", start, start + 1)).toEqual(["complete"]);
    expect(actionsFor("cancelled", start, start - 1)).toEqual([]);
    expect(actionsFor("cancelled", start, start + 1)).toEqual([]);
    expect(actionProblem("cancel", "pending", start, start)).toBe("already_started");
    expect(actionProblem("complete", "pending", start, start - 1)).toBe("not_started");
    expect(actionProblem("confirm", "confirmed", start, start - 1)).toBe("not_allowed");
  });
});

describe("changes", () => {
  test("confirm: the status, the lead's conversation event and appointment.confirmed, with who did it", async () => {
    const id = await booked("acme-estimate", mon(10));
    clock.t = T0 + 60_000;
    expect(await change(acme, id, "confirm")).toEqual({ ok: true, appt_id: id, lead_id: expect.any(Number), org_id: 1, from: "pending", to: "confirmed" });
    const [row] = await db.sql`select status, updated_at, lead_id from appointments where id = ${id}`;
    expect(row.status).toBe("confirmed");
    expect(row.updated_at.getTime()).toBe(T0 + 60_000);
    const [ev] = await db.sql`select event, label, actor, actor_role, note, created_at from lead_events
                              where lead_id = ${row.lead_id} and event = 'appointment.confirmed'`;
    expect(ev).toEqual({
      event: "appointment.confirmed",
      label: "Appointment confirmed for Monday, November 23, 2026 at 10:00 AM CST",
      actor: "mgr1",
      actor_role: "user",
      note: "Estimates for Jane Public at Monday, November 23, 2026 at 10:00 AM CST was confirmed (was pending).",
      created_at: new Date(T0 + 60_000),
    });
    const [out] = await db.sql`select org_id, payload, created_at from outbox_events
                               where type = 'appointment.confirmed' and (payload->'data'->>'appt_id')::bigint = ${id}`;
    expect(out.org_id).toBe(1);
    expect(out.payload.timestamp).toBe(new Date(T0 + 60_000).toISOString());
    expect(out.payload.data).toMatchObject({
      appt_id: id, calendar_id: 1, link: "acme-estimate", org_id: 1, epoch: mon(10), status: "confirmed",
      previous_status: "pending", actor_type: "user", actor_id: "mgr1", starts_at: new Date(mon(10) * 1000).toISOString(),
    });
  });

  test("cancel frees the seat: the slot is offered again and can be booked again", async () => {
    const id = await booked("acme-estimate", mon(11));
    expect((await svc.slots({ s: "acme-estimate" })).slots.some((s) => s.epoch === mon(11))).toBe(false);
    expect(await change(acme, id, "cancel")).toMatchObject({ ok: true, from: "pending", to: "cancelled" });
    const slot = (await svc.slots({ s: "acme-estimate" })).slots.find((s) => s.epoch === mon(11));
    expect(slot?.remaining).toBe(1);
    expect((await svc.book({ slug: "acme-estimate", epoch: mon(11), name: "Next One", phone: "5125559999" })).ok).toBe(true);
    // A cancelled appointment stays cancelled: no second cancellation, no confirmation.
    expect(await change(acme, id, "cancel")).toEqual({ ok: false, reason: "not_allowed", status: "cancelled" });
    expect(await change(acme, id, "confirm")).toEqual({ ok: false, reason: "not_allowed", status: "cancelled" });
    const [cancelled] = await db.sql`select count(*)::int as n from outbox_events where type = 'appointment.cancelled'`;
    expect(cancelled.n).toBe(1);
  });

  test("completed and no-show from the start on, and corrected into each other", async () => {
    const id = await booked("acme-estimate", mon(12));
    expect(await change(acme, id, "complete")).toEqual({ ok: false, reason: "not_started", status: "pending" });
    clock.t = mon(12) * 1000;
    expect(await change(acme, id, "cancel")).toEqual({ ok: false, reason: "already_started", status: "pending" });
    expect(await change(acme, id, "no_show")).toMatchObject({ ok: true, from: "pending", to: "no_show" });
    expect(await change(acme, id, "complete")).toMatchObject({ ok: true, from: "no_show", to: "completed" });
    const types = await db.sql`select type from outbox_events where (payload->'data'->>'appt_id')::bigint = ${id} order by id`;
    expect(types.map((r) => r.type)).toEqual(["appointment.booked", "appointment.no_show", "appointment.completed"]);
    const [row] = await db.sql`select status from appointments where id = ${id}`;
    expect(row.status).toBe("completed");
  });

  test("another organization's appointment is not found, as a missing one; the platform reaches all", async () => {
    const bolt = await booked("bolt-estimate", mon(13));
    const house = await booked("house-calls", mon(13));
    expect(await change(acme, bolt, "confirm")).toEqual({ ok: false, reason: "not_found" });
    expect(await change(acme, house, "confirm")).toEqual({ ok: false, reason: "not_found" });
    expect(await change(acme, 999_999, "confirm")).toEqual({ ok: false, reason: "not_found" });
    const [row] = await db.sql`select status from appointments where id = ${bolt}`;
    expect(row.status).toBe("pending");
    expect(await change(userOf(2, "mgr2"), bolt, "confirm")).toMatchObject({ ok: true });
    expect(await change(userOf(null, "admin"), house, "confirm")).toMatchObject({ ok: true });
  });

  test("an appointment without a lead changes without a conversation event", async () => {
    const id = await booked("acme-estimate", mon(14));
    await db.sql`update appointments set lead_id = null where id = ${id}`;
    const [before] = await db.sql`select count(*)::int as n from lead_events`;
    expect(await change(acme, id, "confirm")).toMatchObject({ ok: true, lead_id: null });
    const [after] = await db.sql`select count(*)::int as n from lead_events`;
    expect(after.n).toBe(before.n);
  });

  test("a failed transaction leaves neither the status nor its events", async () => {
    const id = await booked("acme-estimate", mon(15));
    await expect(
      db.sql.begin(async (tx) => {
        await changeAppointmentStatus(tx, acme, new Date(clock.now()), id, "cancel");
        throw new Error("the audit failed");
      }),
    ).rejects.toThrow("the audit failed");
    const [row] = await db.sql`select status from appointments where id = ${id}`;
    expect(row.status).toBe("pending");
    const [ev] = await db.sql`select count(*)::int as n from outbox_events where type = 'appointment.cancelled' and (payload->'data'->>'appt_id')::bigint = ${id}`;
    expect(ev.n).toBe(0);
  });

  test("two cancellations at once: one wins, the other is refused", async () => {
    const id = await booked("acme-estimate", mon(16));
    const [a, b] = await Promise.all([change(acme, id, "cancel"), change(acme, id, "cancel")]);
    expect([a.ok, b.ok].sort()).toEqual([false, true]);
    const [ev] = await db.sql`select count(*)::int as n from outbox_events where type = 'appointment.cancelled' and (payload->'data'->>'appt_id')::bigint = ${id}`;
    expect(ev.n).toBe(1);
  });
});

test("every event written matches its model (src/events/model.ts)", () =>
  expectEventsMatchModels(db.sql, ["appointment.confirmed", "appointment.cancelled", "appointment.completed", "appointment.no_show"]));
