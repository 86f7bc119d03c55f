// Resolving a presented API key to its grants, with a bounded in-memory cache.
//
// Every key-authenticated request needs its key; a database round trip for it would cost as much
// as the request's own read. Entries live for a minute (unknown keys for ten seconds), and a
// `leadline_keys` notification, sent by every key change, empties the cache at once so that a
// revocation takes effect within milliseconds on every instance.
//
// The race that emptying alone leaves open: a lookup reads the key just before the revoke commits,
// the notification empties the cache, then the lookup's answer arrives and is cached for a minute.
// So every emptying bumps a generation, and a lookup caches its answer only when the generation it
// read before its query is still current (its own request may still pass: it began before the
// revoke committed).
import type { Clock } from "../clock";
import type { Sql } from "../db/client";
import { every, type Worker } from "../jobs/worker";
import { log, errorFields } from "../log";
import { keyDigest, sameHash, sameText } from "./keys";
import { findKeyByHash, recordLastUse } from "./queries";

export interface ApiKey {
  id: number;
  /** null: platform-global, not tenant-restricted. */
  orgId: number | null;
  scopes: ReadonlySet<string>;
  /** The bound agent user, or null. */
  agent: string | null;
}

const POSITIVE_TTL_MS = 60_000;
const NEGATIVE_TTL_MS = 10_000;
const MAX_ENTRIES = 10_000;

/** Last-use times are written at most this often per key. */
const LAST_USE_GRAIN_MS = 60_000;

export class KeyStore {
  private cache = new Map<string, { key: ApiKey | null; until: number }>();
  private lastUse = new Map<number, number>();
  private lastWritten = new Map<number, number>();
  // The digest of the last plaintext seen: `cached` and `resolve` run back to back for one request.
  private memo = { plaintext: "", id: "" };
  /** Bumped by every invalidate(); see the top of this file. */
  private generation = 0;

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
  ) {}

  /**
   * The key's SHA-256, base64: the cache's index. The memo usually holds a real key (the last one
   * seen), so a presented key is compared with it in constant time: `!==` would stop at the first
   * difference and take longer the more of a real key a guess has right.
   */
  private digest(plaintext: string): string {
    if (!sameText(this.memo.plaintext, plaintext)) this.memo = { plaintext, id: keyDigest(plaintext) };
    return this.memo.id;
  }

  /** From memory alone: the key, null for a key known to be bad, undefined when not cached. */
  cached(plaintext: string): ApiKey | null | undefined {
    const hit = this.cache.get(this.digest(plaintext));
    const t = this.clock.now();
    if (!hit || hit.until <= t) return undefined;
    if (hit.key) this.used(hit.key.id, t);
    return hit.key;
  }

  /** The active key for a plaintext, or null for unknown, inactive and revoked keys. */
  async resolve(plaintext: string): Promise<ApiKey | null> {
    const known = this.cached(plaintext);
    if (known !== undefined) return known;
    const id = this.digest(plaintext);
    const hash = Buffer.from(id, "base64");
    const generation = this.generation;
    const row = await findKeyByHash(this.sql, hash);
    const key =
      row && sameHash(row.key_hash, hash) && row.active && !row.revoked_at
        ? { id: row.id, orgId: row.org_id, scopes: new Set(row.scopes), agent: row.agent || null }
        : null;
    const t = this.clock.now();
    if (generation === this.generation) {
      if (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(id, { key, until: t + (key ? POSITIVE_TTL_MS : NEGATIVE_TTL_MS) });
    }
    if (key) this.used(key.id, t);
    return key;
  }

  private used(id: number, t: number): void {
    if (t - (this.lastWritten.get(id) ?? 0) >= LAST_USE_GRAIN_MS) this.lastUse.set(id, t);
  }

  invalidate(): void {
    this.generation++;
    this.cache.clear();
    this.memo = { plaintext: "", id: "" };
  }

  /**
   * Subscribes to key changes. postgres.js listens on a connection of its own (with the pool's
   * options, so TCP keepalive from connect()); when that connection closes it connects again and
   * re-listens, and the cache is dropped then too, since notifications sent while it was away are
   * lost. `direct`: a client on PostgreSQL itself, never a transaction pooler (src/db/open.ts).
   */
  async listen(direct: Sql = this.sql): Promise<void> {
    await direct.listen(
      "leadline_keys",
      () => this.invalidate(),
      () => this.invalidate(),
    );
  }

  /** Last-use times written every five seconds, and once more when stopped. */
  lastUseWorker(): Worker {
    return every("keys.last-use", 5_000, () => this.flushLastUse(), () => this.flushLastUse());
  }

  /** Writes the coalesced last-use times. */
  async flushLastUse(): Promise<void> {
    const t = this.clock.now();
    for (const [id, at] of this.lastWritten) if (t - at >= LAST_USE_GRAIN_MS) this.lastWritten.delete(id);
    if (this.lastUse.size === 0) return;
    const entries = [...this.lastUse];
    this.lastUse.clear();
    for (const [id, at] of entries) this.lastWritten.set(id, at);
    try {
      await recordLastUse(
        this.sql,
        entries.map(([id]) => id),
        entries.map(([, at]) => new Date(at)),
      );
    } catch (err) {
      for (const [id, at] of entries) {
        this.lastWritten.delete(id);
        if (!this.lastUse.has(id)) this.lastUse.set(id, at);
      }
      log.warn("recording key last use failed", errorFields(err));
    }
  }
}
