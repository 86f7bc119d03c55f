// Micro-benchmark of the client-address hash (issue 27 §10): the salted SHA-1 it replaced, and the
// HMAC-SHA-256 keyed by the salt three ways — node:crypto's createHmac per call, a keyed
// Bun.CryptoHasher per call, and a copy of one keyed hasher per call (what src/http/client.ts
// does; each way is checked to give the hash hashedAddress stores). The
// hash is computed once per address not seen lately (hashedAddress caches the rest), so this is
// the cost a new DNI visitor's first lease pays. In process; no server or database.
//
//   node_modules/.bin/bun bench/address-hash.ts
import { createHmac } from "node:crypto";
import { hashedAddress } from "../src/http/client";

const SALT = "9f1c2e7a4b0d8c3e6f5a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a";
const N = 200_000;
const ROUNDS = 7;
const addresses = Array.from({ length: N }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
const keyed = new Bun.CryptoHasher("sha256", SALT);

const ways: [string, (text: string) => string][] = [
  ["salted SHA-1 (before)", (t) => new Bun.CryptoHasher("sha1").update(SALT + t).digest("hex")],
  ["HMAC-SHA-256, createHmac per call", (t) => createHmac("sha256", SALT).update(t).digest("hex")],
  ["HMAC-SHA-256, keyed Bun.CryptoHasher per call", (t) => new Bun.CryptoHasher("sha256", SALT).update(t).digest("hex")],
  ["HMAC-SHA-256, copy of one keyed hasher", (t) => keyed.copy().update(t).digest("hex")],
];

// What the service stores is what is measured here.
const service = hashedAddress(SALT, { address: "203.0.113.9", bucket: "203.0.113.9" }).hash;
if (ways.slice(1).some(([, hash]) => hash("203.0.113.9") !== service)) throw new Error("a way here is not the service's HMAC-SHA-256");

// Rounds interleave the ways, so a busy machine slows all of them alike; the best round counts.
const best = new Map<string, number>();
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, hash] of ways) {
    const start = Bun.nanoseconds();
    let length = 0;
    for (const a of addresses) length += hash(a).length;
    const ns = (Bun.nanoseconds() - start) / N;
    if (length === 0) throw new Error("no output");
    best.set(name, Math.min(best.get(name) ?? Infinity, ns));
  }
}
const before = best.get(ways[0][0])!;
console.log(`## address hash: ns per address, best of ${ROUNDS} rounds of ${N.toLocaleString("en")} addresses\n`);
console.log("| way | ns | × salted SHA-1 |\n|---|---|---|");
for (const [name] of ways) console.log(`| ${name} | ${best.get(name)!.toFixed(0)} | ${(best.get(name)! / before).toFixed(2)} |`);
