// The public booking API through HTTP (book/api.php) on two instances of the service: the
// contract's shapes and codes, junk of every kind, the write limit per client address (exact
// across instances), double booking raced across instances, and the page's routes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testDatabase, type TestDatabase } from "./harness/db";
import { call, startApp, type Reply, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { makeKey, makeLead, seedWorld } from "./harness/factory";

let db: TestDatabase;
let a: TestApp;
let b: TestApp;
const T0 = Date.parse("2026-11-23T12:00:00Z"); // Monday 06:00 in Chicago
const clock = new ManualClock(T0);
const BASE_URL = "https://book.acme.example";

/** Mon Nov 23 2026 at hh:mm Chicago (CST, UTC-6), as epoch seconds; `day` days later. */
const at = (hh: number, mm = 0, day = 0) => Date.UTC(2026, 10, 23 + day, hh + 6, mm) / 1000;

let ipSeq = 0;
/** A fresh client address (TRUST_PROXY=loopback trusts X-Forwarded-For from the test's 127.0.0.1). */
const newAddress = () => `198.51.100.${++ipSeq}`;

function api(app: TestApp, query: string, init: { method?: string; json?: unknown; form?: Record<string, string>; body?: string; headers?: Record<string, string>; ip?: string } = {}): Promise<Reply> {
  const headers: Record<string, string> = { "x-forwarded-for": init.ip ?? newAddress(), ...init.headers };
  let body: string | undefined = init.body;
  if (init.form) {
    body = new URLSearchParams(init.form).toString();
    headers["content-type"] = "application/x-www-form-urlencoded";
  }
  return call(app.base, `/book/api.php${query}`, { method: init.method ?? (init.json !== undefined || body !== undefined ? "POST" : "GET"), json: init.json, body, headers });
}

let phoneSeq = 0;
const booking = (epoch: number, extra: Record<string, unknown> = {}) => ({
  slug: "acme-estimate",
  epoch,
  name: "Jane Public",
  phone: `512555${String(2000 + ++phoneSeq).slice(-4)}`,
  email: "jane@example.com",
  ...extra,
});

beforeAll(async () => {
  db = await testDatabase();
  await seedWorld(db.sql);
  const hours = { mon: [["09:00", "17:00"]], tue: [["09:00", "12:00"], ["13:00", "17:00"]], wed: [["09:00", "17:00"]], thu: [["09:00", "17:00"]], fri: [["09:00", "17:00"]] };
  await db.sql`insert into calendars (id, org_id, name, timezone, slot_minutes, capacity, min_notice_minutes, horizon_days, hours)
               values (1, 1, 'Estimates', 'America/Chicago', 30, 1, 60, 14, ${db.sql.json(hours)})`;
  await db.sql`insert into calendar_links (slug, calendar_id) values ('acme-estimate', 1)`;
  const env = { BASE_URL, COMMS_INBOUND_LIST_ID: "900" };
  a = await startApp(db.url, env, { clock });
  b = await startApp(db.url, env, { clock });
});
afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await db?.drop();
});

