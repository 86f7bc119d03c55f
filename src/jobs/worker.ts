// The one shape of background work: started by `serve` after migrations, stopped on SIGTERM after
// the listener has stopped and requests in flight have finished, in reverse order of start. A
// stop lets the work under way finish (drains) before it resolves.
import { errorFields, log, RepeatedFailure } from "../log";

export interface Worker {
  readonly name: string;
  start(): void;
  /** Stops taking new work and resolves once the work under way has finished. */
  stop(): Promise<void>;
}

/**
 * A task run every `ms` milliseconds, never twice at once; a failed run is logged and the next
 * one still comes (a failure that repeats is logged once, then summarised: RepeatedFailure). Runs start `ms` apart, not `ms` after the previous one ended (a run that took
 * longer is followed at once): "at least once a second" holds while a run takes under a second.
 * `stop` waits for a run under way and then runs `final` once (flushes).
 */
export function every(name: string, ms: number, tick: () => Promise<void>, final?: () => Promise<void>): Worker {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let running: Promise<void> | null = null;
  let stopped = false;
  const failures = new RepeatedFailure(`${name} failed`);
  const run = () => {
    timer = null;
    const started = performance.now();
    running = tick()
      .then(
        () => failures.succeeded(),
        (err) => failures.failed(err),
      )
      .finally(() => {
        running = null;
        if (!stopped) timer = setTimeout(run, Math.max(0, ms - (performance.now() - started)));
      });
  };
  return {
    name,
    start() {
      stopped = false;
      timer ??= setTimeout(run, ms);
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await running;
      if (final) await final().catch((err) => log.warn(`${name} final run failed`, errorFields(err)));
    },
  };
}

/** Workers started together and stopped in reverse order. */
export class Workers {
  private started: Worker[] = [];

  constructor(private readonly all: Worker[]) {}

  start(): void {
    for (const w of this.all) {
      w.start();
      this.started.push(w);
      log.debug("worker started", { worker: w.name });
    }
  }

  async stop(): Promise<void> {
    while (this.started.length) {
      const w = this.started.pop()!;
      await w.stop().catch((err) => log.warn("worker stop failed", { worker: w.name, ...errorFields(err) }));
      log.debug("worker stopped", { worker: w.name });
    }
  }
}
