// Standard Webhooks signing (https://www.standardwebhooks.com): the receiver recomputes the
// HMAC over "{id}.{timestamp}.{body}" with the secret it was given and compares.
import { createHmac } from "node:crypto";

export const SECRET_PREFIX = "whsec_";

/** The signing key: the bytes whose base64 follows "whsec_" (provisioning checks the form). */
export function secretKey(secret: string): Buffer {
  const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  return Buffer.from(b64, "base64");
}

/** `v1,<base64 HMAC-SHA256>` of one attempt; `timestamp` in integer seconds. */
export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const mac = createHmac("sha256", secretKey(secret)).update(`${id}.${timestamp}.${body}`).digest("base64");
  return `v1,${mac}`;
}

/** The three headers of one attempt: the id is the event's, the same on every retry. */
export function signedHeaders(secret: string, id: string, timestamp: number, body: string): Record<string, string> {
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signature(secret, id, timestamp, body),
  };
}
