// API key material: generation and hashing. Plaintext keys exist only in the response that
// creates them; the database and the in-memory cache hold SHA-256 digests.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

export const SCOPES = [
  "leads:read",
  "leads:write",
  "conversations:read",
  "messages:write",
  "cti",
  "metrics:write",
  "calls:write",
] as const;
export type Scope = (typeof SCOPES)[number];

export const isScope = (s: string): s is Scope => (SCOPES as readonly string[]).includes(s);

/** A new key: `lk_` and 32 random bytes, base64url (43 characters). */
export function generateKey(): string {
  return "lk_" + randomBytes(32).toString("base64url");
}

/** Keys are high-entropy random strings, so one SHA-256 is the right hash (no slow KDF needed). */
export function hashKey(plaintext: string): Buffer {
  return createHash("sha256").update(plaintext, "utf8").digest();
}

export function keyPrefix(plaintext: string): string {
  return plaintext.slice(0, 10);
}

export function sameHash(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