describe("action=slots", () => {
  test("slug as s or slug, in the query or the body (JSON or form): the contract's fields", async () => {
    const replies = [
      await api(a, "?action=slots&s=acme-estimate"),
      await api(a, "?action=slots&slug=acme-estimate"),
      await api(a, "?action=slots", { json: { s: "acme-estimate" } }),
      await api(a, "?action=slots", { form: { slug: "acme-estimate" } }),
    ];
    for (const r of replies) {
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toBe("application/json; charset=utf-8");
      expect(r.headers.get("access-control-allow-origin")).toBe("*");
      expect(Object.keys(r.body).sort()).toEqual(["name", "ok", "slots", "tz"]);
      expect(r.body).toMatchObject({ ok: true, tz: "America/Chicago", name: "Estimates" });
      expect(r.body.slots[0]).toEqual({
        epoch: at(9), label: "Monday, November 23, 2026 at 9:00 AM CST", dayKey: "2026-11-23", day: "Monday, November 23", time: "9:00 AM", remaining: 1,
      });
    }
    expect(replies[1].body).toEqual(replies[0].body);
  });

  test("an unknown or missing link: 200 {ok: false, error: unknown_link, slots: []}", async () => {
    for (const q of ["?action=slots&s=nope", "?action=slots", "?action=slots&s=", "?action=slots&s=%00%ff", `?action=slots&s=${"x".repeat(5000)}`]) {
      const r = await api(a, q);
      expect([q, r.status, r.body]).toEqual([q, 200, { ok: false, error: "unknown_link", slots: [] }]);
    }
  });

  test("any other action, or none: 400 {ok: false, error: unknown_action}", async () => {
    for (const [q, method] of [["", "GET"], ["?action=", "GET"], ["?action=SLOTS", "GET"], ["?action=cancel", "POST"], ["?action[]=slots", "GET"], ["?r=slots", "POST"]]) {
      const r = await api(a, q, { method, body: method === "POST" ? "{}" : undefined });
      expect([q, method, r.status, r.body]).toEqual([q, method, 400, { ok: false, error: "unknown_action" }]);
    }
  });

  test("gzip for clients that take it, the same JSON; plain text for the others", async () => {
    const url = `${a.base}/book/api.php?action=slots&s=acme-estimate`;
    const plain = await fetch(url, { headers: { "accept-encoding": "identity" }, decompress: false } as RequestInit);
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(plain.headers.get("vary")).toBe("accept-encoding");
    const text = await plain.text();
    for (const accept of ["gzip", "gzip, deflate, br", "br;q=1, gzip;q=0.5"]) {
      const zipped = await fetch(url, { headers: { "accept-encoding": accept }, decompress: false } as RequestInit);
      expect(zipped.headers.get("content-encoding")).toBe("gzip");
      const bytes = new Uint8Array(await zipped.arrayBuffer());
      expect(bytes.byteLength).toBeLessThan(text.length / 4);
      expect(JSON.parse(new TextDecoder().decode(Bun.gunzipSync(bytes)))).toEqual(JSON.parse(text));
    }
    const refused = await fetch(url, { headers: { "accept-encoding": "gzip;q=0" }, decompress: false } as RequestInit);
    expect(refused.headers.get("content-encoding")).toBeNull();
  });

  test("reads are never limited as writes", async () => {
    const ip = newAddress();
    for (let i = 0; i < 10; i++) expect((await api(a, "?action=book", { json: {}, ip })).body).toEqual({ ok: false, error: "unknown_link" });
    expect((await api(a, "?action=book", { json: {}, ip })).body).toEqual({ ok: false, error: "rate_limited" });
    const reads = await Promise.all(Array.from({ length: 30 }, () => api(a, "?action=slots&s=acme-estimate", { ip })));
    expect(reads.every((r) => r.status === 200 && r.body.ok === true)).toBe(true);
  });
});

