// The client address: which entry of X-Forwarded-For each TRUST_PROXY value believes (directly and
// through a real nginx running the shipped site), IPv6 parsing and /64 buckets for the address
// limits, and the DNI holds cap per address.
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TrustProxy } from "../src/config";
import { dniEngine } from "../src/dni/instance";
import { ipBucket, ipText, parseIp } from "../src/http/address";
import { clientAddress } from "../src/http/client";
import { call, startApp, type TestApp } from "./harness/app";
import { ManualClock } from "./harness/clock";
import { testDatabase, type TestDatabase } from "./harness/db";
import { poolNumbers, provisionPools, T0 } from "./harness/dni";
import { ensureNginx, startNginx, type RunningNginx } from "./harness/nginx";

const SALT = "addr-salt";
const h = (text: string) => createHmac("sha256", SALT).update(text).digest("hex");

let db: TestDatabase;
const apps: TestApp[] = [];
let clock: ManualClock;

async function launch(env: Record<string, string> = {}, c = clock): Promise<TestApp> {
  const a = await startApp(db.url, { NPK_IP_SALT: SALT, ...env }, { clock: c });
  apps.push(a);
  return a;
}

beforeAll(async () => {
  db = await testDatabase();
  clock = new ManualClock(T0);
  await provisionPools(db.sql, [
    { key: "big", numbers: poolNumbers(40) },
    { key: "capped", numbers: poolNumbers(10, 100), fallback: "5125559000", ttl_seconds: 60 },
    { key: "capped6", numbers: poolNumbers(10, 200), fallback: "5125559000", ttl_seconds: 60 },
  ]);
});
afterAll(async () => {
  await Promise.all(apps.map((a) => a.stop()));
  await db?.drop();
});

const fromPeer = (address: string, headers: Record<string, string> = {}, trust: TrustProxy = "loopback") =>
  clientAddress(new Request("http://x/", { headers }), { requestIP: () => ({ address }) }, trust);

describe("parsing addresses", () => {
  test("IPv4, IPv6 in every written form, brackets, ports, zone ids; one canonical text each", () => {
    const cases: [string, string | null][] = [
      ["203.0.113.9", "203.0.113.9"],
      [" 203.0.113.9 ", "203.0.113.9"],
      ["203.0.113.9:4431", "203.0.113.9"],
      ["010.001.000.009", "10.1.0.9"],
      ["2001:DB8::1", "2001:db8::1"],
      ["2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"],
      ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
      ["[2001:db8::1]", "2001:db8::1"],
      ["[2001:db8::1]:443", "2001:db8::1"],
      ["fe80::1%eth0", "fe80::1"],
      ["::1", "::1"],
      ["::", "::"],
      ["1::", "1::"],
      ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2:3:4:5:6"],
      ["::ffff:1.2.3.4", "1.2.3.4"],
      ["::FFFF:0102:0304", "1.2.3.4"],
      ["[::ffff:127.0.0.1]:80", "127.0.0.1"],
      ["64:ff9b::192.0.2.33", "64:ff9b::c000:221"],
      // Not addresses.
      ["", null],
      ["unknown", null],
      ["1.2.3", null],
      ["1.2.3.4.5", null],
      ["256.1.1.1", null],
      ["1.2.3.4:", null],
      ["2001:db8::1::2", null],
      ["2001:db8:1:2:3:4:5:6:7", null],
      ["12345::", null],
      [":1", null],
      ["1:", null],
      ["2001:db8::g", null],
      ["[2001:db8::1", null],
      ["1".repeat(65), null],
    ];
    for (const [raw, text] of cases) {
      const ip = parseIp(raw);
      expect({ raw, text: ip && ipText(ip) }).toEqual({ raw, text });
    }
  });

  test("buckets: an IPv4 address is its own; an IPv6 address counts as its /64", () => {
    const bucket = (raw: string) => ipBucket(parseIp(raw)!);
    expect(bucket("203.0.113.9")).toBe("203.0.113.9");
    expect(bucket("::ffff:203.0.113.9")).toBe("203.0.113.9");
    expect(bucket("2001:db8:1:2::1")).toBe("2001:db8:1:2::/64");
    expect(bucket("2001:db8:1:2:ffff:eeee:dddd:cccc")).toBe("2001:db8:1:2::/64");
    expect(bucket("2001:db8:1:3::1")).toBe("2001:db8:1:3::/64");
    expect(bucket("2001:db8::1")).toBe("2001:db8::/64");
  });
});

