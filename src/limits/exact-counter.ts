// An hourly counter with one upsert per hit, exact across instances: for limits whose traffic is
// small (booking writes, 10 an hour per address), where a row write per hit costs nothing that
// matters. A bucket known to be over its limit is refused from memory, without a write.
import { hourOf, type Clock } from "../clock";
import type { Sql } from "../db/client";

export class ExactCounter {
  /** Buckets known to be over their limit, and the hour they were over in. */
  private over = new Map<string, number>();

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
  ) {}

  overFromMemory(scope: string, bucket: string, limit: number): boolean {
    const hour = this.over.get(scope + "\u0000" + bucket);
    return limit >= 0 && hour === hourOf(this.clock.now());
  }

  async take(scope: string, bucket: string, limit: number): Promise<boolean> {
    if (this.overFromMemory(scope, bucket, limit)) return false;
    const hour = hourOf(this.clock.now());
    const [row] = await this.sql<{ n: number }[]>`
      insert into rate_counters (scope, bucket, hour, n) values (${scope}, ${bucket}, ${hour}, 1)
      on conflict (scope, bucket, hour) do update set n = rate_counters.n + 1
      returning n`;
    if (row.n >= limit) {
      if (this.over.size >= 100_000) this.over.clear();
      this.over.set(scope + "\u0000" + bucket, hour);
    }
    return row.n <= limit;
  }

  /** The bucket's hits this hour; `limit` when it is known to be over (no database then). */
  async count(scope: string, bucket: string, limit: number): Promise<number> {
    if (this.overFromMemory(scope, bucket, limit)) return limit;
    const [row] = await this.sql<{ n: number }[]>`
      select n from rate_counters where scope = ${scope} and bucket = ${bucket} and hour = ${hourOf(this.clock.now())}`;
    return row?.n ?? 0;
  }

  /** Takes one hit back, and with it this instance's knowledge that the bucket is over. */
  async giveBack(scope: string, bucket: string): Promise<void> {
    this.over.delete(scope + "\u0000" + bucket);
    await this.sql`
      update rate_counters set n = n - 1
      where scope = ${scope} and bucket = ${bucket} and hour = ${hourOf(this.clock.now())} and n > 0`;
  }

  forgetPast(): void {
    const hour = hourOf(this.clock.now());
    for (const [id, h] of this.over) if (h < hour) this.over.delete(id);
  }
}
