import { and, eq } from 'drizzle-orm';
import { generateApiKey, hashSecret, parseApiKey } from '../api-keys';
import type { Db } from '../db/client';
import { apiKeys } from '../db/schema';

/**
 * Makes sure an admin key exists: the one in ADMIN_API_KEY, or a generated one when there is no
 * active admin key yet. Returns the generated key (to be printed once) or null.
 */
export async function ensureAdminKey(db: Db, fromEnv: string | undefined): Promise<string | null> {
  if (fromEnv) {
    const parsed = parseApiKey(fromEnv)!;
    await db
      .insert(apiKeys)
      .values({
        name: 'ADMIN_API_KEY',
        kind: 'admin',
        prefix: parsed.prefix,
        secretHash: hashSecret(parsed.secret),
      })
      .onConflictDoNothing({ target: apiKeys.prefix });
    return null;
  }
  return db.transaction(async (tx) => {
    // One starter at a time decides whether a key must be generated.
    await tx.execute('select pg_advisory_xact_lock(727275)');
    const existing = await tx
      .select({ id: apiKeys.id })
      .from(apiKeys)
      .where(and(eq(apiKeys.kind, 'admin'), eq(apiKeys.status, 'active')))
      .limit(1);
    if (existing.length) return null;
    const k = generateApiKey();
    await tx
      .insert(apiKeys)
      .values({ name: 'Initial admin key', kind: 'admin', prefix: k.prefix, secretHash: k.secretHash });
    return k.key;
  });
}
