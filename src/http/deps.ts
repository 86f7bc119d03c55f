import type { Config } from "../config";
import type { Sql } from "../db/client";
import type { KeyStore } from "../auth/service";
import type { RateLimiter } from "./rate-limit";

/** What route handlers are given; built once in server.ts (or by a test). */
export interface Deps {
  sql: Sql;
  config: Config;
  keys: KeyStore;
  limiter: RateLimiter;
  now: () => Date;
}