describe("action=book", () => {
  test("JSON or form, slug or s: {ok, appt_id, label, token, reschedule_url}", async () => {
    const r1 = await api(a, "?action=book", { json: booking(at(10)) });
    expect(r1.status).toBe(200);
    expect(Object.keys(r1.body).sort()).toEqual(["appt_id", "label", "ok", "reschedule_url", "token"]);
    expect(r1.body.label).toBe("Monday, November 23, 2026 at 10:00 AM CST");
    expect(r1.body.reschedule_url).toBe(`${BASE_URL}/book/acme-estimate?r=${r1.body.token}`);
    const { slug, ...rest } = booking(at(10, 30));
    const r2 = await api(b, "?action=book", { form: { s: slug, ...Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, String(v)])) } });
    expect(r2.body).toMatchObject({ ok: true, label: "Monday, November 23, 2026 at 10:30 AM CST" });
    // Slug in the query, the rest in the body.
    const { slug: _s, ...body } = booking(at(11));
    expect((await api(a, "?action=book&slug=acme-estimate", { json: body })).body.ok).toBe(true);
    const slots = (await api(b, "?action=slots&s=acme-estimate")).body.slots.map((s: { epoch: number }) => s.epoch);
    for (const e of [at(10), at(10, 30), at(11)]) expect(slots).not.toContain(e);
  });

  test("validation failures are 200 with clear codes", async () => {
    const cases: [unknown, string][] = [
      [booking(at(12), { slug: "nope" }), "unknown_link"],
      [{ slug: "nope" }, "unknown_link"],
      [booking(at(12), { epoch: "tomorrow" }), "bad_epoch"],
      [booking(at(12), { epoch: T0 / 1000 - 60 }), "bad_epoch"],
      [booking(at(12), { name: "" }), "name_required"],
      [booking(at(12), { phone: "" }), "phone_required"],
      [booking(at(12), { phone: "12345" }), "bad_phone"],
      [booking(at(12) + 60), "slot_unavailable"],
      [booking(at(12), { epoch: at(9, 0, 5) }), "slot_unavailable"], // Saturday
    ];
    for (const [json, error] of cases) {
      const r = await api(a, "?action=book", { json });
      expect([json, r.status, r.body]).toEqual([json, 200, { ok: false, error }]);
    }
  });

  test("a write by GET is refused with 405 and Allow; preflight is answered", async () => {
    const r = await api(a, `?action=book&slug=acme-estimate&epoch=${at(13)}&name=X&phone=5125550000`);
    expect([r.status, r.body, r.headers.get("allow")]).toEqual([405, { ok: false, error: "method_not_allowed" }, "POST, OPTIONS"]);
    const pre = await call(a.base, "/book/api.php?action=book", { method: "OPTIONS", headers: { origin: "https://acme.example", "access-control-request-method": "POST" } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    expect(pre.headers.get("access-control-allow-methods")).toContain("POST");
  });

  test("junk of every kind: never a 5xx, always {ok: false, error}", async () => {
    const bodies: { body?: string; headers?: Record<string, string> }[] = [
      { body: "{", headers: { "content-type": "application/json" } },
      { body: "[1,2,3]", headers: { "content-type": "application/json" } },
      { body: "42", headers: { "content-type": "application/json" } },
      { body: "null", headers: { "content-type": "application/json" } },
      { body: '"x"', headers: { "content-type": "application/json" } },
      { body: JSON.stringify({ slug: { $ne: 1 }, epoch: { a: [] }, name: ["x"], phone: null }), headers: { "content-type": "application/json" } },
      { body: JSON.stringify(booking(at(13), { name: "\u0000 \u0000" })), headers: { "content-type": "application/json" } },
      { body: JSON.stringify(booking(at(13), { epoch: 1e308 })), headers: { "content-type": "application/json" } },
      { body: JSON.stringify(booking(at(13), { epoch: -1 })), headers: { "content-type": "application/json" } },
      { body: "slug=acme-estimate&epoch=abc&name=%ZZ", headers: { "content-type": "application/x-www-form-urlencoded" } },
      { body: "--x\r\nContent-Disposition: form-data; name=\"slug\"\r\n\r\nacme-estimate\r\n--x--\r\n", headers: { "content-type": "multipart/form-data; boundary=x" } },
      { body: "--broken", headers: { "content-type": "multipart/form-data; boundary=zz" } },
      { body: "\u00ff\u00fe\u0000garbage", headers: { "content-type": "application/octet-stream" } },
      { body: "x".repeat(100_000), headers: { "content-type": "application/json" } },
      { body: JSON.stringify({ ...booking(at(13)), pad: "y".repeat(20_000) }), headers: { "content-type": "application/json" } },
    ];
    for (const action of ["book", "reschedule", "slots"]) {
      for (const init of bodies) {
        const r = await api(a, `?action=${action}`, { method: "POST", ...init });
        expect([action, init.body?.slice(0, 40), r.status]).toEqual([action, init.body?.slice(0, 40), 200]);
        // A slots read may succeed (the multipart body names the link); the writes all fail.
        if (action !== "slots") expect([init.body?.slice(0, 40), r.body.ok, typeof r.body.error]).toEqual([init.body?.slice(0, 40), false, "string"]);
      }
    }
    const big = await api(a, "?action=book", { method: "POST", body: "x".repeat(100_000), headers: { "content-type": "application/json" } });
    expect(big.body.error).toBe("body_too_large");
    const bad = await api(a, "?action=book", { method: "POST", body: "{", headers: { "content-type": "application/json" } });
    expect(bad.body.error).toBe("malformed_json");
  });

  test("the lead's conversation shows the booking (read through the keyed API)", async () => {
    const leadId = await makeLead(db.sql, { list: 101, phone: "5125553434", first: "Conv" });
    const r = await api(a, "?action=book", { json: booking(at(14), { phone: "+1 512 555 3434", name: "Conv Person" }) });
    expect(r.body.ok).toBe(true);
    const key = (await makeKey(db.sql, { scopes: ["conversations:read"], org: 1 })).key;
    const conv = await call(a.base, `/hooks/api_v1.php?r=conversations/${leadId}`, { key });
    expect(conv.status).toBe(200);
    expect(conv.body.entries).toEqual([
      {
        kind: "event",
        event: "appointment.booked",
        label: "Appointment booked for Monday, November 23, 2026 at 2:00 PM CST",
        actor: "acme-estimate",
        actor_role: "booking",
        note: "Conv Person (5125553434, jane@example.com) booked Estimates through the booking link.",
        epoch: T0 / 1000,
      },
    ]);
  });
});