describe("clientAddress per TRUST_PROXY", () => {
  const spoofed = { "x-forwarded-for": "6.6.6.6, 203.0.113.9", "x-real-ip": "7.7.7.7" };

  test("loopback: from a loopback peer, the rightmost entry that is not loopback; never a client-written one", () => {
    expect(fromPeer("127.0.0.1", spoofed).address).toBe("203.0.113.9");
    expect(fromPeer("::1", spoofed).address).toBe("203.0.113.9");
    expect(fromPeer("::ffff:127.0.0.1", spoofed).address).toBe("203.0.113.9");
    // Two proxies on the host: the one nearer the client is skipped too.
    expect(fromPeer("127.0.0.1", { "x-forwarded-for": "6.6.6.6, 203.0.113.9, 127.0.0.1" }).address).toBe("203.0.113.9");
    expect(fromPeer("127.0.0.1", { "x-forwarded-for": "6.6.6.6,203.0.113.9" }).address).toBe("203.0.113.9");
    // Only X-Real-IP (the proxy sets no X-Forwarded-For).
    expect(fromPeer("127.0.0.1", { "x-real-ip": "198.51.100.4" }).address).toBe("198.51.100.4");
    expect(fromPeer("127.0.0.1", { "x-forwarded-for": " ", "x-real-ip": "198.51.100.4" }).address).toBe("198.51.100.4");
    // Junk where the proxy's entry should be: the proxy itself is the client (one bucket for all).
    expect(fromPeer("127.0.0.1", { "x-forwarded-for": "6.6.6.6, junk" }).address).toBe("127.0.0.1");
    expect(fromPeer("127.0.0.1", { "x-forwarded-for": "203.0.113.9, " }).address).toBe("127.0.0.1");
    // No header at all: the peer.
    expect(fromPeer("127.0.0.1").address).toBe("127.0.0.1");
    // A peer that is not loopback is the client, whatever it says.
    expect(fromPeer("192.0.2.50", spoofed).address).toBe("192.0.2.50");
    expect(fromPeer("2001:db8::50", spoofed).address).toBe("2001:db8::50");
  });

  test("none: always the TCP peer", () => {
    expect(fromPeer("127.0.0.1", spoofed, "none").address).toBe("127.0.0.1");
    expect(fromPeer("::ffff:192.0.2.7", spoofed, "none")).toEqual({ address: "192.0.2.7", bucket: "192.0.2.7" });
  });

  test("all: every hop is a trusted proxy, so the leftmost entry", () => {
    expect(fromPeer("192.0.2.50", spoofed, "all").address).toBe("6.6.6.6");
    expect(fromPeer("192.0.2.50", { "x-real-ip": "7.7.7.7" }, "all").address).toBe("7.7.7.7");
    expect(fromPeer("192.0.2.50", {}, "all").address).toBe("192.0.2.50");
  });

  test("IPv6 entries, bracketed or with zone ids, and their buckets", () => {
    expect(fromPeer("::1", { "x-forwarded-for": "6.6.6.6, [2001:DB8:1:2::7]:5000" })).toEqual({
      address: "2001:db8:1:2::7",
      bucket: "2001:db8:1:2::/64",
    });
    expect(fromPeer("127.0.0.1", { "x-forwarded-for": "::ffff:198.51.100.9" })).toEqual({ address: "198.51.100.9", bucket: "198.51.100.9" });
  });

  test("a header longer than any honest chain is read at its right end only", () => {
    const long = `${"6.6.6.6, ".repeat(10_000)}203.0.113.9`;
    expect(fromPeer("127.0.0.1", { "x-forwarded-for": long }).address).toBe("203.0.113.9");
    expect(fromPeer("127.0.0.1", { "x-forwarded-for": long }, "all").address).toBe("6.6.6.6");
  });
});

