import type { MiddlewareHandler } from 'hono';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import type { AppEnv } from '../env';

/** Tokens leased from the shared bucket and not yet spent by this process. */
interface Lease {
  tokens: number;
  expires: number;
}

/** Leases are short-lived so that unused tokens cannot be hoarded by one process. */
const LEASE_MS = 250;

/** How many tokens to lease at once: 1% of the rate (1 for low limits, so they stay exact), at most 50. */
export const leaseSize = (rate: number) => Math.max(1, Math.min(50, Math.floor(rate / 100)));

/**
 * Per-key token bucket in Redis (semantics §9): checked after authentication and before any
 * processing, so a limited request never commits anything. Each process leases up to 1% of the
 * rate at a time, which bounds the unfairness between processes by that amount.
 */
export function rateLimit(deps: Deps): MiddlewareHandler<AppEnv> {
  const leases = new Map<string, Lease>();
  return async (c, next) => {
    const key = c.get('apiKey');
    const now = deps.clock.now();
    const lease = leases.get(key.id);
    if (lease && lease.tokens > 0 && lease.expires > now) {
      lease.tokens--;
      return next();
    }
    const rate = key.rateLimitPerSecond ?? deps.config.RATE_LIMIT_PER_SECOND;
    const burst = rate * deps.config.RATE_LIMIT_BURST_FACTOR;
    const [granted, retryMs] = await deps.redis.rateLimit(
      1,
      deps.keys.rateLimit(key.id),
      String(rate),
      String(burst),
      String(now),
      String(leaseSize(rate)),
    );
    if (granted < 1) {
      throw new AppError('RATE_LIMITED', 'Rate limit exceeded', {
        'Retry-After': String(Math.max(1, Math.ceil(retryMs / 1000))),
      });
    }
    if (granted > 1) leases.set(key.id, { tokens: granted - 1, expires: now + LEASE_MS });
    else leases.delete(key.id);
    await next();
  };
}
