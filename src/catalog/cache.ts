import type { Db } from '../db/client';
import type { Logger } from '../logger';
import { type RedisClient, waitReady } from '../redis/client';
import { loadSnapshot, type Snapshot } from './snapshot';

/**
 * Holds the current configuration snapshot. A process that changes configuration reloads at once
 * (read-your-writes) and publishes on a Redis channel; every other process reloads on the message.
 */
export class Catalog {
  private current!: Snapshot;
  private version = 0;
  private loading: Promise<void> | null = null;
  private again = false;
  private subscriber: RedisClient | null = null;

  constructor(
    private readonly db: Db,
    private readonly redis: RedisClient,
    private readonly channel: string,
    private readonly logger: Logger,
  ) {}

  get snapshot(): Snapshot {
    return this.current;
  }

  async start(): Promise<void> {
    await this.reload();
    const sub = this.redis.duplicate();
    this.subscriber = sub;
    sub.on('error', () => {}); // reported by the main connection; the subscriber reconnects by itself
    sub.on('message', () => {
      this.reload().catch((err) => this.logger.error({ err }, 'configuration reload failed'));
    });
    // Reconnects re-subscribe by themselves (ioredis autoResubscribe); reload to catch missed messages.
    sub.on('ready', () => {
      this.reload().catch(() => {});
    });
    await waitReady(sub);
    await sub.subscribe(this.channel);
  }

  /** Loads a fresh snapshot; concurrent calls coalesce, and a call during a load triggers one more. */
  async reload(): Promise<void> {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = (async () => {
      try {
        do {
          this.again = false;
          this.current = await loadSnapshot(this.db, ++this.version);
        } while (this.again);
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }

  /** After an admin write has committed: reload here, then tell every other process. */
  async changed(): Promise<void> {
    await this.reload();
    try {
      await this.redis.publish(this.channel, String(Date.now()));
    } catch (err) {
      this.logger.warn({ err }, 'could not publish configuration change');
    }
  }

  async stop(): Promise<void> {
    if (this.subscriber) {
      this.subscriber.disconnect();
      this.subscriber = null;
    }
  }
}
