// The salt of client-address hashes (DNI's stored IP hashes, the address buckets of limits):
// NPK_IP_SALT, else a random salt generated once per installation and kept in the database, so
// that every instance and every restart hashes an address the same way (operations.md §2).
import { randomBytes } from "node:crypto";
import type { Config } from "../config";
import type { Sql } from "../db/client";

const SETTING = "generated_ip_salt";

export async function loadIpSalt(sql: Sql, config: Config): Promise<string> {
  if (config.ipSalt) return config.ipSalt;
  // The first instance to start writes it; the others, racing, keep the one that won.
  await sql`
    insert into settings (key, value) values (${SETTING}, ${sql.json(randomBytes(32).toString("hex"))})
    on conflict (key) do nothing`;
  const [row] = await sql<{ salt: string }[]>`select value #>> '{}' as salt from settings where key = ${SETTING}`;
  return row.salt;
}
