// Which resolved addresses a webhook may be sent to. A webhook URL is chosen by a tenant, so a
// delivery must never reach the service's own host or network (SSRF): loopback, private,
// link-local, unspecified, and every other range no public endpoint lives in. The address is
// parsed by the service's one parser (src/http/address.ts); its range comes from ipaddr.js's
// table of IANA's special-purpose registries (maintained upstream, not here): anything it does not
// call `unicast` is refused. IPv6 forms that carry an IPv4 address (mapped, translated,
// compatible, NAT64, 6to4) are judged by that address.
import ipaddr from "ipaddr.js";
import { parseIp } from "../http/address";

export type AddressClass = "loopback" | "private" | "link-local" | "unspecified" | "multicast" | "reserved";

const V4_CLASS: Readonly<Record<string, AddressClass | null>> = {
  unicast: null,
  unspecified: "unspecified", // "this network"; 0.0.0.0 reaches the local host
  loopback: "loopback",
  linkLocal: "link-local", // includes cloud metadata at 169.254.169.254
  multicast: "multicast",
  private: "private",
  carrierGradeNat: "private",
};

const V6_CLASS: Readonly<Record<string, AddressClass | null>> = {
  unicast: null,
  unspecified: "unspecified",
  loopback: "loopback",
  linkLocal: "link-local",
  multicast: "multicast",
  uniqueLocal: "private",
  deprecatedSiteLocal: "private",
};

function classifyV4(octets: number[]): AddressClass | null {
  const range = new ipaddr.IPv4(octets).range();
  return range in V4_CLASS ? V4_CLASS[range] : "reserved";
}

/** The IPv4 address in two 16-bit groups. */
const v4In = (hi: number, lo: number) => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff];

function classifyV6(g: number[]): AddressClass | null {
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  // ::a.b.c.d (IPv4-compatible, deprecated); :: and ::1 are themselves.
  if (zeros(0, 6) && !(g[6] === 0 && (g[7] === 0 || g[7] === 1))) return classifyV4(v4In(g[6], g[7])) ?? "reserved";
  const range = new ipaddr.IPv6(g).range();
  switch (range) {
    case "rfc6145": // ::ffff:0:a.b.c.d, translated
      return classifyV4(v4In(g[6], g[7]));
    case "rfc6052":
      // 64:ff9b::a.b.c.d: a NAT64 gateway forwards to the embedded IPv4 address; 64:ff9b:1::/48 is local use.
      return zeros(2, 6) ? classifyV4(v4In(g[6], g[7])) : "private";
    case "6to4": // 2002:aabb:ccdd::/48 relays to a.b.c.d
      return classifyV4(v4In(g[1], g[2]));
    default:
      // Teredo (a tunnel whose far end is not checkable), documentation, discard, ORCHID, …
      return range in V6_CLASS ? V6_CLASS[range] : "reserved";
  }
}

/**
 * Why `ip` (a literal IPv4 or IPv6 address) is not a public address a webhook may be sent to,
 * or null when it is. Anything that is not an address literal is refused as "reserved".
 */
export function forbiddenAddress(ip: string): AddressClass | null {
  const parsed = parseIp(ip);
  if (parsed === null) return "reserved";
  return parsed.v === 4 ? classifyV4(parsed.text.split(".").map(Number)) : classifyV6(parsed.groups);
}