describe("action=reschedule", () => {
  test("token or r, query or body: {ok, appt_id, epoch}; failures are 200 with codes", async () => {
    const booked = (await api(a, "?action=book", { json: booking(at(9, 0, 1)) })).body;
    expect(booked.ok).toBe(true);
    const r1 = await api(b, "?action=reschedule", { json: { token: booked.token, epoch: at(9, 30, 1) } });
    expect([r1.status, r1.body]).toEqual([200, { ok: true, appt_id: booked.appt_id, epoch: at(9, 30, 1) }]);
    const r2 = await api(a, `?action=reschedule&r=${booked.token}`, { form: { epoch: String(at(10, 0, 1)) } });
    expect(r2.body).toEqual({ ok: true, appt_id: booked.appt_id, epoch: at(10, 0, 1) });
    const slots = (await api(a, "?action=slots&s=acme-estimate")).body.slots.map((s: { epoch: number }) => s.epoch);
    expect(slots).toContain(at(9, 0, 1));
    expect(slots).toContain(at(9, 30, 1));
    expect(slots).not.toContain(at(10, 0, 1));
    for (const [json, error] of [
      [{ epoch: at(11, 0, 1) }, "token_required"],
      [{ token: "nope", epoch: at(11, 0, 1) }, "unknown_token"],
      [{ r: "A".repeat(43), epoch: at(11, 0, 1) }, "unknown_token"],
      [{ token: booked.token, epoch: "x" }, "bad_epoch"],
      [{ token: booked.token, epoch: at(12, 0, 1) }, "slot_unavailable"], // Tuesday lunch
    ] as const) {
      const r = await api(a, "?action=reschedule", { json });
      expect([json, r.status, r.body]).toEqual([json, 200, { ok: false, error }]);
    }
    await db.sql`update appointments set status = 'cancelled' where id = ${booked.appt_id}`;
    expect((await api(a, "?action=reschedule", { json: { token: booked.token, epoch: at(11, 0, 1) } })).body).toEqual({ ok: false, error: "not_pending" });
  });
});

