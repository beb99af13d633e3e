import { and, eq, isNull, sql } from 'drizzle-orm';
import type { AchievementRow } from '../catalog/snapshot';
import { achievements, pointsSystems, pointsTriggers, type StoredFilter } from '../db/schema';
import type { Deps } from '../deps';
import { backdateAchievement } from '../services/backdate';
import type { BulkResource } from './resource';
import { z } from '../zod';
import {
  checkFilters,
  iso,
  ItemIssue,
  keyedColumns,
  keyedPatch,
  liveTable,
  parseItem,
  patchedBadgeUrl,
  showFilters,
} from './common';
import {
  badgeSchema,
  describedOutFields,
  descriptionSchema,
  filterListSchema,
  keySchema,
  nameSchema,
} from './fields';

const TRIGGERS = ['metric', 'streak', 'api', 'achievement'] as const;
type Trigger = (typeof TRIGGERS)[number];
type Status = AchievementRow['status'];

const FilterOutSchema = z.object({
  attributeId: z.uuid(),
  attributeKey: z.string().nullable(),
  attributeValue: z.string(),
});

export const AdminAchievementSchema = z
  .object({
    ...describedOutFields,
    trigger: z.enum(TRIGGERS),
    status: z.enum(['inactive', 'active', 'locked']),
    metricId: z.uuid().optional(),
    metricValue: z.number().optional(),
    eventAttributes: z.array(FilterOutSchema).optional(),
    streakLength: z.number().int().optional(),
    achievementIds: z.array(z.uuid()).optional(),
    userAttributes: z.array(FilterOutSchema),
    completions: z.number().int(),
    created: z.string(),
    updated: z.string(),
  })
  .openapi('AdminAchievement');

const metricValueSchema = z.number().positive();
const streakLengthSchema = z.number().int().min(1);
const achievementIdsSchema = z.array(z.uuid()).min(1).max(100);

const requirementFields = {
  metricId: z.uuid().optional(),
  metricValue: metricValueSchema.optional(),
  eventAttributes: filterListSchema.optional(),
  streakLength: streakLengthSchema.optional(),
  achievementIds: achievementIdsSchema.optional(),
  userAttributes: filterListSchema.optional(),
};

const createSchema = z
  .object({
    name: nameSchema,
    key: keySchema,
    trigger: z.enum(TRIGGERS),
    description: descriptionSchema.optional(),
    badge: badgeSchema.optional(),
    status: z.enum(['inactive', 'active']).optional(),
    ...requirementFields,
  })
  .openapi('AdminAchievementCreate');

const updateSchema = z
  .object({
    id: z.uuid(),
    name: nameSchema.optional(),
    key: keySchema.optional(),
    trigger: z.enum(TRIGGERS).optional(),
    description: descriptionSchema.optional(),
    badge: badgeSchema.optional(),
    status: z.enum(['inactive', 'active', 'locked']).optional(),
    ...requirementFields,
  })
  .openapi('AdminAchievementUpdate');

type Input = z.output<typeof updateSchema>;

/** The fields that belong to one trigger; given for another trigger they are an item error. */
const TRIGGER_FIELDS: Record<
  Trigger,
  Array<'metricId' | 'metricValue' | 'eventAttributes' | 'streakLength' | 'achievementIds'>
> = {
  metric: ['metricId', 'metricValue', 'eventAttributes'],
  streak: ['streakLength'],
  api: [],
  achievement: ['achievementIds'],
};

/** Allowed status changes (semantics §3.3); the same status is a no-op. */
const TRANSITIONS: Record<Status, Status[]> = {
  inactive: ['active'],
  active: ['locked'],
  locked: ['active'],
};

type Requirement = Pick<
  AchievementRow,
  | 'trigger'
  | 'metricId'
  | 'metricValue'
  | 'eventAttributes'
  | 'streakLength'
  | 'achievementIds'
  | 'userAttributes'
>;

/** Admin shape; `completions` comes from the global Redis counter. */
export function showAchievement(deps: Deps, a: AchievementRow, completions: number) {
  const snap = deps.catalog.snapshot;
  return {
    id: a.id,
    key: a.key,
    name: a.name,
    description: a.description,
    badge: a.badgeUrl ? { url: a.badgeUrl } : null,
    trigger: a.trigger,
    status: a.status,
    ...(a.trigger === 'metric'
      ? {
          metricId: a.metricId!,
          metricValue: a.metricValue!,
          eventAttributes: showFilters(snap, a.eventAttributes),
        }
      : {}),
    ...(a.trigger === 'streak' ? { streakLength: a.streakLength! } : {}),
    ...(a.trigger === 'achievement' ? { achievementIds: a.achievementIds } : {}),
    userAttributes: showFilters(snap, a.userAttributes),
    completions,
    created: iso(a.created),
    updated: iso(a.updated),
  };
}

