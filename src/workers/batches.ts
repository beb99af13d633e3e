import { claimExpiredBatch, processBatch } from '../services/batch-events';
import type { Deps } from '../deps';
import { Runner } from './runner';

/**
 * Resumes accepted event batches whose processor stopped (crash, SIGKILL, Redis failure, restart):
 * every process with workers looks for expired leases and takes such a batch over, going on from its
 * last recorded item (src/services/batch-events.ts). Safe in any number of copies.
 */
export class BatchResumer extends Runner {
  private stopping = false;

  constructor(private readonly deps: Deps) {
    super({ backoffMs: 1000, onError: () => {} }); // pass() handles its own failures
  }

  override start(): void {
    this.stopping = false;
    super.start();
  }

  protected async poll(): Promise<number> {
    await this.pass();
    return Math.max(50, Math.min(1000, Math.floor(this.deps.config.BATCH_LEASE_MS / 2)));
  }

  /** Processes expired batches until none is left; returns how many were taken over. */
  async pass(): Promise<number> {
    let n = 0;
    while (!this.stopping) {
      let batch: Awaited<ReturnType<typeof claimExpiredBatch>>;
      try {
        batch = await claimExpiredBatch(this.deps);
      } catch {
        return n; // Redis unavailable: the next pass tries again
      }
      if (!batch) return n;
      n++;
      this.deps.logger.info({ batch: batch.id, from: batch.done }, 'resuming event batch');
      try {
        await processBatch(this.deps, batch, { stopping: () => this.stopping });
      } catch (err) {
        this.deps.logger.error({ batch: batch.id, err }, 'event batch resume failed; retried later');
        return n;
      }
    }
    return n;
  }

  /** A batch in progress stops at its next item (its lease lets any process resume it). */
  override async stop(): Promise<void> {
    this.stopping = true;
    await super.stop();
  }
}