/** A booking write with no valid link: counted by the write limit, answered unknown_link until it. */
const bookWrite = (base: string, headers: Record<string, string>, init: RequestInit = {}) =>
  call(base, "/book/api.php?action=book", { method: "POST", json: { slug: "nope" }, headers, ...init });

const dniLease = (base: string, visitor: string, headers: Record<string, string>, pool = "big", init: RequestInit = {}) =>
  call(base, "/hooks/dni.php?action=lease", { method: "POST", json: { pool, visitor }, headers, ...init });

describe("spoofed first entries, directly (TRUST_PROXY=loopback)", () => {
  test("the booking write limit holds however the first entry varies; the bucket is the real address's", async () => {
    const c = new ManualClock(T0 + 10 * 3600_000);
    const app = await launch({}, c);
    const replies = [];
    for (let i = 0; i < 12; i++) replies.push(await bookWrite(app.base, { "x-forwarded-for": `6.6.${i}.6, 203.0.113.9` }));
    expect(replies.slice(0, 10).map((r) => r.body.error)).toEqual(Array(10).fill("unknown_link"));
    expect(replies.slice(10).map((r) => [r.status, r.body])).toEqual(Array(2).fill([200, { ok: false, error: "rate_limited" }]));
    const rows = await db.sql`select bucket, n from rate_counters where scope = 'booking_write' and hour = ${Math.floor(c.now() / 3600_000)}`;
    expect(rows.map((r) => [r.bucket, Number(r.n)])).toEqual([[h("203.0.113.9"), 10]]);
  });
});

describe("IPv6 clients count by their /64", () => {
  test("booking writes: one /64 shares one limit, another /64 does not; ::ffff:a.b.c.d is a.b.c.d", async () => {
    const c = new ManualClock(T0 + 20 * 3600_000);
    const app = await launch({}, c);
    const statuses = [];
    for (let i = 1; i <= 11; i++) statuses.push((await bookWrite(app.base, { "x-forwarded-for": `2001:db8:aa:1::${i.toString(16)}` })).body.error);
    expect(statuses).toEqual([...Array(10).fill("unknown_link"), "rate_limited"]);
    // Other spellings of addresses in the same /64.
    expect((await bookWrite(app.base, { "x-forwarded-for": "[2001:DB8:AA:1:ffff::1]:9" })).body.error).toBe("rate_limited");
    expect((await bookWrite(app.base, { "x-forwarded-for": "2001:db8:aa:1:0:0:0:0" })).body.error).toBe("rate_limited");
    // The next /64 is another client.
    expect((await bookWrite(app.base, { "x-forwarded-for": "2001:db8:aa:2::1" })).body.error).toBe("unknown_link");
    // IPv4-mapped: the same client as the plain IPv4 address.
    for (let i = 0; i < 10; i++) await bookWrite(app.base, { "x-forwarded-for": i % 2 ? "198.51.100.77" : "::ffff:198.51.100.77" });
    expect((await bookWrite(app.base, { "x-forwarded-for": "::ffff:c633:644d" })).body.error).toBe("rate_limited");
  });

  test("DNI: the 3,600 an hour are per /64; the stored hash is the full address's", async () => {
    const c = new ManualClock(T0 + 30 * 3600_000);
    const app = await launch({}, c);
    let admitted = 0;
    for (let i = 0; i < 3600; i += 100) {
      const batch = await Promise.all(
        Array.from({ length: 100 }, (_, j) =>
          call(app.base, "/hooks/dni.php?action=heartbeat", {
            method: "POST",
            json: { pool: "nope", visitor: "v" },
            headers: { "x-forwarded-for": `2001:db8:bb:1:${(i + j).toString(16)}::1` },
          }),
        ),
      );
      admitted += batch.filter((r) => r.status !== 429).length;
    }
    expect(admitted).toBe(3600);
    const over = await dniLease(app.base, "v6-over", { "x-forwarded-for": "2001:db8:bb:1:dead::beef" });
    expect({ status: over.status, body: over.body }).toEqual({ status: 429, body: { ok: false, error: "rate_limited" } });
    const other = await dniLease(app.base, "v6-other", { "x-forwarded-for": "2001:db8:bb:2::1" });
    expect(other.status).toBe(200);
    await app.running.deps.limits.flush();
    const [row] = await db.sql`select n from rate_counters where scope = 'dni' and bucket = ${h("2001:db8:bb:1::/64")}`;
    expect(Number(row.n)).toBe(3600);
    const [visitor] = await db.sql`select ip_hash from dni_visitors where visitor = 'v6-other'`;
    expect(visitor.ip_hash).toBe(h("2001:db8:bb:2::1"));
  });
});

