// Concurrent point reads merged into one statement per round trip.
//
// Each statement costs PostgreSQL and postgres.js a fixed amount of protocol work beside the read
// itself: on the hottest reads (get lead, CTI lookup), that was most of the request. A Batcher
// sends what is waiting at once when a slot is free, one statement for all of it; while every slot
// is busy, new reads wait and go together in the next statement. At low load each read still goes
// alone and at once; under load each statement carries about (concurrent reads ÷ slots) of them.
import { AppError } from "../errors";
import { DEADLINE_MS } from "./deadline";

/**
 * The hot reads' batching. One statement goes whenever none is out; a second overlaps it only once
 * eight reads wait, so that the database answers one batch while this process handles the other,
 * without splitting the reads into many small statements. A batch of N point reads costs PostgreSQL
 * about 10 + 3N µs. On the 2-core bench machine at 32 connections: one slot left a third of the
 * CPU idle waiting on the statement out; two or four plain slots made batches of 4–7 and every
 * read dearer; two slots overlapping at eight made batches of ~9 and the best throughput.
 */
export const hotReads = <In, Out>(run: (inputs: In[]) => Promise<Out[]>, deadlineMs: number | null = null) =>
  new Batcher(run, { slots: 2, overlapAt: 8, ...(deadlineMs === null ? {} : { timeoutMs: deadlineMs }) });

interface Waiting<In, Out> {
  input: In;
  resolve(out: Out): void;
  reject(err: unknown): void;
}

export interface BatcherOptions {
  /** Statements in flight at once. */
  slots: number;
  /**
   * While a statement is out, another starts only once this many reads wait (default 1: whenever a
   * slot is free), so that a second slot overlaps work without splitting batches into small ones.
   */
  overlapAt?: number;
  /** Reads per statement at most. */
  max?: number;
  /**
   * A statement not answered within this is given up on: its reads fail as `unavailable` and its
   * slot is freed, so that a hung connection cannot hold the batcher after the database is back.
   * Default: the requests' own deadline, DEADLINE_MS; an instance started with another
   * (Config.deadlineMs, the tests') passes its own.
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
  private readonly overlapAt: number;

  /** `run` answers one output per input, in the inputs' order. */
  constructor(
    private readonly run: (inputs: In[]) => Promise<Out[]>,
    options: BatcherOptions,
  ) {
    this.slots = Math.max(1, options.slots);
    this.max = options.max ?? 256;
    this.timeoutMs = options.timeoutMs ?? DEADLINE_MS;
    this.overlapAt = options.overlapAt ?? 1;
  }

  load(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.waiting.push({ input, resolve, reject });
      // Reads arriving in the same turn of the event loop share the statement.
      if (!this.scheduled && this.mayStart()) {
        this.scheduled = true;
        queueMicrotask(() => {
          this.scheduled = false;
          this.dispatch();
        });
      }
    });
  }

  /** A statement starts when none is out, or when a slot is free and enough reads wait to fill it. */
  private mayStart(): boolean {
    const n = this.waiting.length;
    return n > 0 && (this.inFlight === 0 || (this.inFlight < this.slots && n >= this.overlapAt));
  }

  private dispatch(): void {
    while (this.mayStart()) {
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
      if (this.mayStart()) this.dispatch();
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
