import type { Deps } from '../deps';
import { countBackendError } from '../metrics/hooks';

/** How a runner waits after failed passes, and whom it tells. */
export interface FailurePolicy {
  /**
   * The wait after a failed pass. It doubles after each further failure in a row, up to
   * `maxBackoffMs` (default: no growth), and starts over after a pass that succeeds.
   */
  backoffMs: number;
  maxBackoffMs?: number;
  /** Told about every failed pass (log, metrics); the runner then waits and tries again. */
  onError: (err: unknown) => void;
}

/**
 * The loop every background worker runs: a pass (`poll`), a wait, again, until stopped. A failed
 * pass never ends the loop (Redis or Postgres away: the work is retried after a backoff). `wake()`
 * cuts the current wait short; `stop()` lets the pass in progress finish, starts no other, and
 * resolves when the loop has ended.
 */
export abstract class Runner {
  private active = false;
  private loop: Promise<void> | null = null;
  private endWait: (() => void) | null = null;
  private woken = false;
  /** The error of the latest pass, null once a pass succeeds. */
  lastError: unknown = null;

  constructor(private readonly failures: FailurePolicy) {}

  /** One pass of work; resolves to how long to wait before the next pass (0: at once). */
  protected abstract poll(): Promise<number>;

  get running(): boolean {
    return this.active;
  }

  start(): void {
    if (this.active) return;
    this.active = true;
    this.woken = false;
    this.loop = this.run();
  }

  /** Ends the current wait now; a wake-up during a pass makes the next pass start without waiting. */
  wake(): void {
    if (this.endWait) this.endWait();
    else this.woken = true;
  }

  async stop(): Promise<void> {
    this.active = false;
    this.wake();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { backoffMs, maxBackoffMs = backoffMs, onError } = this.failures;
    let backoff = backoffMs;
    while (this.active) {
      let delay: number;
      try {
        delay = await this.poll();
        this.lastError = null;
        backoff = backoffMs;
      } catch (err) {
        this.lastError = err;
        onError(err);
        delay = backoff;
        backoff = Math.min(backoff * 2, maxBackoffMs);
      }
      if (this.active && delay > 0) await this.wait(delay);
    }
  }

  private wait(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.endWait = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.endWait = done;
    });
  }
}

/** What a worker says about its failed passes, and how long it waits after them. */
export interface WorkerFailures<O> {
  /** The backend-error counter's source (metrics). */
  source: Parameters<typeof countBackendError>[0];
  /** The warning logged for each failed pass. */
  message: string;
  backoff: (opts: O, deps: Deps) => Pick<FailurePolicy, 'backoffMs' | 'maxBackoffMs'>;
}

/**
 * The base class of a background worker: a Runner over the app's `deps` with the worker's options
 * (`new Worker(deps, opts?)`), whose failed passes count an unavailable backend, log a warning and
 * are retried after the backoff `failures` gives for those options.
 */
export function worker<O extends object>(failures: WorkerFailures<O>) {
  abstract class Worker extends Runner {
    constructor(
      protected readonly deps: Deps,
      protected readonly opts: O = {} as O,
    ) {
      super({
        ...failures.backoff(opts, deps),
        onError: (err) => {
          countBackendError(failures.source, err);
          deps.logger.warn({ err: (err as Error).message }, failures.message);
        },
      });
    }
  }
  return Worker;
}
