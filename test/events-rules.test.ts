// Pure rules of outbound events, without a database: which addresses a webhook may reach, the
// Standard Webhooks signature, the retry schedule, and the target a URL resolves to.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { Webhook } from "standardwebhooks";
import { forbiddenAddress } from "../src/events/address";
import { eventBody } from "../src/events/deliver";
import { JITTER, MAX_ATTEMPTS, nextAttemptAt, RETRY_DELAYS_MS } from "../src/events/schedule";
import { signature, signedHeaders } from "../src/events/sign";
import { Refused, resolveTarget, type Lookup } from "../src/events/target";
import { EVENT_TYPES } from "../src/events/types";
import { parseProvisioning } from "../src/provision/validate";

describe("forbidden addresses", () => {
  const cases: [string, string | null][] = [
    ["8.8.8.8", null],
    ["1.1.1.1", null],
    ["93.184.216.34", null],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["10.0.0.1", "private"],
    ["9.255.255.255", null],
    ["11.0.0.0", null],
    ["172.15.255.255", null],
    ["172.16.0.0", "private"],
    ["172.31.255.255", "private"],
    ["172.32.0.0", null],
    ["192.168.1.1", "private"],
    ["192.169.0.0", null],
    ["100.63.255.255", null],
    ["100.64.0.1", "private"],
    ["100.127.255.255", "private"],
    ["100.128.0.0", null],
    ["169.254.169.254", "link-local"],
    ["169.253.255.255", null],
    ["224.0.0.1", "multicast"],
    ["239.255.255.255", "multicast"],
    ["255.255.255.255", "reserved"],
    ["240.0.0.1", "reserved"],
    ["198.18.0.1", "reserved"],
    ["198.20.0.0", null],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    ["[::1]", "loopback"],
    ["::2", "unspecified"], // ::0.0.0.2, "this network"
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["febf:ffff::1", "link-local"],
    ["fec0::1", "private"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "reserved"],
    ["2001:0:4136:e378::1", "reserved"],
    ["2606:4700:4700::1111", null],
    ["2a00:1450:4001:81a::200e", null],
    // IPv4 carried in IPv6, each judged by the IPv4 address it carries
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["0:0:0:0:0:ffff:7f00:0001", "loopback"],
    ["::ffff:10.1.2.3", "private"],
    ["::ffff:8.8.8.8", null],
    ["::ffff:0:127.0.0.1", "loopback"],
    ["::127.0.0.1", "loopback"],
    ["::8.8.8.8", "reserved"],
    ["64:ff9b::127.0.0.1", "loopback"],
    ["64:ff9b::808:808", null],
    ["64:ff9b:1::1", "private"],
    ["2002:7f00:1::", "loopback"],
    ["2002:c0a8:101::1", "private"],
    ["2002:808:808::1", null],
    ["localhost", "reserved"],
    ["not an address", "reserved"],
  ];
  for (const [ip, want] of cases) {
    test(`${ip} → ${want ?? "public"}`, () => expect(forbiddenAddress(ip)).toBe(want as never));
  }

  const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255));
  const hex = (a: number, b: number) => ((a << 8) | b).toString(16);

  test("every IPv6 form that carries an IPv4 address is judged as that address", () => {
    fc.assert(
      fc.property(v4, ([a, b, c, d]) => {
        const dotted = `${a}.${b}.${c}.${d}`;
        const want = forbiddenAddress(dotted);
        expect(forbiddenAddress(`::ffff:${dotted}`)).toBe(want);
        expect(forbiddenAddress(`::ffff:${hex(a, b)}:${hex(c, d)}`)).toBe(want);
        expect(forbiddenAddress(`0:0:0:0:0:ffff:${hex(a, b)}:${hex(c, d)}`)).toBe(want);
        expect(forbiddenAddress(`::ffff:0:${dotted}`)).toBe(want);
        expect(forbiddenAddress(`64:ff9b::${dotted}`)).toBe(want);
        expect(forbiddenAddress(`2002:${hex(a, b)}:${hex(c, d)}::1`)).toBe(want);
      }),
      { numRuns: 2000 },
    );
  });

  test("the private, loopback and link-local blocks are refused throughout", () => {
    const inBlock = (first: number[], bits: number) =>
      fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((r) => {
        const bytes = r.map((x, i) => {
          const fixed = Math.max(0, Math.min(8, bits - i * 8));
          const mask = (0xff << (8 - fixed)) & 0xff;
          return ((first[i] ?? 0) & mask) | (x & ~mask & 0xff);
        });
        return bytes.join(".");
      });
    for (const [first, bits] of [[[10], 8], [[127], 8], [[172, 16], 12], [[192, 168], 16], [[169, 254], 16], [[0], 8]] as const) {
      fc.assert(fc.property(inBlock([...first], bits), (ip) => forbiddenAddress(ip) !== null));
    }
  });

  test("ULA and link-local IPv6 addresses are refused throughout", () => {
    const groups = fc.array(fc.nat(0xffff), { minLength: 7, maxLength: 7 });
    fc.assert(
      fc.property(fc.nat(0x1ff), groups, (low, rest) => {
        const ula = (0xfc00 | low).toString(16);
        expect(forbiddenAddress([ula, ...rest.map((g) => g.toString(16))].join(":"))).toBe("private");
        const ll = (0xfe80 | (low & 0x3f)).toString(16);
        expect(forbiddenAddress([ll, ...rest.map((g) => g.toString(16))].join(":"))).toBe("link-local");
      }),
    );
  });
});

