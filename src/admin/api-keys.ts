import { and, asc, eq, ne } from 'drizzle-orm';
import { generateApiKey } from '../api-keys';
import type { ApiKeyRow } from '../catalog/snapshot';
import { apiKeys } from '../db/schema';
import type { Deps } from '../deps';
import type { BulkResource } from './resource';
import { z } from '../zod';
import { iso, isoOrNull, isUniqueViolation, ItemIssue, newId, parseItem, patchTarget } from './common';
import { nameSchema } from './fields';

export const AdminApiKeySchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    kind: z.enum(['admin', 'application']),
    prefix: z.string(),
    status: z.enum(['active', 'revoked']),
    rateLimitPerSecond: z.number().int().nullable(),
    created: z.string(),
    lastUsed: z.string().nullable(),
    revoked: z.string().nullable(),
    key: z.string().optional().describe('The full key; only in the create response'),
  })
  .openapi('AdminApiKey');

const rateLimitSchema = z.number().int().min(1).max(1_000_000).nullable();

const createSchema = z
  .object({
    name: nameSchema,
    kind: z.enum(['admin', 'application']),
    rateLimitPerSecond: rateLimitSchema.optional(),
  })
  .openapi('AdminApiKeyCreate');

const updateSchema = z
  .object({ id: z.uuid(), name: nameSchema.optional(), rateLimitPerSecond: rateLimitSchema.optional() })
  .openapi('AdminApiKeyUpdate');

/** The shown form of a key: never the secret or its hash. */
export const showApiKey = (k: ApiKeyRow) => ({
  id: k.id,
  name: k.name,
  kind: k.kind,
  prefix: k.prefix,
  status: k.status,
  rateLimitPerSecond: k.rateLimitPerSecond,
  created: iso(k.created),
  lastUsed: isoOrNull(k.lastUsed),
  revoked: isoOrNull(k.revoked),
});

type ShownApiKey = ReturnType<typeof showApiKey> & { key?: string };

async function findKey(deps: Deps, id: string): Promise<ApiKeyRow | undefined> {
  const [row] = await deps.db.select().from(apiKeys).where(eq(apiKeys.id, id));
  return row;
}

export const apiKeysResource: BulkResource<ShownApiKey> = {
  name: 'API key',
  schemas: { resource: AdminApiKeySchema, create: createSchema, update: updateSchema },
  async list(deps, { limit, skip }) {
    const rows = await deps.db
      .select()
      .from(apiKeys)
      .orderBy(asc(apiKeys.created), asc(apiKeys.id))
      .limit(limit)
      .offset(skip);
    return rows.map(showApiKey);
  },
  async get(deps, { id }) {
    const row = await findKey(deps, id);
    return row ? showApiKey(row) : null;
  },
  async create(deps, { item }) {
    const input = parseItem(createSchema, item);
    const now = new Date(deps.clock.now());
    // A prefix collision (36^8 space) is retried with a fresh key.
    for (let attempt = 0; ; attempt++) {
      const k = generateApiKey();
      try {
        const [row] = await deps.db
          .insert(apiKeys)
          .values({
            id: newId(),
            name: input.name,
            kind: input.kind,
            prefix: k.prefix,
            secretHash: k.secretHash,
            rateLimitPerSecond: input.rateLimitPerSecond ?? null,
            created: now,
          })
          .returning();
        return { ...showApiKey(row!), key: k.key };
      } catch (err) {
        if (!isUniqueViolation(err) || attempt >= 3) throw err;
      }
    }
  },
  async update(deps, { item }) {
    const { input, current } = await patchTarget(
      item,
      updateSchema,
      { name: 'API key', nonNullable: ['name'], fixed: ['kind', 'prefix', 'status'] },
      (id) => findKey(deps, id),
    );
    const [row] = await deps.db
      .update(apiKeys)
      .set({
        name: input.name ?? current.name,
        rateLimitPerSecond:
          input.rateLimitPerSecond === undefined ? current.rateLimitPerSecond : input.rateLimitPerSecond,
      })
      .where(eq(apiKeys.id, input.id))
      .returning();
    return showApiKey(row!);
  },
  /** Revokes: the row stays listed. The bulk route reloads the snapshot auth reads before answering. */
  async remove(deps, { id }) {
    await deps.db.transaction(async (tx) => {
      // Serialises revocations so two requests cannot each revoke one of the last two admin keys.
      await tx.execute('select pg_advisory_xact_lock(727275)');
      const [current] = await tx.select().from(apiKeys).where(eq(apiKeys.id, id));
      if (!current) throw new ItemIssue('API key not found');
      if (current.status === 'revoked') throw new ItemIssue('API key is already revoked', 'warning');
      if (current.kind === 'admin') {
        const others = await tx
          .select({ id: apiKeys.id })
          .from(apiKeys)
          .where(and(eq(apiKeys.kind, 'admin'), eq(apiKeys.status, 'active'), ne(apiKeys.id, id)))
          .limit(1);
        if (others.length === 0) throw new ItemIssue('Cannot revoke the last active admin key');
      }
      await tx
        .update(apiKeys)
        .set({ status: 'revoked', revoked: new Date(deps.clock.now()) })
        .where(eq(apiKeys.id, id));
    });
  },
};
