import type { KeyStore } from "../auth/service";
import type { Clock } from "../clock";
import type { Config } from "../config";
import type { Sql } from "../db/client";
import type { Limits } from "../limits/limits";

/** What routes and workers are given; built once at start (src/app/server.ts) or by a test. */
export interface Deps {
  sql: Sql;
  config: Config;
  clock: Clock;
  keys: KeyStore;
  limits: Limits;
  /** The salt of client-address hashes: NPK_IP_SALT, else generated once per installation. */
  ipSalt: string;
  /** On the embedded database: one connection, one process. */
  embedded: boolean;
  /**
   * Argon2id's cost (KiB, passes) for the passwords the console sets and its unknown-account check:
   * PASSWORD_COST of src/console/users.ts, whose PasswordCost this is (written out: http imports no feature).
   */
  passwordCost: { memoryCost: number; timeCost: number };
}