describe("Standard Webhooks signature", () => {
  const secret = "whsec_" + Buffer.from("0123456789abcdef0123456789abcdef").toString("base64");

  test("verifies with the independent standardwebhooks implementation", () => {
    const body = eventBody({ data: { lead_id: 1 }, type: "lead.created", timestamp: "2026-11-23T10:00:00.000Z" });
    const ts = Math.floor(Date.now() / 1000);
    const headers = signedHeaders(secret, "evt_42", ts, body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(headers["webhook-signature"]).toBe(new Webhook(secret).sign("evt_42", new Date(ts * 1000), body));
  });

  test("any change of id, timestamp, body or key fails verification", () => {
    fc.assert(
      fc.property(fc.string(), fc.string({ minLength: 1 }), (text, other) => {
        const body = JSON.stringify({ type: "lead.created", data: { text } });
        const ts = Math.floor(Date.now() / 1000);
        const headers = signedHeaders(secret, "evt_1", ts, body);
        const wh = new Webhook(secret);
        expect(() => wh.verify(body, headers)).not.toThrow();
        const tampered = JSON.stringify({ type: "lead.created", data: { text: text + other } });
        expect(() => wh.verify(tampered, headers)).toThrow();
        expect(() => wh.verify(body, { ...headers, "webhook-id": "evt_2" })).toThrow();
        expect(() => wh.verify(body, { ...headers, "webhook-timestamp": String(ts - 1) })).toThrow();
        const otherKey = "whsec_" + Buffer.from("fedcba9876543210fedcba9876543210").toString("base64");
        expect(() => new Webhook(otherKey).verify(body, headers)).toThrow();
      }),
      { numRuns: 200 },
    );
  });

  test("is v1, base64 of HMAC-SHA256 over id.timestamp.body keyed by the decoded secret", () => {
    const key = Buffer.from("0123456789abcdef0123456789abcdef");
    const mac = new Bun.CryptoHasher("sha256", key).update("evt_7.1700000000.{}").digest("base64");
    expect(signature(secret, "evt_7", 1700000000, "{}")).toBe(`v1,${mac}`);
  });

  test("the body is {type, timestamp, data} in that order", () => {
    const body = eventBody({ data: { a: 1 }, timestamp: "t", type: "x" });
    expect(body).toBe('{"type":"x","timestamp":"t","data":{"a":1}}');
  });
});

describe("retry schedule", () => {
  const S = 1000;
  const M = 60 * S;
  const H = 60 * M;

  test("about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h, then none: ten attempts over three days", () => {
    expect(RETRY_DELAYS_MS).toEqual([5 * S, 5 * M, 30 * M, 2 * H, 5 * H, 10 * H, 14 * H, 20 * H, 24 * H]);
    expect(MAX_ATTEMPTS).toBe(10);
    expect(RETRY_DELAYS_MS.reduce((a, b) => a + b)).toBeGreaterThan(24 * H);
    expect(nextAttemptAt(10, 0, 0.5)).toBeNull();
    expect(nextAttemptAt(1, 1000, 0.5)).toBe(1000 + 5 * S);
  });

  test("jitter stays within ±10 % of the delay", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 9 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (n, r) => {
        const at = nextAttemptAt(n, 0, r)!;
        const base = RETRY_DELAYS_MS[n - 1];
        expect(at).toBeGreaterThanOrEqual(Math.floor(base * (1 - JITTER)));
        expect(at).toBeLessThanOrEqual(Math.ceil(base * (1 + JITTER)));
      }),
    );
  });
});

