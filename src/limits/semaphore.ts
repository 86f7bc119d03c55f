// A bound on work running at once, with a short line and no more: `slots` run, `waiting` wait in
// arrival order, and one more is refused at once (the caller answers 503 with Retry-After). Made
// for password checks (Argon2id, 64 MiB and a core for a few hundred milliseconds each): with no
// bound, 60 sign-ins at once kept 60 hashes on two cores and a real one waited 22 s behind them
// (bench/sign-in.ts); with an unbounded line, the same wait moved into the queue.
//
// Where a caller may wait (`Place`) is the caller's to say:
// - `line`: the ordinary line, while it has room;
// - `now`: only a slot free now, never the line — the sign-in of an address that has already
//   failed this hour, so that a flood retrying at once cannot keep the line full;
// - `front`: a line of its own (as long as the other), served before the ordinary one — a user
//   signing in from an address they have signed in from before, who then waits behind the checks
//   already running and no one else, however many fresh addresses a flood brings.

/** Gives a slot back; calling it again does nothing. */
export type Release = () => void;

export type Place = "line" | "now" | "front";

export class Semaphore {
  private running = 0;
  private readonly front: ((release: Release) => void)[] = [];
  private readonly line: ((release: Release) => void)[] = [];

  constructor(
    readonly slots: number,
    readonly waiting: number,
  ) {
    if (!(slots >= 1)) throw new Error("a semaphore has at least one slot");
  }

  /** Work running now and work waiting for a slot (both lines). */
  get state(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.front.length + this.line.length };
  }

  /**
   * A slot: at once when one is free, else after the work ahead of it when its place has room;
   * null when every slot is taken and there is no room for it (nothing waits then).
   */
  acquire(place: Place = "line"): Promise<Release> | null {
    // Free slots go to the lines first (releaser): one is free only when nobody waits.
    if (this.running < this.slots) {
      this.running++;
      return Promise.resolve(this.releaser());
    }
    const queue = place === "front" ? this.front : place === "line" ? this.line : null;
    if (queue === null || queue.length >= this.waiting) return null;
    return new Promise<Release>((resolve) => queue.push(resolve));
  }

  /** Runs `work` in a slot; null (and `work` not run) when there is none for it (see acquire). */
  run<T>(work: () => Promise<T>, place: Place = "line"): Promise<T> | null {
    const slot = this.acquire(place);
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
      // The slot passes straight to the first waiting, so one arriving now cannot overtake it.
      const next = this.front.shift() ?? this.line.shift();
      if (next) next(this.releaser());
      else this.running--;
    };
  }
}
