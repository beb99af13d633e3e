import { eq } from 'drizzle-orm';
import type { BoostRow, Snapshot } from '../catalog/snapshot';
import { pointsBoosts, users } from '../db/schema';
import type { Deps } from '../deps';
import type { BulkResource } from './resource';
import { z } from '../zod';
import { checkFilters, iso, ItemIssue, liveTable, parseItem, showFilters } from './common';
import { dateSchema, filterListSchema, nameSchema } from './fields';
import { requirePointsSystem, systemIdOf } from './points-systems';

const ROUNDINGS = ['down', 'up', 'nearest'] as const;

export const AdminPointsBoostSchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    status: z.enum(['scheduled', 'active', 'finished']),
    start: z.string(),
    end: z.string().nullable(),
    multiplier: z.number(),
    rounding: z.enum(ROUNDINGS),
    userId: z.string().nullable(),
    userAttributes: z.array(
      z.object({ attributeId: z.uuid(), attributeKey: z.string().nullable(), attributeValue: z.string() }),
    ),
    created: z.string(),
    updated: z.string(),
  })
  .openapi('AdminPointsBoost');

const multiplierSchema = z
  .number()
  .gt(0)
  .lt(100)
  .refine((m) => m !== 1, 'must not be 1');

const createSchema = z
  .object({
    name: nameSchema,
    start: dateSchema,
    end: dateSchema.nullable().optional(),
    multiplier: multiplierSchema,
    rounding: z.enum(ROUNDINGS).nullish(),
    userId: z.string().min(1).max(255).nullable().optional(),
    userAttributes: filterListSchema.optional(),
  })
  .openapi('AdminPointsBoostCreate');

const updateSchema = z
  .object({
    id: z.uuid(),
    name: nameSchema.optional(),
    start: dateSchema.optional(),
    end: dateSchema.nullable().optional(),
    multiplier: multiplierSchema.optional(),
    rounding: z.enum(ROUNDINGS).optional(),
    userAttributes: filterListSchema.optional(),
  })
  .openapi('AdminPointsBoostUpdate');

/** Admin status: evaluated on the UTC date (semantics §5.8). */
export function boostStatus(b: { start: string; end: string | null }, nowMs: number) {
  const today = new Date(nowMs).toISOString().slice(0, 10);
  if (today < b.start) return 'scheduled' as const;
  if (b.end !== null && today > b.end) return 'finished' as const;
  return 'active' as const;
}

export function showBoost(snap: Snapshot, b: BoostRow, nowMs: number) {
  return {
    id: b.id,
    name: b.name,
    status: boostStatus(b, nowMs),
    start: b.start,
    end: b.end,
    multiplier: b.multiplier,
    rounding: b.rounding,
    userId: b.userId,
    userAttributes: showFilters(snap, b.userAttributes),
    created: iso(b.created),
    updated: iso(b.updated),
  };
}

/** A user exists once Redis has their profile or the history writer has stored them. */
async function userExists(deps: Deps, userId: string): Promise<boolean> {
  if ((await deps.redis.exists(deps.keys.user(userId).hash)) > 0) return true;
  const [row] = await deps.db.select({ id: users.id }).from(users).where(eq(users.id, userId));
  return row !== undefined;
}

function checkWindow(start: string, end: string | null): void {
  if (end !== null && end < start) throw new ItemIssue('end must not be before start');
}

const boostRows = liveTable(pointsBoosts, 'boost', pointsBoosts.systemId);

export const boostsResource: BulkResource<ReturnType<typeof showBoost>> = {
  name: 'boost',
  schemas: { resource: AdminPointsBoostSchema, create: createSchema, update: updateSchema },
  listQuery: z.object({ userId: z.string().optional() }),
  parent: requirePointsSystem,
  async list(deps, { limit, skip, query, ...scope }) {
    const userId = query?.userId;
    const rows = await boostRows.list(
      deps,
      { limit, skip, ...scope },
      userId !== undefined ? eq(pointsBoosts.userId, userId) : undefined,
    );
    const snap = deps.catalog.snapshot;
    const now = deps.clock.now();
    return rows.map((b) => showBoost(snap, b, now));
  },
  async get(deps, { id, ...scope }) {
    const row = await boostRows.find(deps, { id, ...scope });
    return row ? showBoost(deps.catalog.snapshot, row, deps.clock.now()) : null;
  },
  async create(deps, { item, ...scope }) {
    const input = parseItem(createSchema, item);
    const end = input.end ?? null;
    checkWindow(input.start, end);
    const userId = input.userId ?? null;
    if (userId !== null && input.userAttributes?.length) {
      throw new ItemIssue('userId and userAttributes cannot be combined');
    }
    const snap = deps.catalog.snapshot;
    const userAttributes = checkFilters(snap, input.userAttributes, 'user', 'userAttributes');
    if (userId !== null && !(await userExists(deps, userId))) throw new ItemIssue('User does not exist');
    const row = await boostRows.insert(deps, {
      systemId: systemIdOf(scope),
      name: input.name,
      start: input.start,
      end,
      multiplier: input.multiplier,
      rounding: input.rounding ?? 'down',
      userId,
      userAttributes,
    });
    // The status as of the write (`created` and `updated` are the clock's now).
    return showBoost(snap, row, row.created.getTime());
  },
  async update(deps, { item, ...scope }) {
    const { input, current } = await boostRows.patch(
      deps,
      item,
      updateSchema,
      { nonNullable: ['name', 'start', 'multiplier', 'rounding'], fixed: ['userId'] },
      scope,
    );
    const start = input.start ?? current.start;
    const end = input.end === undefined ? current.end : input.end;
    checkWindow(start, end);
    const snap = deps.catalog.snapshot;
    let userAttributes = current.userAttributes;
    if (input.userAttributes !== undefined) {
      if (current.userId !== null && input.userAttributes?.length) {
        throw new ItemIssue('userAttributes cannot be set on a user-specific boost');
      }
      userAttributes = checkFilters(snap, input.userAttributes, 'user', 'userAttributes');
    }
    const row = await boostRows.update(deps, current.id, {
      name: input.name ?? current.name,
      start,
      end,
      multiplier: input.multiplier ?? current.multiplier,
      rounding: input.rounding ?? current.rounding,
      userAttributes,
    });
    return showBoost(snap, row, row.updated.getTime());
  },
  async remove(deps, { id, ...scope }) {
    await boostRows.remove(deps, { id, ...scope });
  },
};
