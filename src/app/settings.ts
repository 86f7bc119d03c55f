// Settings a provisioning file may give (operations.md §3 `settings`) that the service reads at
// start; the environment wins over them. (COMMS_INBOUND_LIST_ID is read by each query instead, so
// a provisioning run takes effect at once.)
import { randomBytes } from "node:crypto";
import { withoutTrailingSlashes, type Config } from "../config";
import type { Sql } from "../db/client";

/** The configuration with the provisioned BASE_URL applied where the environment gives none. */
export async function withProvisionedSettings(sql: Sql, config: Config): Promise<Config> {
  if (config.baseUrlFromEnv) return config;
  const [row] = await sql<{ url: string }[]>`
    select value #>> '{}' as url from settings where key = 'BASE_URL' and jsonb_typeof(value) = 'string'`;
  return row ? { ...config, baseUrl: withoutTrailingSlashes(row.url) } : config;
}

const GENERATED_SALT = "generated_ip_salt";

/**
 * The salt of client-address hashes (DNI's stored IP hashes, the address buckets of limits):
 * NPK_IP_SALT, else a random salt generated once per installation and kept in the database, so
 * that every instance and every restart hashes an address the same way (operations.md §2).
 */
export async function loadIpSalt(sql: Sql, config: Config): Promise<string> {
  if (config.ipSalt) return config.ipSalt;
  // The first instance to start writes it; the others, racing, keep the one that won.
  await sql`
    insert into settings (key, value) values (${GENERATED_SALT}, ${sql.json(randomBytes(32).toString("hex"))})
    on conflict (key) do nothing`;
  const [row] = await sql<{ salt: string }[]>`select value #>> '{}' as salt from settings where key = ${GENERATED_SALT}`;
  return row.salt;
}

const UNSUBSCRIBE_KEY = "generated_unsubscribe_key";

/**
 * The key that signs email unsubscribe links (src/messages/unsubscribe.ts): 32 random bytes made
 * once per installation and kept in the database, so that every instance signs and checks alike and
 * a link keeps working across restarts (and a dump and restore). Deleting the row makes a new key
 * at the next start, and every link already sent stops working.
 */
export async function loadUnsubscribeKey(sql: Sql): Promise<Buffer> {
  // The first instance to start writes it; the others, racing, keep the one that won.
  await sql`
    insert into settings (key, value) values (${UNSUBSCRIBE_KEY}, ${sql.json(randomBytes(32).toString("hex"))})
    on conflict (key) do nothing`;
  const [row] = await sql<{ key: string }[]>`select value #>> '{}' as key from settings where key = ${UNSUBSCRIBE_KEY}`;
  return Buffer.from(row.key, "hex");
}
