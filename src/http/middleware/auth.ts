import type { Context } from 'hono';
import { type ApiKeyKind, verifyApiKeyCached } from '../../api-keys';
import type { Deps } from '../../deps';
import { unauthorized } from '../../errors';

/** Checks for an active X-API-KEY of `kind` and stores its row on the context as `apiKey`. */
export function authenticate(deps: Deps, kind: ApiKeyKind): (c: Context) => void {
  return (c) => {
    const presented = c.req.header('x-api-key');
    if (!presented) throw unauthorized('Missing X-API-KEY header');
    const row = verifyApiKeyCached(presented, kind, deps.catalog.snapshot);
    if (!row) throw unauthorized('Invalid API key');
    c.set('apiKey', row);
  };
}
