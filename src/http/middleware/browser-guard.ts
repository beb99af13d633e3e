import type { Context } from 'hono';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';

/**
 * API keys are server-side secrets (spec, Authentication): a request that carries browser markers
 * is refused unless its origin is explicitly allowed. Browsers send `Origin` on every cross-origin
 * request and `Sec-Fetch-Site` on every request; server runtimes do not. `Sec-Fetch-Mode: cors`
 * alone is NOT a marker: Node's fetch (and so the Trophy Node SDK) sends it on every request.
 */
export function browserCheck(deps: Deps): (c: Context) => void {
  const allowed = new Set(deps.config.ALLOWED_ORIGINS);
  return (c) => {
    const origin = c.req.header('origin');
    const fromBrowser = origin !== undefined || c.req.header('sec-fetch-site') !== undefined;
    if (fromBrowser && !(origin !== undefined && allowed.has(origin))) {
      throw new AppError(
        'FORBIDDEN',
        'API keys are server-side secrets: requests from browsers are refused (allow an origin with ALLOWED_ORIGINS)',
      );
    }
  };
}
