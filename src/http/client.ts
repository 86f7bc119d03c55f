// The client's address, as TRUST_PROXY says to take it, and its salted hash (raw addresses are
// never stored).
import type { TrustProxy } from "../config";
import { Generations } from "../generations";

export interface PeerSource {
  requestIP(request: Request): { address: string } | null;
}

const isLoopback = (ip: string) => ip === "::1" || ip.startsWith("127.") || ip.startsWith("::ffff:127.");

/** Without a proxy header the TCP peer's address; `X-Forwarded-For`'s first entry, else `X-Real-IP`, when trusted. */
export function clientAddress(request: Request, peer: PeerSource | null | undefined, trust: TrustProxy): string {
  const direct = peer?.requestIP(request)?.address ?? "";
  if (trust === "none" || (trust === "loopback" && !isLoopback(direct))) return normalize(direct);
  const forwarded = request.headers.get("x-forwarded-for");
  if (forwarded) {
    const comma = forwarded.indexOf(",");
    const first = (comma < 0 ? forwarded : forwarded.slice(0, comma)).trim();
    if (first) return normalize(first);
  }
  const real = request.headers.get("x-real-ip")?.trim();
  return normalize(real || direct);
}

/** `::ffff:1.2.3.4` is 1.2.3.4; header values are cut so that junk cannot grow a bucket name. */
function normalize(ip: string): string {
  const s = ip.slice(0, 64).toLowerCase();
  return s.startsWith("::ffff:") && s.includes(".") ? s.slice(7) : s;
}

/**
 * A client address as stored: its salted hash, and a slot where the limiter keeps the address's
 * count (src/limits/address-counter.ts), so that the hot path finds both with one lookup.
 */
export interface HashedAddress {
  readonly hash: string;
  count?: unknown;
}

let hashSalt = "";
// The addresses seen lately (an address unused while 100,000 others came in is hashed again when
// it comes back): a visitor's page views come from one address, and the hasher was a tenth of a
// cached DNI lease.
const hashed = new Generations<string, HashedAddress>(100_000);

/** The address's SHA-1 of the salt joined to it, hex (api-v1.md: the stored form of a client address). */
export function hashedAddress(salt: string, ip: string): HashedAddress {
  if (salt !== hashSalt) {
    hashSalt = salt;
    hashed.clear();
  }
  let found = hashed.get(ip);
  if (found === undefined) {
    found = { hash: new Bun.CryptoHasher("sha1").update(salt + ip).digest("hex") };
    hashed.set(ip, found);
  }
  return found;
}

export const hashAddress = (salt: string, ip: string): string => hashedAddress(salt, ip).hash;
