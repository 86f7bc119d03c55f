// The client's address, as TRUST_PROXY says to take it, and its salted hash (raw addresses are
// never stored).
//
// A proxy is trusted for what it adds, never for what it passes on. `X-Forwarded-For` is a chain
// `client, proxy1, proxy2`: each proxy appends the address it was connected from, and anything
// left of that was written by whoever connected to it. So the chain is read from the right, the
// TCP peer first: while the address at hand is a trusted proxy, the one it reports (the next entry
// to the left) replaces it; the first untrusted address is the client. With `loopback` only
// loopback peers and entries are proxies (nginx on the same host); with `all` every hop is, so the
// walk ends at the leftmost entry; with `none` the TCP peer is the client.
import type { TrustProxy } from "../config";
import { Generations } from "../generations";
import { ipBucket, ipText, isLoopback, parseIp, type Ip } from "./address";

export interface PeerSource {
  requestIP(request: Request): { address: string } | null;
}

/** The client, as far as TRUST_PROXY lets us know it: its address and the bucket it counts in. */
export interface Client {
  /** The canonical text of the address (`unknown` when the peer's address is not known). */
  readonly address: string;
  /** IPv4: the address; IPv6: its /64 (`2001:db8:1:2::/64`). */
  readonly bucket: string;
}

const trusts = (trust: TrustProxy, ip: Ip) => trust === "all" || (trust === "loopback" && isLoopback(ip));

const clientOf = (ip: Ip): Client => (ip.v === 4 ? { address: ip.text, bucket: ip.text } : { address: ipText(ip), bucket: ipBucket(ip) });

/** Bun always knows the peer; a value that is not an address is kept as it came (cut short), never trusted. */
function peerClient(raw: string): Client {
  const text = raw.slice(0, 64).toLowerCase() || "unknown";
  return { address: text, bucket: text };
}

/**
 * The client per TRUST_PROXY (see the top of this file). `X-Real-IP` is read only when there is no
 * `X-Forwarded-For` and the peer is trusted. An entry that is not an address ends the walk: the
 * client is then the trusted hop that passed it on (the nearest address that is one).
 */
export function clientAddress(request: Request, peer: PeerSource | null | undefined, trust: TrustProxy): Client {
  const direct = peer?.requestIP(request)?.address ?? "";
  let ip = parseIp(direct);
  if (ip === null) return peerClient(direct);
  if (!trusts(trust, ip)) return clientOf(ip);
  const forwarded = request.headers.get("x-forwarded-for");
  if (forwarded === null || forwarded.trim() === "") {
    const real = parseIp(request.headers.get("x-real-ip") ?? "");
    return clientOf(real ?? ip);
  }
  // From the right; a header longer than any honest chain is read only at its right end.
  let end = forwarded.length;
  const stop = Math.max(0, end - 1024);
  while (end > stop && trusts(trust, ip)) {
    const comma = forwarded.lastIndexOf(",", end - 1);
    const start = comma < stop ? stop : comma + 1;
    const next = parseIp(forwarded.slice(start, end));
    if (next === null) break;
    ip = next;
    if (comma < stop) break;
    end = comma;
  }
  return clientOf(ip);
}

/**
 * A client address as stored: its salted hash, and a slot where the limiter keeps the address's
 * count (src/limits/address-counter.ts), so that the hot path finds both with one lookup. `bucket`
 * is the record of the address's bucket (itself for IPv4): what the limits and the DNI holds cap
 * count by.
 */
export interface HashedAddress {
  readonly hash: string;
  count?: unknown;
  readonly bucket: HashedAddress;
}

let hashSalt = "";
// The addresses seen lately (an address unused while 100,000 others came in is hashed again when
// it comes back): a visitor's page views come from one address, and the hasher was a tenth of a
// cached DNI lease.
const hashed = new Generations<string, HashedAddress>(100_000);
/** HMAC-SHA-256 keyed by hashSalt, fed nothing: each hash starts from a copy of it. */
let keyed = new Bun.CryptoHasher("sha256", hashSalt);

/**
 * HMAC-SHA-256 of the text keyed by the salt, hex. A salted SHA-1 (`sha1(salt + address)`, until
 * issue 27) is a plain hash of a known layout; HMAC is the keyed construction made for this. A copy
 * of the keyed hasher skips hashing the key again: about half the SHA-1's time per address, where
 * createHmac per call takes 1.7 times it (bench/address-hash.ts).
 */
const hmac = (text: string) => keyed.copy().update(text).digest("hex");

/** The address's HMAC-SHA-256 keyed by the salt, hex (the stored form of a client address), with its bucket's. */
export function hashedAddress(salt: string, client: Client): HashedAddress {
  if (salt !== hashSalt) {
    hashSalt = salt;
    keyed = new Bun.CryptoHasher("sha256", salt);
    hashed.clear();
  }
  let found = hashed.get(client.address);
  if (found === undefined) {
    if (client.bucket === client.address) {
      const self: { hash: string; count?: unknown; bucket?: HashedAddress } = { hash: hmac(client.address) };
      self.bucket = self as HashedAddress;
      found = self as HashedAddress;
    } else {
      // Bucket records live under their own text (a /64 never collides with an address).
      let bucket = hashed.get(client.bucket);
      if (bucket === undefined) {
        const b: { hash: string; count?: unknown; bucket?: HashedAddress } = { hash: hmac(client.bucket) };
        b.bucket = b as HashedAddress;
        bucket = b as HashedAddress;
        hashed.set(client.bucket, bucket);
      }
      found = { hash: hmac(client.address), bucket };
    }
    hashed.set(client.address, found);
  }
  return found;
}

/** The salted hash of the client's bucket: the name the booking write limit counts it under. */
export const hashBucket = (salt: string, client: Client): string => hashedAddress(salt, client).bucket.hash;
