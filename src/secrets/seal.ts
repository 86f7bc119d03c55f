// Provider credentials and webhook secrets at rest. With LEADLINE_SECRET_KEY set, a value is
// stored as `enc:v1:<key id>:<base64(iv | ciphertext | tag)>` (AES-256-GCM, random 12-byte IV);
// without it, as given. Reading accepts both, so a first run needs no key and setting one later
// only needs `leadline secrets rotate` to seal what is already stored.
//
// The key id (8 hex digits of the key's SHA-256) says which key sealed a value: a process holding
// another key (or none) fails with a line naming both ids instead of a bare "unable to
// authenticate", and rotation knows which values still need the old key.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

const PREFIX = "enc:v1:";
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A stored value that cannot be opened with the key this process holds. */
export class SecretError extends Error {}

const ids = new WeakMap<Buffer, string>();

/** First 8 hex digits of SHA-256 of the key: names a key without revealing it. */
export function keyId(key: Buffer): string {
  let id = ids.get(key);
  if (id === undefined) ids.set(key, (id = createHash("sha256").update(key).digest("hex").slice(0, 8)));
  return id;
}

export const isSealed = (stored: string): boolean => stored.startsWith(PREFIX);

/** The id of the key that sealed `stored`, or null for a value stored as given. */
export function sealedBy(stored: string): string | null {
  if (!isSealed(stored)) return null;
  const id = stored.slice(PREFIX.length, PREFIX.length + 8);
  return /^[0-9a-f]{8}$/.test(id) && stored[PREFIX.length + 8] === ":" ? id : "?";
}

/** The stored form of `plaintext`: sealed under `key`, or as given when there is no key. */
export function seal(key: Buffer | null, plaintext: string): string {
  if (key === null) return plaintext;
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const body = Buffer.concat([iv, cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
  return `${PREFIX}${keyId(key)}:${body.toString("base64")}`;
}

// Opened values by stored text. Sends and deliveries read the same few values over and over; a
// changed row has a new stored text (a fresh IV), so an entry never goes stale, only unused. The
// key id is checked before the cache is consulted, so a process never opens from the cache what
// its own key could not.
const CACHE_MAX = 10_000;
const opened = new Map<string, string>();

/**
 * The plaintext of a stored value. A value stored as given is returned as is (with or without a
 * key). Throws SecretError, naming `what`, when the value is sealed and the key is missing, is
 * another key, or does not authenticate it.
 */
export function openSecret(key: Buffer | null, stored: string, what = "a stored secret"): string {
  const by = sealedBy(stored);
  if (by === null) return stored;
  if (key === null) throw new SecretError(`${what} is sealed with key ${by} but LEADLINE_SECRET_KEY is not set`);
  const mine = keyId(key);
  if (by !== mine) throw new SecretError(`${what} is sealed with key ${by}, not with LEADLINE_SECRET_KEY (key ${mine})`);
  const hit = opened.get(stored);
  if (hit !== undefined) return hit;
  const body = Buffer.from(stored.slice(PREFIX.length + 9), "base64");
  let plaintext: string;
  try {
    if (body.length < IV_BYTES + TAG_BYTES) throw new Error("too short");
    const decipher = createDecipheriv("aes-256-gcm", key, body.subarray(0, IV_BYTES));
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
    plaintext = Buffer.concat([decipher.update(body.subarray(IV_BYTES, body.length - TAG_BYTES)), decipher.final()]).toString("utf8");
  } catch {
    throw new SecretError(`${what} is damaged: it does not authenticate under key ${mine}`);
  }
  if (opened.size >= CACHE_MAX) opened.clear();
  opened.set(stored, plaintext);
  return plaintext;
}

/** Whether `stored` is already in the form `key` gives (sealed by it, or plain without a key). */
export const inFormOf = (key: Buffer | null, stored: string): boolean =>
  key === null ? !isSealed(stored) : sealedBy(stored) === keyId(key);
