// Password hashing and checking for the console, through one bound (src/limits/semaphore.ts): an
// Argon2id check takes 64 MiB and a core for a few hundred milliseconds, so as many run at once as
// there are cores, a few more wait, and the rest are answered "busy" at once (503 with
// Retry-After: docs/console-sign-in.md). Sign-in, the invite form and the two-step changes all
// check here; `leadline users passwd` hashes in its own process.
import { availableParallelism } from "node:os";
import { Semaphore, type Place } from "../limits/semaphore";

export interface Argon2Cost {
  /** KiB. */
  memoryCost: number;
  timeCost: number;
}

/** Bun's defaults, written down: 64 MiB, two passes. A guess costs what a sign-in costs. */
export const ARGON2_COST: Argon2Cost = { memoryCost: 65536, timeCost: 2 };

export interface PasswordOptions {
  /** Checks running at once; default the machine's cores. */
  slots?: number;
  /** Checks waiting for a slot; default four per slot (about a second and a half of work at 64 MiB). */
  waiting?: number;
  /** The cost of new hashes and of the check an unknown account is answered after. */
  cost?: Argon2Cost;
}

/**
 * What a full line answers: the seconds a client waits before trying again. The least there is:
 * the line drains in a second or two, and a person retrying a second later finds room
 * (bench/sign-in.ts: a burst of 60, the real user signed in on the second try).
 */
export const BUSY_RETRY_S = 1;

export const hashWith = (password: string, cost: Argon2Cost) => Bun.password.hash(password, { algorithm: "argon2id", ...cost });

export class Passwords {
  readonly checks: Semaphore;
  readonly cost: Argon2Cost;
  // A real Argon2id hash of a random password at the same cost: an unknown account is checked
  // against it, so it takes as long as a known one.
  private dummy: Promise<string> | null = null;

  constructor(options: PasswordOptions = {}) {
    const slots = Math.max(1, options.slots ?? availableParallelism());
    this.checks = new Semaphore(slots, Math.max(0, options.waiting ?? 4 * slots));
    this.cost = options.cost ?? ARGON2_COST;
  }

  /**
   * Whether `password` is the one `hash` holds (`hash` null: an unknown account, always false
   * after the same work). `place`: where it may wait for a check (src/limits/semaphore.ts).
   */
  async verify(password: string, hash: string | null, place: Place = "line"): Promise<boolean | "busy"> {
    const done = this.checks.run(async () => {
      if (hash !== null) return Bun.password.verify(password, hash);
      await Bun.password.verify(password, await (this.dummy ??= hashWith(crypto.randomUUID(), this.cost)));
      return false;
    }, place);
    return done === null ? "busy" : done;
  }

  /** A new hash of `password`. */
  async hash(password: string): Promise<string | "busy"> {
    const done = this.checks.run(() => hashWith(password, this.cost));
    return done === null ? "busy" : done;
  }
}