describe("across two instances", () => {
  test("8 concurrent books of a one-seat slot, split between instances: exactly one succeeds", async () => {
    // As many as the two instances' pools hold at once (4 each), all queued on the slot's lock.
    // Twenty, queued for connections and then the lock, had the last wait past the 1 s deadline
    // (a 503) when other work shared the machine, in a full run.
    const epoch = at(15, 0, 2);
    const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => api(i % 2 ? a : b, "?action=book", { json: booking(epoch) })));
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(replies.filter((r) => r.body.ok === true)).toHaveLength(1);
    expect(replies.filter((r) => r.body.ok === false).map((r) => r.body.error)).toEqual(Array(7).fill("slot_unavailable"));
    expect((await db.sql`select count(*)::int as n from appointments where slot_epoch = ${epoch}`)[0].n).toBe(1);
  });

  test("10 writes an hour per client address, book and reschedule together, exact across instances", async () => {
    const ip = newAddress();
    const first = await api(a, "?action=book", { json: booking(at(9, 0, 3)), ip });
    expect(first.body.ok).toBe(true);
    // 29 more writes at once, from the same address, on both instances: exactly 9 are let through.
    const replies = await Promise.all(
      Array.from({ length: 29 }, (_, i) =>
        i % 3 === 0
          ? api(i % 2 ? a : b, "?action=reschedule", { json: { token: first.body.token, epoch: at(9, 0, 3) }, ip })
          : api(i % 2 ? a : b, "?action=book", { json: booking(at(9, 30, 3) + 1800 * (i % 10)), ip }),
      ),
    );
    const limited = replies.filter((r) => r.body.error === "rate_limited");
    expect(limited).toHaveLength(20);
    expect(limited.every((r) => r.status === 200 && Object.keys(r.body).length === 2)).toBe(true);
    // Another address is not affected; the next hour starts afresh.
    expect((await api(b, "?action=book", { json: booking(at(16, 0, 3)) })).body.ok).toBe(true);
    expect((await api(a, "?action=book", { json: booking(at(16, 30, 3)), ip })).body).toEqual({ ok: false, error: "rate_limited" });
    clock.advance(3600_000);
    try {
      expect((await api(a, "?action=book", { json: booking(at(16, 30, 3)), ip })).body.ok).toBe(true);
    } finally {
      clock.set(T0);
    }
  });

  test("TRUST_PROXY=none: X-Forwarded-For is ignored, the TCP peer is the client", async () => {
    const c = await startApp(db.url, { BASE_URL, TRUST_PROXY: "none" }, { clock });
    try {
      // Every request comes from 127.0.0.1 whatever the header says; this hour has room for 10.
      clock.advance(2 * 3600_000);
      const replies: Reply[] = [];
      for (let i = 0; i < 11; i++) replies.push(await api(c, "?action=book", { json: { slug: "nope" } }));
      expect(replies.slice(0, 10).every((r) => r.body.error === "unknown_link")).toBe(true);
      expect(replies[10].body).toEqual({ ok: false, error: "rate_limited" });
    } finally {
      clock.set(T0);
      await c.stop();
    }
  });
});

describe("the page's routes", () => {
  test("GET /book/{slug}: the page, or a friendly 404; its files with long caching", async () => {
    const page = await fetch(`${a.base}/book/acme-estimate`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(page.headers.get("referrer-policy")).toBe("no-referrer");
    const html = await page.text();
    const js = /src="(_\/book\.js\?v=[0-9a-f]+)"/.exec(html)![1];
    const script = await fetch(`${a.base}/book/${js}`);
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(script.headers.get("cache-control")).toContain("immutable");
    expect((await fetch(`${a.base}/book/_/book.css`)).headers.get("content-type")).toBe("text/css; charset=utf-8");
    const missing = await fetch(`${a.base}/book/no-such-link`);
    expect(missing.status).toBe(404);
    expect(await missing.text()).toContain("find that booking page");
    for (const path of ["/book/_/nope.js", "/book/ACME-estimate", "/book/%2e%2e", "/book/a%00b"]) {
      const r = await fetch(a.base + path);
      expect([path, r.status < 500]).toEqual([path, true]);
    }
    expect((await fetch(`${a.base}/book/ACME-Estimate`)).status).toBe(200);
    // A trailing slash would resolve the page's relative addresses under the slug: redirected.
    const slash = await fetch(`${a.base}/book/acme-estimate/?r=x`, { redirect: "manual" });
    expect([slash.status, slash.headers.get("location")]).toEqual([308, "../acme-estimate?r=x"]);
    expect((await fetch(`${a.base}/book/acme-estimate/`)).url).toBe(`${a.base}/book/acme-estimate`);
    expect((await fetch(`${a.base}/book`)).status).toBe(404);
  });
});
