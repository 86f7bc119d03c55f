// Concurrent point reads merged into one statement per round trip.
//
// Each statement costs PostgreSQL and postgres.js a fixed amount of protocol work beside the read
// itself: on the hottest reads (get lead, CTI lookup), that was most of the request. A Batcher
// sends what is waiting at once when a slot is free, one statement for all of it; while every slot
// is busy, new reads wait and go together in the next statement. At low load each read still goes
// alone and at once; under load each statement carries about (concurrent reads ÷ slots) of them.
import { AppError } from "../http/errors";

/**
 * Statements in flight per kind of hot read. One: while it is answered the next batch fills, and a
 * batch of N point reads costs PostgreSQL about 10 + 3N µs, so one statement at a time serves far
 * more reads than this process can send. On the 2-core bench machine, more slots only made the
 * batches smaller and every read dearer (1 slot: batches of ~14 at 32 connections; 4 slots: ~4).
 */
export const HOT_READ_SLOTS = 1;

interface Waiting<In, Out> {
  input: In;
  resolve(out: Out): void;
  reject(err: unknown): void;
}

export interface BatcherOptions {
  /** Statements in flight at once. */
  slots: number;
  /** Reads per statement at most. */
  max?: number;
  /**
   * A statement not answered within this is given up on: its reads fail as `unavailable` and its
   * slot is freed, so that a hung connection cannot hold the batcher after the database is back.
   * Default: 1 s, the requests' own deadline (src/http/respond.ts).
   */
  timeoutMs?: number;
}

export class Batcher<In, Out> {
  private waiting: Waiting<In, Out>[] = [];
  private inFlight = 0;
  private scheduled = false;
  private readonly slots: number;
  private readonly max: number;
  private readonly timeoutMs: number;

  /** `run` answers one output per input, in the inputs' order. */
  constructor(
    private readonly run: (inputs: In[]) => Promise<Out[]>,
    options: BatcherOptions,
  ) {
    this.slots = Math.max(1, options.slots);
    this.max = options.max ?? 256;
    this.timeoutMs = options.timeoutMs ?? 1000;
  }

  load(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.waiting.push({ input, resolve, reject });
      // Reads arriving in the same turn of the event loop share the statement.
      if (!this.scheduled && this.inFlight < this.slots) {
        this.scheduled = true;
        queueMicrotask(() => {
          this.scheduled = false;
          this.dispatch();
        });
      }
    });
  }

  private dispatch(): void {
    while (this.waiting.length > 0 && this.inFlight < this.slots) {
      const batch = this.waiting.length <= this.max ? this.waiting : this.waiting.slice(0, this.max);
      this.waiting = batch === this.waiting ? [] : this.waiting.slice(this.max);
      this.send(batch);
    }
  }

  private send(batch: Waiting<In, Out>[]): void {
    this.inFlight++;
    let settled = false;
    const finish = () => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      this.inFlight--;
      if (this.waiting.length > 0) this.dispatch();
      return true;
    };
    const timer = setTimeout(() => {
      if (finish()) for (const w of batch) w.reject(new AppError("unavailable", "the database did not answer in time"));
    }, this.timeoutMs);
    let outputs: Promise<Out[]>;
    try {
      outputs = this.run(batch.map((w) => w.input));
    } catch (err) {
      outputs = Promise.reject(err);
    }
    outputs.then(
      (outs) => {
        if (finish()) batch.forEach((w, i) => w.resolve(outs[i]));
      },
      (err) => {
        if (finish()) for (const w of batch) w.reject(err);
      },
    );
  }
}

/**
 * Rows of a batched statement put back in the order of its inputs, by their `i` column (the
 * inputs' `with ordinality`, from 1).
 */
export function inInputOrder<R extends { i: number }>(rows: readonly R[], count: number): R[] {
  const out = new Array<R>(count);
  for (const row of rows) out[row.i - 1] = row;
  return out;
}