type ShownAchievement = ReturnType<typeof showAchievement>;

async function withCompletions(deps: Deps, rows: AchievementRow[]): Promise<ShownAchievement[]> {
  if (rows.length === 0) return [];
  const counts = await deps.redis.hmget(deps.keys.global.achievementCompletions, ...rows.map((r) => r.id));
  return rows.map((r, i) => showAchievement(deps, r, Number(counts[i] ?? 0) || 0));
}

const achievementRows = liveTable(achievements, 'achievement');

function rejectForeignFields(input: Partial<Input>, trigger: Trigger): void {
  for (const [other, fields] of Object.entries(TRIGGER_FIELDS)) {
    if (other === trigger) continue;
    for (const f of fields) {
      const v = input[f];
      const empty =
        v === undefined || v === null || (f === 'eventAttributes' && Array.isArray(v) && v.length === 0);
      if (!empty) throw new ItemIssue(`${f} is only allowed with trigger ${other}`);
    }
  }
}

/**
 * Checks a requirement as it will be stored: required fields of the trigger, existing metric and
 * attributes, and composites naming 1–100 distinct existing achievements without a cycle.
 */
async function checkRequirement(deps: Deps, req: Requirement, selfId: string | null): Promise<Requirement> {
  const snap = deps.catalog.snapshot;
  const out: Requirement = {
    trigger: req.trigger,
    metricId: null,
    metricValue: null,
    eventAttributes: [],
    streakLength: null,
    achievementIds: [],
    userAttributes: checkFilters(snap, req.userAttributes, 'user', 'userAttributes'),
  };
  switch (req.trigger) {
    case 'metric':
      if (!req.metricId) throw new ItemIssue('metricId is required for trigger metric');
      if (req.metricValue === null) throw new ItemIssue('metricValue is required for trigger metric');
      if (!snap.metricsById.has(req.metricId)) throw new ItemIssue('Metric not found');
      out.metricId = req.metricId;
      out.metricValue = req.metricValue;
      out.eventAttributes = checkFilters(snap, req.eventAttributes, 'event', 'eventAttributes');
      break;
    case 'streak':
      if (req.streakLength === null) throw new ItemIssue('streakLength is required for trigger streak');
      out.streakLength = req.streakLength;
      break;
    case 'achievement':
      if (req.achievementIds.length === 0)
        throw new ItemIssue('achievementIds is required for trigger achievement');
      if (new Set(req.achievementIds).size !== req.achievementIds.length) {
        throw new ItemIssue('achievementIds must not repeat an achievement');
      }
      await checkPrerequisites(deps, req.achievementIds, selfId);
      out.achievementIds = [...req.achievementIds];
      break;
    case 'api':
      break;
  }
  return out;
}

/** Prerequisites must exist (earlier items of the same request count) and must not lead back to `selfId`. */
async function checkPrerequisites(deps: Deps, ids: string[], selfId: string | null): Promise<void> {
  const rows = await deps.db
    .select({ id: achievements.id, achievementIds: achievements.achievementIds })
    .from(achievements)
    .where(isNull(achievements.deletedAt));
  const edges = new Map(rows.map((r) => [r.id, r.achievementIds]));
  const missing = ids.find((id) => !edges.has(id));
  if (missing) throw new ItemIssue(`achievementIds: achievement ${missing} does not exist`);
  if (selfId === null) return;
  const seen = new Set<string>();
  const stack = [...ids];
  while (stack.length) {
    const id = stack.pop()!;
    if (id === selfId) throw new ItemIssue('achievementIds would create a cycle');
    if (seen.has(id)) continue;
    seen.add(id);
    stack.push(...(edges.get(id) ?? []));
  }
}

const sameRequirement = (a: Requirement, b: Requirement) =>
  a.trigger === b.trigger &&
  a.metricId === b.metricId &&
  a.metricValue === b.metricValue &&
  a.streakLength === b.streakLength &&
  JSON.stringify(a.eventAttributes) === JSON.stringify(b.eventAttributes) &&
  JSON.stringify(a.achievementIds) === JSON.stringify(b.achievementIds) &&
  JSON.stringify(a.userAttributes) === JSON.stringify(b.userAttributes);

/** Backdating reads the configuration snapshot, so it must see the committed change first. */
async function backdate(deps: Deps, id: string): Promise<void> {
  if (deps.afterCommit) return deps.afterCommit((committed) => backdate(committed, id));
  await deps.catalog.reload();
  await backdateAchievement(deps, id);
}

