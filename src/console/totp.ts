// Time-based one-time codes (RFC 6238: HMAC-SHA1, 30-second steps, 6 digits), the second factor a
// console user may turn on. Codes of the step before and after are accepted (clocks drift), and a
// step once used is refused (a code overheard cannot be replayed).
import { createHmac, randomBytes } from "node:crypto";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
export const STEP_MS = 30_000;

export function toBase32(bytes: Uint8Array): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

export function fromBase32(text: string): Buffer {
  const clean = text.toUpperCase().replace(/[\s=-]/g, "");
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const c of clean) {
    const v = ALPHABET.indexOf(c);
    if (v < 0) throw new Error("not base32");
    value = (value << 5) | v;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** A new secret: 20 random bytes (RFC 4226's recommended length), base32 as authenticator apps take it. */
export const newTotpSecret = (): string => toBase32(randomBytes(20));

/** The 6-digit code of `step` (RFC 4226 HOTP). */
export function codeAt(secret: string, step: number): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac("sha1", fromBase32(secret)).update(counter).digest();
  const offset = mac[mac.length - 1]! & 15;
  const n = (mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000;
  return String(n).padStart(6, "0");
}

export const stepOf = (now: number) => Math.floor(now / STEP_MS);

/** The step whose code `code` is (now's, or one either side), later than `lastUsed`; else null. */
export function matchingStep(secret: string, code: string, now: number, lastUsed: number): number | null {
  const given = code.replace(/\s/g, "");
  if (!/^\d{6}$/.test(given)) return null;
  const step = stepOf(now);
  for (const s of [step - 1, step, step + 1]) {
    if (s > lastUsed && codeAt(secret, s) === given) return s;
  }
  return null;
}

/** What an authenticator app scans or is given: `otpauth://totp/Leadline:<email>?secret=…&issuer=Leadline`. */
export const otpauthUri = (secret: string, email: string, issuer = "Leadline") =>
  `otpauth://totp/${encodeURIComponent(issuer)}:${encodeURIComponent(email)}?secret=${secret}&issuer=${encodeURIComponent(issuer)}&algorithm=SHA1&digits=6&period=30`;
