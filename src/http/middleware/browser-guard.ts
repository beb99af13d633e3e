import type { MiddlewareHandler } from 'hono';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';

/**
 * API keys are server-side secrets (spec, Authentication): a request that carries browser markers
 * (an Origin header, or Sec-Fetch-Mode: cors) is refused unless its origin is explicitly allowed.
 */
export function browserGuard(deps: Deps): MiddlewareHandler {
  const allowed = new Set(deps.config.ALLOWED_ORIGINS);
  return async (c, next) => {
    const origin = c.req.header('origin');
    const corsMode = c.req.header('sec-fetch-mode') === 'cors';
    if ((origin !== undefined || corsMode) && !(origin !== undefined && allowed.has(origin))) {
      throw new AppError(
        'FORBIDDEN',
        'API keys are server-side secrets: requests from browsers are refused (allow an origin with ALLOWED_ORIGINS)',
      );
    }
    await next();
  };
}