/** Whether a live achievement names it as a prerequisite, or a trigger of a live points system awards it. */
async function achievementInUse(deps: Deps, id: string): Promise<boolean> {
  const [prerequisiteOf] = await deps.db
    .select({ id: achievements.id })
    .from(achievements)
    .where(
      and(
        isNull(achievements.deletedAt),
        sql`${achievements.achievementIds} @> ${JSON.stringify([id])}::jsonb`,
      ),
    )
    .limit(1);
  const [trigger] = await deps.db
    .select({ id: pointsTriggers.id })
    .from(pointsTriggers)
    .innerJoin(pointsSystems, eq(pointsSystems.id, pointsTriggers.systemId))
    .where(
      and(
        isNull(pointsTriggers.deletedAt),
        isNull(pointsSystems.deletedAt),
        eq(pointsTriggers.achievementId, id),
      ),
    )
    .limit(1);
  return prerequisiteOf !== undefined || trigger !== undefined;
}

export const achievementsResource: BulkResource<ShownAchievement> = {
  name: 'achievement',
  schemas: { resource: AdminAchievementSchema, create: createSchema, update: updateSchema },
  async list(deps, { limit, skip }) {
    const rows = await achievementRows.list(deps, { limit, skip });
    return withCompletions(deps, rows);
  },
  async get(deps, { id }) {
    const row = await achievementRows.find(deps, { id });
    return row ? (await withCompletions(deps, [row]))[0]! : null;
  },
  async create(deps, { item }) {
    const input = parseItem(createSchema, item);
    rejectForeignFields(input, input.trigger);
    const req = await checkRequirement(
      deps,
      {
        trigger: input.trigger,
        metricId: input.metricId ?? null,
        metricValue: input.metricValue ?? null,
        eventAttributes: input.eventAttributes ?? [],
        streakLength: input.streakLength ?? null,
        achievementIds: input.achievementIds ?? [],
        userAttributes: input.userAttributes ?? [],
      },
      null,
    );
    const row: AchievementRow = await achievementRows.insert(deps, {
      ...keyedColumns(input),
      badgeUrl: input.badge?.url ?? null,
      status: input.status ?? 'inactive',
      ...req,
    });
    if (row.status === 'active') await backdate(deps, row.id);
    return (await withCompletions(deps, [row]))[0]!;
  },
  async update(deps, { item }) {
    const { input, current } = await achievementRows.patch(deps, item, updateSchema, {
      nonNullable: [
        'name',
        'key',
        'trigger',
        'status',
        'metricId',
        'metricValue',
        'streakLength',
        'achievementIds',
      ],
    });

    for (const f of ['key', 'trigger', 'metricId'] as const) {
      if (input[f] !== undefined && input[f] !== current[f] && current.status !== 'inactive') {
        throw new ItemIssue(`${f} can only be changed while the achievement is inactive`);
      }
    }
    const status = input.status ?? current.status;
    if (status !== current.status && !TRANSITIONS[current.status].includes(status)) {
      throw new ItemIssue(`Invalid status transition from ${current.status} to ${status}`);
    }

    const trigger = input.trigger ?? current.trigger;
    rejectForeignFields(input, trigger);
    // A new trigger starts from its own fields only; the old trigger's fields are dropped.
    const keep = trigger === current.trigger;
    const pick = <K extends keyof Requirement>(f: K, fallback: Requirement[K]): Requirement[K] => {
      const v = (input as Partial<Requirement>)[f];
      if (v !== undefined) return (v ?? fallback) as Requirement[K];
      return keep ? current[f] : fallback;
    };
    const next: Requirement = {
      trigger,
      metricId: pick('metricId', null),
      metricValue: pick('metricValue', null),
      eventAttributes: pick('eventAttributes', [] as StoredFilter[]),
      streakLength: pick('streakLength', null),
      achievementIds: pick('achievementIds', [] as string[]),
      userAttributes:
        input.userAttributes !== undefined ? (input.userAttributes ?? []) : current.userAttributes,
    };
    const req = await checkRequirement(deps, next, current.id);
    const requirementChanged = !sameRequirement(req, current);

    const row: AchievementRow = await achievementRows.update(deps, current.id, {
      ...keyedPatch(input, current),
      badgeUrl: patchedBadgeUrl(input.badge, current.badgeUrl),
      status,
      ...req,
    });
    const activated = status === 'active' && current.status !== 'active';
    if (activated || (status === 'active' && requirementChanged)) await backdate(deps, row.id);
    return (await withCompletions(deps, [row]))[0]!;
  },
  async remove(deps, { id }) {
    await achievementRows.remove(deps, { id }, () => achievementInUse(deps, id));
  },
};
