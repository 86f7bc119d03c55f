// Slugs found to name no link, remembered for a few seconds: the booking API and page are public,
// and a caller repeating a made-up slug (or many) would otherwise cost a query per request.
// Bounded (10,000 slugs, least recently used dropped), so a flood of distinct made-up slugs costs
// memory no more than that. Links are created by provisioning, in another process with no
// notification to this one: a link created for a slug asked for just before is unknown here for
// up to UNKNOWN_LINK_TTL_MS. That staleness is accepted; a known link is never cached here.
import { LRUCache } from "lru-cache";
import type { Clock } from "../clock";

export const UNKNOWN_LINK_TTL_MS = 5_000;

export class UnknownLinks {
  /** Slug → the time (clock) until which it is answered unknown without a query. */
  private readonly until = new LRUCache<string, number>({ max: 10_000 });

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs = UNKNOWN_LINK_TTL_MS,
  ) {}

  has(slug: string): boolean {
    const until = this.until.get(slug);
    if (until === undefined) return false;
    if (this.clock.now() < until) return true;
    this.until.delete(slug);
    return false;
  }

  add(slug: string): void {
    this.until.set(slug, this.clock.now() + this.ttlMs);
  }
}
