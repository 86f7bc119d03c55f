// Which resolved addresses a webhook may be sent to. A webhook URL is chosen by a tenant, so a
// delivery must never reach the service's own host or network (SSRF): loopback, private,
// link-local, unspecified, and the other ranges no public endpoint lives in. IPv6 forms that
// carry an IPv4 address (mapped, translated, compatible, NAT64, 6to4) are judged by that address.
import { isIPv4, isIPv6 } from "node:net";

export type AddressClass = "loopback" | "private" | "link-local" | "unspecified" | "multicast" | "reserved";

type Range = readonly [bytes: readonly number[], bits: number, what: AddressClass];

const V4: readonly Range[] = [
  [[0, 0, 0, 0], 8, "unspecified"], // "this network"; 0.0.0.0 reaches the local host
  [[10, 0, 0, 0], 8, "private"],
  [[100, 64, 0, 0], 10, "private"], // carrier-grade NAT shared space
  [[127, 0, 0, 0], 8, "loopback"],
  [[169, 254, 0, 0], 16, "link-local"], // includes cloud metadata at 169.254.169.254
  [[172, 16, 0, 0], 12, "private"],
  [[192, 0, 0, 0], 24, "reserved"],
  [[192, 0, 2, 0], 24, "reserved"],
  [[192, 88, 99, 0], 24, "reserved"],
  [[192, 168, 0, 0], 16, "private"],
  [[198, 18, 0, 0], 15, "reserved"],
  [[198, 51, 100, 0], 24, "reserved"],
  [[203, 0, 113, 0], 24, "reserved"],
  [[224, 0, 0, 0], 4, "multicast"],
  [[240, 0, 0, 0], 4, "reserved"], // includes 255.255.255.255
];

const V6: readonly Range[] = [
  [[0x01, 0x00], 64, "reserved"], // 100::/64 discard
  [[0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48, "private"], // 64:ff9b:1::/48 local-use NAT64
  [[0x20, 0x01, 0x00, 0x00], 32, "reserved"], // Teredo: a tunnel whose far end is not checkable
  [[0x20, 0x01, 0x0d, 0xb8], 32, "reserved"], // documentation
  [[0xfc], 7, "private"], // unique local
  [[0xfe, 0x80], 10, "link-local"],
  [[0xfe, 0xc0], 10, "private"], // site-local (deprecated)
  [[0xff], 8, "multicast"],
];

function inRange(addr: Uint8Array, [prefix, bits]: Range): boolean {
  for (let i = 0; i * 8 < bits; i++) {
    const take = Math.min(8, bits - i * 8);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((addr[i] & mask) !== ((prefix[i] ?? 0) & mask)) return false;
  }
  return true;
}

function parseV4(s: string): Uint8Array {
  return Uint8Array.from(s.split(".").map(Number));
}

/** 16 bytes of an IPv6 address in any textual form (zero compression, embedded IPv4, zone id). */
function parseV6(s: string): Uint8Array {
  const text = s.replace(/%.*$/, "");
  const out = new Uint8Array(16);
  const [head, tail] = text.includes("::") ? text.split("::") : [text, null];
  const groups = (part: string): number[] => {
    if (part === "") return [];
    const words: number[] = [];
    for (const g of part.split(":")) {
      if (g.includes(".")) {
        const [a, b, c, d] = parseV4(g);
        words.push((a << 8) | b, (c << 8) | d);
      } else {
        words.push(parseInt(g, 16));
      }
    }
    return words;
  };
  const left = groups(head);
  const right = tail === null ? [] : groups(tail);
  const words = [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
  words.forEach((w, i) => {
    out[2 * i] = w >> 8;
    out[2 * i + 1] = w & 0xff;
  });
  return out;
}

function classifyV4(b: Uint8Array): AddressClass | null {
  return V4.find((r) => inRange(b, r))?.[2] ?? null;
}

const zero = (b: Uint8Array, from: number, to: number) => b.subarray(from, to).every((x) => x === 0);

function classifyV6(b: Uint8Array): AddressClass | null {
  if (zero(b, 0, 16)) return "unspecified";
  if (zero(b, 0, 15) && b[15] === 1) return "loopback";
  // ::ffff:a.b.c.d (mapped), ::ffff:0:a.b.c.d (translated), ::a.b.c.d (compatible, deprecated)
  if (zero(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return classifyV4(b.subarray(12));
  if (zero(b, 0, 8) && b[8] === 0xff && b[9] === 0xff && zero(b, 10, 12)) return classifyV4(b.subarray(12));
  if (zero(b, 0, 12)) return classifyV4(b.subarray(12)) ?? "reserved";
  // 64:ff9b::a.b.c.d: a NAT64 gateway forwards to the embedded IPv4 address
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(b, 4, 12)) return classifyV4(b.subarray(12));
  // 2002:aabb:ccdd::/48: 6to4 relays to a.b.c.d
  if (b[0] === 0x20 && b[1] === 0x02) return classifyV4(b.subarray(2, 6));
  return V6.find((r) => inRange(b, r))?.[2] ?? null;
}

/**
 * Why `ip` (a literal IPv4 or IPv6 address) is not a public address a webhook may be sent to,
 * or null when it is. Anything that is not an address literal is refused as "reserved".
 */
export function forbiddenAddress(ip: string): AddressClass | null {
  if (isIPv4(ip)) return classifyV4(parseV4(ip));
  const bare = ip.startsWith("[") && ip.endsWith("]") ? ip.slice(1, -1) : ip;
  if (isIPv6(bare)) return classifyV6(parseV6(bare));
  return "reserved";
}
