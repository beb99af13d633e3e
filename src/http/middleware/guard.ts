import type { MiddlewareHandler } from 'hono';
import type { ApiKeyKind } from '../../api-keys';
import type { Deps } from '../../deps';
import type { AppEnv } from '../../app-env';
import { authenticate } from './auth';
import { checkBodyLimit } from './body-limit';
import { browserCheck } from './browser-guard';
import type { rateLimiter } from './rate-limit';

/**
 * Every check in front of the application and admin APIs, in the order application-api §5.3 gives
 * (413, browser refusal, 401, 429), as one middleware: the usual request passes them all without
 * awaiting anything (declared length, cached key verification, a leased rate-limit token).
 */
export function apiGuard(
  deps: Deps,
  opts: { maxBody: number; kind: ApiKeyKind; limiter: ReturnType<typeof rateLimiter> },
): MiddlewareHandler<AppEnv> {
  const browser = browserCheck(deps);
  const auth = authenticate(deps, opts.kind);
  return async (c, next) => {
    const reading = checkBodyLimit(c, opts.maxBody);
    if (reading) await reading;
    browser(c);
    auth(c);
    const waiting = opts.limiter(c);
    if (waiting) await waiting;
    await next();
  };
}