describe("DNI holds per address", () => {
  test("past DNI_MAX_HOLDS_PER_ADDRESS live holds, the address's new visitors get the fallback; others, returning visitors and freed places are unaffected", async () => {
    const c = new ManualClock(T0 + 40 * 3600_000);
    const app = await launch({ DNI_MAX_HOLDS_PER_ADDRESS: "3" }, c);
    const me = { "x-forwarded-for": "198.51.100.20" };
    const first = [];
    for (let i = 0; i < 3; i++) first.push((await dniLease(app.base, `cap${i}`, me, "capped")).body);
    expect(first.map((b) => b.fallback)).toEqual([false, false, false]);
    // The fourth and fifth new visitors of the address: the fallback, as for an exhausted pool.
    const over = await Promise.all([dniLease(app.base, "cap3", me, "capped"), dniLease(app.base, "cap4", me, "capped")]);
    for (const r of over) {
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ ok: true, fallback: true, number: "5125559000" });
    }
    // Another address still gets numbers (the pool is not exhausted).
    expect((await dniLease(app.base, "other0", { "x-forwarded-for": "198.51.100.21" }, "capped")).body.fallback).toBe(false);
    // A returning visitor of the capped address renews their own hold, from memory and from the database.
    expect((await dniLease(app.base, "cap0", me, "capped")).body.number).toBe(first[0].number);
    await dniEngine(app.running.deps).flush();
    const fresh = await launch({ DNI_MAX_HOLDS_PER_ADDRESS: "3" }, c);
    expect((await dniLease(fresh.base, "cap1", me, "capped")).body.number).toBe(first[1].number);
    // The cap counts live holds: once the address's holds expire, its new visitors get numbers again.
    c.advance(61_000);
    expect((await dniLease(app.base, "cap5", me, "capped")).body.fallback).toBe(false);
    const holders = await db.sql`select count(*)::int as n from dni_holds where pool_key = 'capped' and holder_hash = ${h("198.51.100.20")}`;
    expect(holders[0].n).toBeGreaterThanOrEqual(3);
  });

  test("IPv6: one /64 shares the cap; a batch of new visitors arriving together is capped exactly", async () => {
    const c = new ManualClock(T0 + 50 * 3600_000);
    const app = await launch({ DNI_MAX_HOLDS_PER_ADDRESS: "2" }, c);
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) => dniLease(app.base, `six${i}`, { "x-forwarded-for": `2001:db8:cc:1::${i + 1}` }, "capped6")),
    );
    expect(answers.filter((r) => r.body.fallback === false).length).toBe(2);
    expect(answers.filter((r) => r.body.fallback === true).length).toBe(3);
    const [live] = await db.sql`select count(*)::int as n from dni_holds where pool_key = 'capped6' and expires_at > ${new Date(c.now())}`;
    expect(live.n).toBe(2);
    expect((await dniLease(app.base, "six-other", { "x-forwarded-for": "2001:db8:cc:2::1" }, "capped6")).body.fallback).toBe(false);
  });

  test("two instances allocating for one address at once never exceed the cap together", async () => {
    const c = new ManualClock(T0 + 55 * 3600_000);
    const [x, y] = [await launch({ DNI_MAX_HOLDS_PER_ADDRESS: "4" }, c), await launch({ DNI_MAX_HOLDS_PER_ADDRESS: "4" }, c)];
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, i) => dniLease(i % 2 ? x.base : y.base, `two${i}`, { "x-forwarded-for": "198.51.100.55" }, "big")),
    );
    expect(answers.filter((r) => r.body.fallback === false).length).toBe(4);
    const [live] = await db.sql`
      select count(*)::int as n from dni_holds where pool_key = 'big' and holder_hash = ${h("198.51.100.55")} and expires_at > ${new Date(c.now())}`;
    expect(live.n).toBe(4);
  });

  test("the default is 100", async () => {
    const { loadConfig } = await import("../src/config");
    expect(loadConfig({}).dniMaxHoldsPerAddress).toBe(100);
    expect(loadConfig({ DNI_MAX_HOLDS_PER_ADDRESS: "7" }).dniMaxHoldsPerAddress).toBe(7);
    expect(() => loadConfig({ DNI_MAX_HOLDS_PER_ADDRESS: "0" })).toThrow("DNI_MAX_HOLDS_PER_ADDRESS");
  });
});

