// The shapes this feature runs on, as DESIGN.md gives them (src/clock.ts, src/jobs). Stand-ins
// until the restructure lands; structurally identical, so the handlers plug in unchanged.
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export interface Job {
  id: number;
  kind: string;
  ref: number | null;
  grp: string | null;
  payload: unknown;
  attempts: number;
}

export type JobResult = { done: true } | { retryAt: Date; error?: string };
