// The client's address, as TRUST_PROXY says to take it, and its salted hash (raw addresses are
// never stored).
import type { TrustProxy } from "../config";

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

let hashSalt = "";
const hashes = new Map<string, string>();

/**
 * SHA-1 of the salt joined to the address, hex (api-v1.md: the stored form of a client address).
 * Kept for the addresses seen lately: a visitor's page views come from one address, and the hasher
 * was a tenth of a cached DNI lease.
 */
export function hashAddress(salt: string, ip: string): string {
  if (salt !== hashSalt) {
    hashSalt = salt;
    hashes.clear();
  }
  let hash = hashes.get(ip);
  if (hash === undefined) {
    hash = new Bun.CryptoHasher("sha1").update(salt + ip).digest("hex");
    if (hashes.size >= 100_000) hashes.clear();
    hashes.set(ip, hash);
  }
  return hash;
}
