// Every stored secret, in one place: orgs' Twilio auth token (`sms.auth_token`) and SMTP URL
// (`email.smtp_url`), and webhook endpoints' signing secret. The start-up check and rotation read
// them here; provisioning writes them, sealed, in src/provision/service.ts.
import type { Sql, Tx } from "../db/client";
import { inFormOf, keyId, openSecret, sealedBy, seal, SecretError } from "./seal";

export type SecretField = "sms.auth_token" | "email.smtp_url" | "webhook.secret" | "user.totp_secret" | "user.totp_pending";

export interface StoredSecret {
  field: SecretField;
  /** The org's, the webhook endpoint's or the console user's id, as text. */
  id: string;
  value: string;
}

/** Names a stored secret without showing it: "org 3's sms.auth_token", "webhook 7's secret". */
export const secretName = (s: Pick<StoredSecret, "field" | "id">) =>
  s.field === "webhook.secret"
    ? `webhook ${s.id}'s secret`
    : s.field.startsWith("user.")
      ? `user ${JSON.stringify(s.id)}'s two-step sign-in secret`
      : `org ${s.id}'s ${s.field}`;

export async function storedSecrets(sql: Sql | Tx): Promise<StoredSecret[]> {
  return sql<StoredSecret[]>`
    select 'sms.auth_token' as field, id::text, sms->>'auth_token' as value
    from orgs where jsonb_typeof(sms->'auth_token') = 'string'
    union all
    select 'email.smtp_url', id::text, email->>'smtp_url'
    from orgs where jsonb_typeof(email->'smtp_url') = 'string'
    union all
    select 'webhook.secret', id::text, secret from webhooks
    union all
    select 'user.totp_secret', id, totp_secret from users where totp_secret is not null
    union all
    select 'user.totp_pending', id, totp_pending from users where totp_pending is not null
    order by 1, 2`;
}

/**
 * At start: every stored secret opens with the key this process holds, or the service refuses to
 * start with one line saying which key sealed them (rather than failing every send and delivery
 * later). Opening them also warms the cache the hot paths read.
 */
export async function checkStoredSecrets(sql: Sql | Tx, key: Buffer | null): Promise<{ sealed: number; plain: number }> {
  const all = await storedSecrets(sql);
  const failed: string[] = [];
  let sealed = 0;
  for (const s of all) {
    if (sealedBy(s.value) === null) continue;
    sealed++;
    try {
      openSecret(key, s.value, secretName(s));
    } catch (err) {
      if (!(err instanceof SecretError)) throw err;
      failed.push(err.message);
    }
  }
  if (failed.length > 0) {
    const more = failed.length > 1 ? ` (and ${failed.length - 1} more)` : "";
    throw new SecretError(`${failed[0]}${more}; set LEADLINE_SECRET_KEY to the key that sealed them, or re-seal them with \`leadline secrets rotate\``);
  }
  return { sealed, plain: all.length - sealed };
}

export interface Rotation {
  /** Sealed under the old key, now under the new one. */
  resealed: number;
  /** Stored as given, now sealed. */
  sealed: number;
  /** Already sealed under the new key. */
  unchanged: number;
}

/**
 * Re-seals every stored secret under `key` in one transaction: values sealed by `old` are opened
 * with it, values stored as given are sealed, values already under `key` are left alone (so a
 * second run changes nothing). One value that opens with neither key and nothing is changed.
 */
export async function rotateSecrets(sql: Sql, key: Buffer, old: Buffer | null): Promise<Rotation> {
  const newId = keyId(key);
  return sql.begin(async (tx) => {
    // Row locks, not table locks: serve keeps reading (and inserting leads that reference orgs)
    // while this runs; a provisioning run that writes these rows waits for it.
    await tx`select id from orgs where sms ? 'auth_token' or email ? 'smtp_url' order by id for no key update`;
    await tx`select id from webhooks order by id for no key update`;
    await tx`select id from users where totp_secret is not null or totp_pending is not null order by id for no key update`;
    const out: Rotation = { resealed: 0, sealed: 0, unchanged: 0 };
    const writes: StoredSecret[] = [];
    for (const s of await storedSecrets(tx)) {
      if (inFormOf(key, s.value)) {
        out.unchanged++;
        continue;
      }
      const by = sealedBy(s.value);
      if (by !== null && old === null) {
        throw new SecretError(`${secretName(s)} is sealed with key ${by}: set LEADLINE_SECRET_KEY_OLD to that key (the new key is ${newId})`);
      }
      if (by !== null && by !== keyId(old!)) {
        throw new SecretError(`${secretName(s)} is sealed with key ${by}, and LEADLINE_SECRET_KEY_OLD is key ${keyId(old!)}`);
      }
      const plaintext = by === null ? s.value : openSecret(old, s.value, secretName(s));
      writes.push({ ...s, value: seal(key, plaintext) });
      if (by === null) out.sealed++;
      else out.resealed++;
    }
    await writeSecrets(tx, writes);
    return out;
  });
}

async function writeSecrets(tx: Tx, writes: StoredSecret[]): Promise<void> {
  const of = (field: SecretField) => {
    const rows = writes.filter((w) => w.field === field);
    return [rows.map((w) => w.id), rows.map((w) => w.value)] as const;
  };
  // updated_at is left alone: the settings did not change, only their stored form.
  const [smsIds, smsValues] = of("sms.auth_token");
  if (smsIds.length) {
    await tx`
      update orgs o set sms = jsonb_set(o.sms, '{auth_token}', to_jsonb(v.value))
      from unnest(${smsIds}::bigint[], ${smsValues}::text[]) as v(id, value) where o.id = v.id`;
  }
  const [emailIds, emailValues] = of("email.smtp_url");
  if (emailIds.length) {
    await tx`
      update orgs o set email = jsonb_set(o.email, '{smtp_url}', to_jsonb(v.value))
      from unnest(${emailIds}::bigint[], ${emailValues}::text[]) as v(id, value) where o.id = v.id`;
  }
  for (const field of ["totp_secret", "totp_pending"] as const) {
    const [userIds, userValues] = of(`user.${field}`);
    if (userIds.length) {
      await tx`
        update users u set ${tx(field)} = v.value
        from unnest(${userIds}::text[], ${userValues}::text[]) as v(id, value) where u.id = v.id`;
    }
  }
  const [hookIds, hookValues] = of("webhook.secret");
  if (hookIds.length) {
    await tx`
      update webhooks w set secret = v.value
      from unnest(${hookIds}::bigint[], ${hookValues}::text[]) as v(id, value) where w.id = v.id`;
  }
}
