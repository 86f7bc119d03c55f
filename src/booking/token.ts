// Reschedule tokens: an appointment-specific capability given once, in the book answer.
//
// 32 random bytes, base64url (43 characters), stored only as hashes: the SHA-256 of its first 16
// bytes (the selector) finds the row, and the SHA-256 of the whole token is compared in constant
// time. A database reader holds nothing that reschedules, and the lookup's timing can tell an
// attacker about selector hashes at most, never about the other 128 bits the comparison checks.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

const BYTES = 32;
const SELECTOR_BYTES = 16;
const SHAPE = /^[A-Za-z0-9_-]{43}$/;

export interface IssuedToken {
  token: string;
  /** SHA-256 of the token's first 16 bytes: the row's lookup key. */
  selector: Buffer;
  /** SHA-256 of the whole token. */
  hash: Buffer;
}

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest();

export function issueToken(): IssuedToken {
  const raw = randomBytes(BYTES);
  return { token: raw.toString("base64url"), selector: sha256(raw.subarray(0, SELECTOR_BYTES)), hash: sha256(raw) };
}

/** The parts of a presented token, or null when it cannot be one of ours. */
export function readToken(token: string): { selector: Buffer; hash: Buffer } | null {
  if (!SHAPE.test(token)) return null;
  const raw = Buffer.from(token, "base64url");
  if (raw.length !== BYTES || raw.toString("base64url") !== token) return null;
  return { selector: sha256(raw.subarray(0, SELECTOR_BYTES)), hash: sha256(raw) };
}

/** Constant-time comparison of the presented token's hash with the stored one. */
export function tokenMatches(presented: Buffer, stored: Uint8Array): boolean {
  return stored.length === presented.length && timingSafeEqual(presented, stored);
}
