import type { Context } from 'hono';
import { type ApiKeyKind, refusalReason, verifyApiKeyCached } from '../../api-keys';
import type { Deps } from '../../deps';
import { unauthorized } from '../../errors';
import { KeyUsage } from './key-usage';

/** Checks for an active X-API-KEY of `kind`, stores its row on the context as `apiKey` and notes its use. */
export function authenticate(deps: Deps, kind: ApiKeyKind): (c: Context) => void {
  const usage = new KeyUsage(deps);
  return (c) => {
    const presented = c.req.header('x-api-key');
    if (!presented) throw unauthorized('Missing X-API-KEY header');
    const row = verifyApiKeyCached(presented, kind, deps.catalog.snapshot);
    if (!row) {
      throw unauthorized(refusalReason(presented, kind, (p) => deps.catalog.snapshot.apiKeysByPrefix.get(p)));
    }
    usage.touch(row.id);
    c.set('apiKey', row);
  };
}
