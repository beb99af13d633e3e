import type { MiddlewareHandler } from 'hono';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import type { AppEnv } from '../env';

/**
 * Per-key token bucket in Redis (semantics §9): checked after authentication and before any
 * processing, so a limited request never commits anything.
 */
export function rateLimit(deps: Deps): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const key = c.get('apiKey');
    const rate = key.rateLimitPerSecond ?? deps.config.RATE_LIMIT_PER_SECOND;
    const burst = rate * deps.config.RATE_LIMIT_BURST_FACTOR;
    const [allowed, retryMs] = await deps.redis.rateLimit(
      1,
      deps.keys.rateLimit(key.id),
      String(rate),
      String(burst),
      String(deps.clock.now()),
    );
    if (!allowed) {
      throw new AppError('RATE_LIMITED', 'Rate limit exceeded', {
        'Retry-After': String(Math.max(1, Math.ceil(retryMs / 1000))),
      });
    }
    await next();
  };
}
