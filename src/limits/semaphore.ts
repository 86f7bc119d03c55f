// A bound on work running at once, with a short line and no more: `slots` run, `waiting` wait in
// arrival order, and one more is refused at once (the caller answers 503 with Retry-After). Made
// for password checks (Argon2id, 64 MiB and a core for a few hundred milliseconds each): with no
// bound, 60 sign-ins at once kept 60 hashes on two cores and a real one waited 22 s behind them
// (bench/sign-in.ts); with an unbounded line, the same wait moved into the queue. A caller may
// also ask for a slot only if one is free now (`wait` false): the sign-in of an address that has
// already failed this hour, so that a flood retrying at once cannot keep the line full and a freed
// slot goes to whoever waits in it first.

/** Gives a slot back; calling it again does nothing. */
export type Release = () => void;

export class Semaphore {
  private running = 0;
  private readonly line: ((release: Release) => void)[] = [];

  constructor(
    readonly slots: number,
    readonly waiting: number,
  ) {
    if (!(slots >= 1)) throw new Error("a semaphore has at least one slot");
  }

  /** Work running now and work waiting for a slot. */
  get state(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.line.length };
  }

  /**
   * A slot: at once when one is free, after the work ahead of it when the line has room (and
   * `wait`); null when every slot is taken and the line is full or not for this caller (nothing
   * waits then).
   */
  acquire(wait = true): Promise<Release> | null {
    // Free slots go to the line first (releaser): one is free only when nobody waits.
    if (this.running < this.slots) {
      this.running++;
      return Promise.resolve(this.releaser());
    }
    if (!wait || this.line.length >= this.waiting) return null;
    return new Promise<Release>((resolve) => this.line.push(resolve));
  }

  /** Runs `work` in a slot; null (and `work` not run) when there is none for it (see acquire). */
  run<T>(work: () => Promise<T>, wait = true): Promise<T> | null {
    const slot = this.acquire(wait);
    if (slot === null) return null;
    return slot.then(async (release) => {
      try {
        return await work();
      } finally {
        release();
      }
    });
  }

  private releaser(): Release {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      // The slot passes straight to the first in line, so one arriving now cannot overtake it.
      const next = this.line.shift();
      if (next) next(this.releaser());
      else this.running--;
    };
  }
}
