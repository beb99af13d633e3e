import type { MiddlewareHandler } from 'hono';
import { type ApiKeyKind, verifyApiKey } from '../../api-keys';
import type { Deps } from '../../deps';
import { unauthorized } from '../../errors';

/** Requires an active X-API-KEY of `kind`; the key row is stored on the context as `apiKey`. */
export function requireApiKey(deps: Deps, kind: ApiKeyKind): MiddlewareHandler {
  return async (c, next) => {
    const presented = c.req.header('x-api-key');
    if (!presented) throw unauthorized('Missing X-API-KEY header');
    const row = verifyApiKey(presented, kind, (p) => deps.catalog.snapshot.apiKeysByPrefix.get(p));
    if (!row) throw unauthorized('Invalid API key');
    c.set('apiKey', row);
    await next();
  };
}
