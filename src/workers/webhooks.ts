// Webhook delivery (semantics §8.2, §8.3): sends pending deliveries, signs them, retries with
// exponential backoff, keeps the log. Several dispatchers may run: a delivery is claimed with
// FOR UPDATE SKIP LOCKED and leased (next_attempt_at moved past the timeout) before it is sent, so
// no two dispatchers send the same attempt; a dispatcher that dies mid-send leaves the lease to
// expire and the attempt is made again (at least once).
import { createHmac } from 'node:crypto';
import { inArray, sql } from 'drizzle-orm';
import { webhookDeliveries } from '../db/schema';
import type { Deps } from '../deps';
import { pruneDeliveries } from './webhook-events';
import { observeWebhookAttempt } from '../metrics/hooks';
import { worker } from './runner';

const MINUTE = 60_000;

/** base64 HMAC-SHA256 of the raw body with the endpoint's secret (X-Trophy-Signature). */
export const signWebhook = (secret: string, body: string) =>
  createHmac('sha256', Buffer.from(secret, 'utf8')).update(Buffer.from(body, 'utf8')).digest('base64');

/** Delay before retry n (1-based): 1, 2, 4, 8, 16 … minutes. */
export const retryDelayMs = (retry: number) => 2 ** (retry - 1) * MINUTE;

interface Claimed {
  id: string;
  endpoint_id: string;
  event_id: string;
  type: string;
  body: string | null;
  payload: unknown;
  attempts: number;
  url: string | null;
  secret: string | null;
  enabled: boolean | null;
  deleted_at: Date | null;
}

export interface DispatcherOptions {
  batchSize?: number;
  idleSleepMs?: number;
  /** Attempts sent at once. */
  concurrency?: number;
}