describe("through a real nginx running the shipped site", () => {
  const nginx = ensureNginx();
  if ("missing" in nginx) console.warn(`client-address.test.ts: skipping the nginx tests: ${nginx.missing}`);
  const it = "missing" in nginx ? test.skip : test;
  let proxy: RunningNginx;
  let app: TestApp;
  const c = new ManualClock(T0 + 60 * 3600_000);
  const tls = { tls: { rejectUnauthorized: false } } as RequestInit;

  beforeAll(async () => {
    if ("missing" in nginx) return;
    app = await launch({}, c);
    proxy = await startNginx(nginx.path, Number(new URL(app.base).port));
  });
  afterAll(() => proxy?.stop());

  it("the shipped site passes nginx -t", () => {
    expect(proxy.check.output).toContain("test is successful");
    expect(proxy.check.status).toBe(0);
  });

  it("spoofed X-Forwarded-For first entries and X-Real-IP: the booking write limit holds, counted under nginx's peer address", async () => {
    const replies = [];
    for (let i = 0; i < 12; i++) {
      replies.push(await bookWrite(proxy.base, { "x-forwarded-for": `6.6.${i}.6`, "x-real-ip": `7.7.${i}.7` }, tls));
    }
    expect(replies.map((r) => r.status)).toEqual(Array(12).fill(200));
    expect(replies.slice(0, 10).map((r) => r.body.error)).toEqual(Array(10).fill("unknown_link"));
    expect(replies.slice(10).map((r) => r.body)).toEqual(Array(2).fill({ ok: false, error: "rate_limited" }));
    const rows = await db.sql`select bucket, n from rate_counters where scope = 'booking_write' and hour = ${Math.floor(c.now() / 3600_000)}`;
    expect(rows.map((r) => [r.bucket, Number(r.n)])).toEqual([[h("127.0.0.1"), 10]]);
  });

  it("spoofed first entries: the DNI limit holds and the stored address hash is the real one", async () => {
    let admitted = 0;
    for (let i = 0; i < 3600; i += 100) {
      const batch = await Promise.all(
        Array.from({ length: 100 }, (_, j) =>
          call(proxy.base, "/hooks/dni.php?action=lease", {
            method: "POST",
            json: { pool: "big", visitor: `ng${i + j}` },
            headers: { "x-forwarded-for": `6.${(i + j) >> 8}.${(i + j) & 255}.6, 10.0.0.1`, "x-real-ip": "7.7.7.7" },
            ...tls,
          }),
        ),
      );
      admitted += batch.filter((r) => r.status !== 429).length;
    }
    expect(admitted).toBe(3600);
    const over = await dniLease(proxy.base, "ng-over", { "x-forwarded-for": "9.9.9.9" }, "big", tls);
    expect({ status: over.status, body: over.body }).toEqual({ status: 429, body: { ok: false, error: "rate_limited" } });
    await dniEngine(app.running.deps).flush();
    const hashes = await db.sql`select distinct ip_hash from dni_visitors where visitor like 'ng%'`;
    expect(hashes.map((r) => r.ip_hash)).toEqual([h("127.0.0.1")]);
    // And the holds cap saw one address: 40 numbers, at most 100 holds per address, so none capped
    // but every live hold is that address's.
    const holders = await db.sql`
      select distinct holder_hash from dni_holds where pool_key = 'big' and expires_at > ${new Date(c.now())}`;
    expect(holders.map((r) => r.holder_hash)).toEqual([h("127.0.0.1")]);
  }, 120_000);
});
