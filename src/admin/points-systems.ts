import { and, eq, isNull } from 'drizzle-orm';
import type { PointsSystemRow } from '../catalog/snapshot';
import { pointsBoosts, pointsLevels, pointsSystems, pointsTriggers } from '../db/schema';
import type { Deps } from '../deps';
import { notFoundNamed } from '../errors';
import { type BulkResource, isUuid, type Scope } from './resource';
import { z } from '../zod';
import { iso, ItemIssue, keyedColumns, liveTable, parseItem, patched, patchedBadgeUrl } from './common';
import { badgeSchema, describedOutFields, descriptionSchema, keySchema, nameSchema } from './fields';

export const AdminPointsSystemSchema = z
  .object({
    ...describedOutFields,
    maxPoints: z.number().int().nullable(),
    created: z.string(),
    updated: z.string(),
  })
  .openapi('AdminPointsSystem');

const maxPointsSchema = z.number().int().min(1).nullable();

const createSchema = z
  .object({
    name: nameSchema,
    key: keySchema,
    description: descriptionSchema.optional(),
    badge: badgeSchema.optional(),
    maxPoints: maxPointsSchema.optional(),
  })
  .openapi('AdminPointsSystemCreate');

const updateSchema = z
  .object({
    id: z.uuid(),
    name: nameSchema.optional(),
    description: descriptionSchema.optional(),
    badge: badgeSchema.optional(),
    maxPoints: maxPointsSchema.optional(),
  })
  .openapi('AdminPointsSystemUpdate');

export const showBadge = (url: string | null) => (url ? { url } : null);

export const showPointsSystem = (p: PointsSystemRow) => ({
  id: p.id,
  key: p.key,
  name: p.name,
  description: p.description,
  badge: showBadge(p.badgeUrl),
  maxPoints: p.maxPoints,
  created: iso(p.created),
  updated: iso(p.updated),
});

const systemRows = liveTable(pointsSystems, 'points system');

/** The non-deleted points system, or undefined. */
export const findPointsSystem = (deps: Deps, id: string): Promise<PointsSystemRow | undefined> =>
  systemRows.find(deps, { id });

/** `{systemId}` of a nested resource (triggers, levels, boosts). */
export const systemIdOf = (scope: Scope) => scope.systemId ?? '';

/** Parent check of nested resources: an unknown or deleted `{systemId}` is 404 for every method. */
export async function requirePointsSystem(deps: Deps, scope: Scope): Promise<void> {
  const id = systemIdOf(scope);
  if (!isUuid(id) || !(await findPointsSystem(deps, id))) throw notFoundNamed('Points system', id);
}

export const pointsSystemsResource: BulkResource<ReturnType<typeof showPointsSystem>> = {
  name: 'points system',
  schemas: { resource: AdminPointsSystemSchema, create: createSchema, update: updateSchema },
  ...systemRows.reads(showPointsSystem),
  async create(deps, { item }) {
    const input = parseItem(createSchema, item);
    const row = await systemRows.insert(deps, {
      ...keyedColumns(input),
      badgeUrl: input.badge?.url ?? null,
      maxPoints: input.maxPoints ?? null,
    });
    return showPointsSystem(row);
  },
  async update(deps, { item }) {
    const { input, current } = await systemRows.patch(deps, item, updateSchema, {
      nonNullable: ['name'],
      fixed: ['key'],
    });
    // Lowering maxPoints never reduces existing totals: only future awards are capped.
    const row = await systemRows.update(deps, input.id, {
      name: input.name ?? current.name,
      description: patched(input.description, current.description),
      badgeUrl: patchedBadgeUrl(input.badge, current.badgeUrl),
      maxPoints: input.maxPoints === undefined ? current.maxPoints : input.maxPoints,
    });
    return showPointsSystem(row);
  },
  async remove(deps, { id }) {
    if (!(await findPointsSystem(deps, id))) throw new ItemIssue('Points system not found');
    const ranked = deps.catalog.snapshot.leaderboards.some(
      (b) => b.pointsSystemId === id && b.status !== 'finished',
    );
    if (ranked) throw new ItemIssue('Points system is in use');
    const deletedAt = new Date(deps.clock.now());
    // The system's triggers, levels and boosts go with it; user totals disappear with the system.
    await deps.db.transaction(async (tx) => {
      await tx.update(pointsSystems).set({ deletedAt }).where(eq(pointsSystems.id, id));
      for (const t of [pointsTriggers, pointsLevels, pointsBoosts]) {
        await tx
          .update(t)
          .set({ deletedAt })
          .where(and(eq(t.systemId, id), isNull(t.deletedAt)));
      }
    });
  },
};
