import type { Context } from 'hono';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import type { AppEnv } from '../../app-env';

/** This process's share of one key's bucket. */
interface Lease {
  /** Tokens leased from the shared bucket and not yet spent. */
  tokens: number;
  expires: number;
  /** The lease request in flight, if any: concurrent requests wait for it instead of sending their own. */
  refill: Promise<void> | null;
  /** The bucket was empty: no token can exist before this time (the bucket only fills with time). */
  deniedUntil: number;
}

/** Leases are short-lived so that unused tokens cannot be hoarded by one process. */
const LEASE_MS = 250;

/** How many tokens to lease at once: 1% of the rate (1 for low limits, so they stay exact), at most 50. */
export const leaseSize = (rate: number) => Math.max(1, Math.min(50, Math.floor(rate / 100)));

const limited = (retryMs: number) =>
  new AppError('RATE_LIMITED', 'Rate limit exceeded', {
    'Retry-After': String(Math.max(1, Math.ceil(retryMs / 1000))),
  });

/**
 * Per-key token bucket in Redis (semantics §9): checked after authentication and before any
 * processing, so a limited request never commits anything. Each process leases up to 1% of the
 * rate at a time, which bounds the unfairness between processes by that amount. One lease request
 * per key is in flight at a time (the requests arriving meanwhile share its tokens), and after an
 * empty bucket the key is refused locally until its next token is due, so neither a burst nor a
 * client that ignores 429 multiplies the calls to Redis.
 */
export function rateLimiter(deps: Deps): (c: Context<AppEnv>) => Promise<void> | undefined {
  const leases = new Map<string, Lease>();
  const refill = async (keyId: string, rate: number, lease: Lease): Promise<void> => {
    const burst = rate * deps.config.RATE_LIMIT_BURST_FACTOR;
    const now = deps.clock.now();
    try {
      const [granted, retryMs] = await deps.redis.rateLimit(
        1,
        deps.keys.rateLimit(keyId),
        String(rate),
        String(burst),
        String(now),
        String(leaseSize(rate)),
      );
      if (granted < 1) lease.deniedUntil = now + Math.max(1, retryMs);
      else {
        lease.tokens = granted;
        // From when the grant arrived: a lease dated from the request would be born expired after a
        // slow round trip, and every waiter would lease again, round after round, never served.
        lease.expires = deps.clock.now() + LEASE_MS;
      }
    } finally {
      lease.refill = null;
    }
  };
  /** Spends one token, or throws 429; a promise only while a lease is being fetched. */
  const spend = (keyId: string, rate: number): Promise<void> | undefined => {
    let lease = leases.get(keyId);
    if (!lease) {
      lease = { tokens: 0, expires: 0, refill: null, deniedUntil: 0 };
      leases.set(keyId, lease);
    }
    const now = deps.clock.now();
    if (lease.tokens > 0 && lease.expires > now) {
      lease.tokens--;
      return undefined;
    }
    if (lease.deniedUntil > now) throw limited(lease.deniedUntil - now);
    lease.tokens = 0;
    if (!lease.refill) lease.refill = refill(keyId, rate, lease);
    // Redis errors surface here (503) for every request that waited on the failed lease.
    return lease.refill.then(() => spend(keyId, rate));
  };
  return (c) => {
    const key = c.get('apiKey');
    return spend(key.id, key.rateLimitPerSecond ?? deps.config.RATE_LIMIT_PER_SECOND);
  };
}