export class WebhookDispatcher extends worker<DispatcherOptions>({
  source: 'webhooks',
  message: 'webhook dispatcher retrying',
  backoff: (opts) => ({ backoffMs: opts.idleSleepMs ?? 1000 }),
}) {
  private lastPrune = 0;
  /** Attempts made since start (tests, metrics). */
  sent = 0;

  protected async poll(): Promise<number> {
    // A pass that sent something is followed by another at once: more may have come due meanwhile.
    return (await this.runOnce()) === 0 ? (this.opts.idleSleepMs ?? 1000) : 0;
  }

  /** Pending deliveries of disabled or deleted endpoints are cancelled (marked failed). */
  async cancelDisabled(): Promise<void> {
    const now = new Date(this.deps.clock.now()).toISOString();
    await this.deps.db.execute(sql`
      update webhook_deliveries d
         set status = 'failed', next_attempt_at = null, last_error = 'cancelled: endpoint disabled or deleted',
             last_attempt_at = coalesce(d.last_attempt_at, ${now})
        from webhook_endpoints e
       where d.endpoint_id = e.id and d.status = 'pending'
         and (e.enabled = false or e.deleted_at is not null)`);
  }

  /** Claims the due deliveries (lease) in one short transaction. */
  private async claim(limit: number): Promise<Claimed[]> {
    const nowMs = this.deps.clock.now();
    const now = new Date(nowMs).toISOString();
    const lease = new Date(nowMs + this.deps.config.WEBHOOK_TIMEOUT_MS + MINUTE).toISOString();
    return this.deps.db.transaction(async (tx) => {
      const rows = (await tx.execute(sql`
        select d.id, d.endpoint_id, d.event_id, d.type, d.body, d.payload, d.attempts,
               e.url, e.secret, e.enabled, e.deleted_at
          from webhook_deliveries d left join webhook_endpoints e on e.id = d.endpoint_id
         where d.status = 'pending' and d.next_attempt_at <= ${now}
         order by d.next_attempt_at
         limit ${limit}
         for update of d skip locked`)) as unknown as Claimed[];
      if (!rows.length) return [];
      const ids = rows.map((r) => r.id);
      await tx.execute(sql`
        update webhook_deliveries
           set attempts = attempts + 1, last_attempt_at = ${now}, next_attempt_at = ${lease}
         where ${inArray(webhookDeliveries.id, ids)}`);
      return rows.map((r) => ({ ...r, attempts: r.attempts + 1 }));
    });
  }

  /** One pass: cancels, claims and sends every due delivery; returns how many attempts were made. */
  async runOnce(): Promise<number> {
    await this.cancelDisabled();
    const batch = this.opts.batchSize ?? 100;
    let total = 0;
    for (;;) {
      const claimed = await this.claim(batch);
      if (!claimed.length) break;
      const concurrency = this.opts.concurrency ?? 16;
      for (let i = 0; i < claimed.length; i += concurrency) {
        await Promise.all(claimed.slice(i, i + concurrency).map((d) => this.attempt(d)));
      }
      total += claimed.length;
      if (claimed.length < batch) break;
    }
    this.sent += total;
    const now = this.deps.clock.now();
    if (now - this.lastPrune > 3_600_000) {
      this.lastPrune = now;
      await pruneDeliveries(this.deps);
    }
    return total;
  }

  private async attempt(d: Claimed): Promise<void> {
    if (!d.url || !d.secret || d.enabled === false || d.deleted_at) {
      await this.finish(d.id, {
        status: 'failed',
        code: null,
        error: 'cancelled: endpoint disabled or deleted',
      });
      observeWebhookAttempt(d.type, 'cancelled');
      return;
    }
    const body = d.body ?? JSON.stringify(d.payload);
    let code: number | null = null;
    let error: string | null = null;
    try {
      const res = await fetch(d.url, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          'Content-Type': 'application/json',
          'X-Trophy-Signature': signWebhook(d.secret, body),
          'X-Webhook-Id': d.event_id,
          'X-Webhook-Attempt': String(d.attempts),
          'User-Agent': 'Laurel-Webhooks/1',
        },
        body,
        signal: AbortSignal.timeout(this.deps.config.WEBHOOK_TIMEOUT_MS),
      });
      code = res.status;
      await res.body?.cancel().catch(() => {});
      if (code < 200 || code > 299) error = `HTTP ${code}`;
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      error =
        e.name === 'TimeoutError' || e.name === 'AbortError'
          ? `timeout after ${this.deps.config.WEBHOOK_TIMEOUT_MS} ms`
          : `${e.message}${e.cause?.code ? ` (${e.cause.code})` : ''}`;
    }
    if (error === null) {
      await this.finish(d.id, { status: 'succeeded', code, error: null });
      observeWebhookAttempt(d.type, 'succeeded');
      return;
    }
    // attempts = 1 + retries made so far; after the last retry the delivery has failed.
    const retry = d.attempts; // the retry that would come next
    if (retry > this.deps.config.WEBHOOK_MAX_RETRIES) {
      await this.finish(d.id, { status: 'failed', code, error });
      observeWebhookAttempt(d.type, 'failed');
    } else {
      await this.finish(d.id, {
        status: 'pending',
        code,
        error,
        next: this.deps.clock.now() + retryDelayMs(retry),
      });
      observeWebhookAttempt(d.type, 'retrying');
    }
  }

  private async finish(
    id: string,
    r: {
      status: 'pending' | 'succeeded' | 'failed';
      code: number | null;
      error: string | null;
      next?: number;
    },
  ): Promise<void> {
    await this.deps.db.execute(sql`
      update ${webhookDeliveries}
         set status = ${r.status}, last_status_code = ${r.code}, last_error = ${r.error},
             next_attempt_at = ${r.next !== undefined ? new Date(r.next).toISOString() : null}
       where id = ${id}`);
  }
}

/** Manual redelivery (admin): the delivery becomes pending again, due now; its event id and body are kept. */
export async function redeliver(deps: Deps, endpointId: string, deliveryId: string) {
  const now = new Date(deps.clock.now()).toISOString();
  const rows = (await deps.db.execute(sql`
    update ${webhookDeliveries}
       set status = 'pending', next_attempt_at = ${now}, last_error = null
     where id = ${deliveryId} and endpoint_id = ${endpointId}
     returning id`)) as unknown as Array<{ id: string }>;
  return rows.length > 0;
}
