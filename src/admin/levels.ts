import { and, eq, isNull, ne, sql } from 'drizzle-orm';
import type { LevelRow } from '../catalog/snapshot';
import { pointsLevels } from '../db/schema';
import type { Deps } from '../deps';
import type { BulkResource } from './resource';
import { z } from '../zod';
import {
  iso,
  ItemIssue,
  liveTable,
  newId,
  parseItem,
  patched,
  patchedBadgeUrl,
  rejectChanges,
  rejectNulls,
} from './common';
import { badgeSchema, describedOutFields, descriptionSchema, keySchema, nameSchema } from './fields';
import { requirePointsSystem, showBadge, systemIdOf } from './points-systems';

export const AdminPointsLevelSchema = z
  .object({
    ...describedOutFields,
    points: z.number().int(),
    created: z.string(),
    updated: z.string(),
  })
  .openapi('AdminPointsLevel');

const pointsSchema = z.number().int().min(0);

const createSchema = z
  .object({
    name: nameSchema,
    key: keySchema,
    points: pointsSchema,
    description: descriptionSchema.optional(),
    badge: badgeSchema.optional(),
  })
  .openapi('AdminPointsLevelCreate');

const updateSchema = z
  .object({
    id: z.uuid(),
    name: nameSchema.optional(),
    points: pointsSchema.optional(),
    description: descriptionSchema.optional(),
    badge: badgeSchema.optional(),
  })
  .openapi('AdminPointsLevelUpdate');

export const showLevel = (l: LevelRow) => ({
  id: l.id,
  key: l.key,
  name: l.name,
  description: l.description,
  badge: showBadge(l.badgeUrl),
  points: l.points,
  created: iso(l.created),
  updated: iso(l.updated),
});

const levelRows = liveTable(pointsLevels, 'level', pointsLevels.systemId);

type Tx = Parameters<Parameters<Deps['db']['transaction']>[0]>[0];

/**
 * Runs `fn` holding the system's level lock: key and threshold uniqueness are per system and have
 * no database constraint, so concurrent writers of one system's levels are serialised.
 */
function withLevelLock<T>(deps: Deps, systemId: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return deps.db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`points_levels:${systemId}`}))`);
    return fn(tx);
  });
}

/** Thresholds are unique among the system's live levels. */
async function checkPointsFree(tx: Tx, systemId: string, points: number, exceptId?: string): Promise<void> {
  const [clash] = await tx
    .select({ id: pointsLevels.id })
    .from(pointsLevels)
    .where(
      and(
        eq(pointsLevels.systemId, systemId),
        eq(pointsLevels.points, points),
        isNull(pointsLevels.deletedAt),
        exceptId ? ne(pointsLevels.id, exceptId) : undefined,
      ),
    );
  if (clash) throw new ItemIssue('A level with these points already exists in this points system');
}

export const levelsResource: BulkResource<ReturnType<typeof showLevel>> = {
  name: 'level',
  schemas: { resource: AdminPointsLevelSchema, create: createSchema, update: updateSchema },
  parent: requirePointsSystem,
  async list(deps, { limit, skip, ...scope }) {
    const rows = await levelRows.list(deps, { limit, skip, ...scope });
    return rows.map(showLevel);
  },
  async get(deps, { id, ...scope }) {
    const row = await levelRows.find(deps, { id, ...scope });
    return row ? showLevel(row) : null;
  },
  async create(deps, { item, ...scope }) {
    const input = parseItem(createSchema, item);
    const systemId = systemIdOf(scope);
    const now = new Date(deps.clock.now());
    const row = await withLevelLock(deps, systemId, async (tx) => {
      // Keys of deleted levels stay reserved, so every row of the system counts.
      const [sameKey] = await tx
        .select({ id: pointsLevels.id })
        .from(pointsLevels)
        .where(and(eq(pointsLevels.systemId, systemId), eq(pointsLevels.key, input.key)));
      if (sameKey) throw new ItemIssue('A level with this key already exists in this points system');
      await checkPointsFree(tx, systemId, input.points);
      const [inserted] = await tx
        .insert(pointsLevels)
        .values({
          id: newId(),
          systemId,
          key: input.key,
          name: input.name,
          description: input.description ?? null,
          badgeUrl: input.badge?.url ?? null,
          points: input.points,
          created: now,
          updated: now,
        })
        .returning();
      return inserted!;
    });
    return showLevel(row);
  },
  async update(deps, { item, ...scope }) {
    const raw = item as Record<string, unknown>;
    rejectNulls(raw, ['name', 'points']);
    const input = parseItem(updateSchema, item);
    const systemId = systemIdOf(scope);
    const row = await withLevelLock(deps, systemId, async (tx) => {
      const current = await levelRows.find(deps, { id: input.id, systemId }, tx);
      if (!current) throw new ItemIssue('Level not found');
      rejectChanges(raw, current, ['key']);
      if (input.points !== undefined && input.points !== current.points) {
        await checkPointsFree(tx, systemId, input.points, current.id);
      }
      const updated = await levelRows.update(
        deps,
        current.id,
        {
          name: input.name ?? current.name,
          points: input.points ?? current.points,
          description: patched(input.description, current.description),
          badgeUrl: patchedBadgeUrl(input.badge, current.badgeUrl),
        },
        { db: tx },
      );
      return updated;
    });
    return showLevel(row);
  },
  async remove(deps, { id, ...scope }) {
    await levelRows.remove(deps, { id, ...scope });
  },
};
