import postgres from 'postgres';
import type { Deps } from '../../deps';

/** `lastUsed` is recorded at most this often per key (admin-api §3). */
const EVERY_MS = 60_000;
/** Keys used within this delay are written together, in one statement. */
const BATCH_MS = 200;

/**
 * Records when API keys were last used, off the request path: a request only checks an in-memory
 * time per key; at most once a minute per key and process the key joins a batch that one UPDATE
 * writes a moment later (and the UPDATE itself skips keys another process wrote within the minute).
 * A failed write is only logged (the key's next use after the minute writes again): it must never
 * cost a request.
 */
export class KeyUsage {
  private readonly noted = new Map<string, number>();
  private pending = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  /**
   * A connection of its own that closes after a second idle: these writes come once a minute, and a
   * pooled connection left idle between them would be the one a Postgres restart kills, for the next
   * request that draws it from the shared pool to fail.
   */
  private client: postgres.Sql | null = null;

  constructor(private readonly deps: Deps) {}

  /** Called for every authenticated request: O(1), awaits nothing. */
  touch(keyId: string): void {
    const now = this.deps.clock.now();
    const last = this.noted.get(keyId);
    if (last !== undefined && now - last < EVERY_MS) return;
    this.noted.set(keyId, now);
    this.pending.add(keyId);
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(now), BATCH_MS);
      this.timer.unref();
    }
  }

  private async flush(now: number): Promise<void> {
    this.timer = null;
    const ids = [...this.pending];
    this.pending = new Set();
    const at = new Date(now).toISOString();
    const before = new Date(now - EVERY_MS).toISOString();
    try {
      this.client ??= postgres(this.deps.config.DATABASE_URL, {
        max: 1,
        idle_timeout: 1,
        connect_timeout: 5,
        onnotice: () => {},
      });
      const sql = this.client;
      await sql`update api_keys set last_used = ${at}::timestamptz
                 where id in ${sql(ids)} and (last_used is null or last_used <= ${before}::timestamptz)`;
    } catch (err) {
      // Not retried before the key's next minute: an unreachable Postgres gets no extra queries.
      this.deps.logger.warn({ err: (err as Error).message }, 'could not record API key use');
    }
  }
}
