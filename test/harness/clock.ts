// A clock that moves only when a test moves it (src/clock.ts): time rules are tested by setting
// it, never by sleeping.
import type { Clock } from "../../src/clock";

export class ManualClock implements Clock {
  constructor(private t: number = Date.now()) {}

  now(): number {
    return this.t;
  }

  set(ms: number | Date): void {
    this.t = typeof ms === "number" ? ms : ms.getTime();
  }

  advance(ms: number): void {
    this.t += ms;
  }
}