describe("target resolution", () => {
  const fixed =
    (map: Record<string, string[]>): Lookup =>
    async (name) => {
      const list = map[name];
      if (!list) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
      return list.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
    };
  const lookup = fixed({
    "hooks.example": ["93.184.216.34"],
    "v6.example": ["2606:4700::1"],
    "inside.example": ["10.0.0.5"],
    "mixed.example": ["93.184.216.34", "127.0.0.1"],
    "mapped.example": ["::ffff:169.254.169.254"],
  });

  test("connects to the checked address and names the endpoint in Host and TLS", async () => {
    const t = await resolveTarget("https://user:p%40ss@hooks.example:8443/in?x=1", false, lookup);
    expect(t.fetchUrl).toBe("https://93.184.216.34:8443/in?x=1");
    expect(t).toMatchObject({ address: "93.184.216.34", host: "hooks.example:8443", serverName: "hooks.example" });
    expect(t.authorization).toBe("Basic " + Buffer.from("user:p@ss").toString("base64"));
    const v6 = await resolveTarget("https://v6.example/x", false, lookup);
    expect(v6.fetchUrl).toBe("https://[2606:4700::1]/x");
    expect(v6.host).toBe("v6.example");
  });

  const refused = async (url: string, allowPrivate = false) => {
    try {
      await resolveTarget(url, allowPrivate, lookup);
    } catch (err) {
      expect(err).toBeInstanceOf(Refused);
      return (err as Error).message;
    }
    throw new Error(`${url} was not refused`);
  };

  test("refuses http, other schemes, private names and private literals unless allowed", async () => {
    expect(await refused("http://hooks.example/x")).toContain("endpoints must be https");
    expect(await refused("ftp://hooks.example/x", true)).toContain("endpoints must be https");
    expect(await refused("https://inside.example/x")).toBe(
      "refused: inside.example resolves to 10.0.0.5, a private address; webhooks go to public addresses only (WEBHOOK_ALLOW_PRIVATE=true allows it)",
    );
    expect(await refused("https://mixed.example/x")).toContain("resolves to 127.0.0.1, a loopback address");
    expect(await refused("https://mapped.example/x")).toContain("a link-local address");
    expect(await refused("https://127.0.0.1/x")).toContain("refused: 127.0.0.1 is a loopback address");
    expect(await refused("https://[::1]/x")).toContain("loopback");
    expect(await refused("https://[::ffff:7f00:1]/x")).toContain("loopback");
    expect(await refused("https://0x7f.1/x")).toContain("loopback"); // the URL parser normalizes it to 127.0.0.1
    expect(await refused("https://2130706433/x")).toContain("loopback");
    expect(await refused("https://[fe80::1]/x")).toContain("link-local");
    expect(await refused("https://0.0.0.0/x")).toContain("unspecified");
    expect(await refused("https://nowhere.example/x")).toBe("DNS: nowhere.example did not resolve (ENOTFOUND)");
    expect(await refused("not a url")).toContain("is not a URL");
    const allowed = await resolveTarget("http://inside.example/x", true, lookup);
    expect(allowed).toMatchObject({ address: "10.0.0.5", serverName: null, fetchUrl: "http://10.0.0.5/x" });
  });
});

describe("provisioned subscriptions", () => {
  const file = (events: unknown[]) =>
    JSON.stringify({ webhooks: [{ id: 1, org_id: null, url: "https://h.example/", secret: "whsec_" + Buffer.alloc(24, 7).toString("base64"), events }] });

  test("name known event types or *; a typo is an error that names it", () => {
    expect(() => parseProvisioning(file(["lead.created", "call.completed", "*"]))).not.toThrow();
    expect(() => parseProvisioning(file([...EVENT_TYPES]))).not.toThrow();
    expect(() => parseProvisioning(file(["lead.created", "lead.create"]))).toThrow(
      'webhooks[0].events[1]: unknown event type "lead.create"; one of lead.created, lead.updated, message.sent, message.failed, message.received, appointment.booked, appointment.rescheduled, appointment.confirmed, appointment.cancelled, appointment.completed, appointment.no_show, call.completed or "*"',
    );
  });
});
