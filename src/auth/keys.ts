// API key material: generation and hashing. Plaintext keys exist only in the response that
// creates them; the database and the in-memory cache hold SHA-256 digests.
import { randomBytes, timingSafeEqual } from "node:crypto";

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

/**
 * A key's SHA-256, base64: the key cache's index and, decoded, what api_keys.key_hash stores.
 * Keys are high-entropy random strings, so one SHA-256 is the right hash (no slow KDF needed).
 * Bun's one-shot hash allocates no hasher object: a third of createHash's cost per request.
 */
export const keyDigest = (plaintext: string): string => Bun.SHA256.hash(plaintext, "base64");

export const hashKey = (plaintext: string): Buffer => Buffer.from(keyDigest(plaintext), "base64");

/**
 * What listings show of a generated key: `lk_` and its first 4 random characters (24 of its 256
 * bits), enough to tell keys apart and far too little to help find the rest. A key the operator
 * chose has no such prefix: its characters are not known to be random, so any of them stored in
 * clear could shorten an offline search of the unsalted hash (see CHOSEN_KEY_MIN_LENGTH).
 */
export const displayPrefix = (generated: string): string => generated.slice(0, 7);

/**
 * Chosen keys shorter than this are accepted (existing ones must keep working) but warned about:
 * one SHA-256 per guess is only safe for keys with far more entropy than a person picks in 16
 * characters.
 */
export const CHOSEN_KEY_MIN_LENGTH = 32;

export function sameHash(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Whether two strings are equal, in a time that depends on their lengths only, never on how many
 * of their first characters agree (`===` stops at the first difference).
 */
export function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
