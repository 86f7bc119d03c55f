import type { Passwords } from "../auth/passwords";
import type { KeyStore } from "../auth/service";
import type { Clock } from "../clock";
import type { Config } from "../config";
import type { FeedHub } from "../feed/hub";
import type { Sql } from "../db/client";
import type { Limits } from "../limits/limits";

/** What routes and workers are given; built once at start (src/app/server.ts) or by a test. */
export interface Deps {
  sql: Sql;
  config: Config;
  clock: Clock;
  keys: KeyStore;
  limits: Limits;
  /** Console password hashing and checks, a bounded number at once (src/auth/passwords.ts). */
  passwords: Passwords;
  /** The salt of client-address hashes: NPK_IP_SALT, else generated once per installation. */
  ipSalt: string;
  /** Signs email unsubscribe links (src/messages/unsubscribe.ts): generated once per installation. */
  unsubscribeKey: Buffer;
  /** The live change feed's end in this process: what the workspace's event streams subscribe to. */
  feed: FeedHub;
  /** On the embedded database: one connection, one process. */
  embedded: boolean;
}
