import type { Snapshot, TriggerRow } from '../catalog/snapshot';
import { pointsTriggers, type StoredFilter } from '../db/schema';
import type { BulkResource } from './resource';
import { z } from '../zod';
import { checkFilters, iso, ItemIssue, liveTable, parseItem, showFilters } from './common';
import { filterListSchema } from './fields';
import { requirePointsSystem, systemIdOf } from './points-systems';

const TYPES = ['metric', 'achievement', 'streak', 'time', 'user_creation'] as const;
type TriggerType = (typeof TYPES)[number];

/** The fields each type requires; a field of another type is an item error. */
const TYPE_FIELDS: Record<TriggerType, readonly string[]> = {
  metric: ['metricId', 'metricThreshold'],
  achievement: ['achievementId'],
  streak: ['streakLength'],
  time: ['timeUnit', 'timeInterval'],
  user_creation: [],
};
const ALL_TYPE_FIELDS = [...Object.values(TYPE_FIELDS).flat(), 'eventAttributes'];

/** The fields of a trigger item that are never null: type, points, status and those of every type. */
export const TRIGGER_FIELDS: readonly string[] = [
  'type',
  'points',
  'status',
  ...Object.values(TYPE_FIELDS).flat(),
];

const FilterOutSchema = z.object({
  attributeId: z.uuid(),
  attributeKey: z.string().nullable(),
  attributeValue: z.string(),
});

export const AdminPointsTriggerSchema = z
  .object({
    id: z.uuid(),
    type: z.enum(TYPES),
    points: z.number().int(),
    status: z.enum(['active', 'inactive']),
    userAttributes: z.array(FilterOutSchema),
    metricId: z.uuid().optional(),
    metricThreshold: z.number().optional(),
    eventAttributes: z.array(FilterOutSchema).optional(),
    achievementId: z.uuid().optional(),
    streakLength: z.number().int().optional(),
    timeUnit: z.enum(['hours', 'days']).optional(),
    timeInterval: z.number().int().optional(),
    created: z.string(),
    updated: z.string(),
  })
  .openapi('AdminPointsTrigger');

const pointsSchema = z
  .number()
  .int()
  .refine((p) => p !== 0, 'must not be zero')
  .refine((p) => Math.abs(p) <= 1_000_000_000, 'must be between -1000000000 and 1000000000');
const statusSchema = z.enum(['active', 'inactive']);
const timeUnitSchema = z
  .enum(['hours', 'days', 'hour', 'day'])
  .transform((u): 'hours' | 'days' => (u === 'hour' || u === 'hours' ? 'hours' : 'days'));

const fields = {
  userAttributes: filterListSchema.optional(),
  metricId: z.uuid().optional(),
  metricThreshold: z.number().positive().optional(),
  eventAttributes: filterListSchema.optional(),
  achievementId: z.uuid().optional(),
  streakLength: z.number().int().min(1).optional(),
  timeUnit: timeUnitSchema.optional(),
  timeInterval: z.number().int().min(1).optional(),
};

const createSchema = z
  .object({ type: z.enum(TYPES), points: pointsSchema, status: statusSchema.nullish(), ...fields })
  .openapi('AdminPointsTriggerCreate');

const updateSchema = z
  .object({
    id: z.uuid(),
    type: z.enum(TYPES).optional(),
    points: pointsSchema.optional(),
    status: statusSchema.optional(),
    ...fields,
  })
  .openapi('AdminPointsTriggerUpdate');

type Fields = Omit<z.output<typeof updateSchema>, 'id' | 'status' | 'type' | 'points'>;

export function showTrigger(snap: Snapshot, t: TriggerRow) {
  return {
    id: t.id,
    type: t.type,
    points: t.points,
    status: t.status,
    userAttributes: showFilters(snap, t.userAttributes),
    ...(t.type === 'metric'
      ? {
          metricId: t.metricId!,
          metricThreshold: t.metricThreshold!,
          eventAttributes: showFilters(snap, t.eventAttributes),
        }
      : {}),
    ...(t.type === 'achievement' ? { achievementId: t.achievementId! } : {}),
    ...(t.type === 'streak' ? { streakLength: t.streakLength! } : {}),
    ...(t.type === 'time' ? { timeUnit: t.timeUnit!, timeInterval: t.timeInterval! } : {}),
    created: iso(t.created),
    updated: iso(t.updated),
  };
}

const given = (v: unknown) => v !== undefined && v !== null;

/** Rejects fields of another type; with `requireAll`, every field of `type` must be given. */
function checkTypeFields(type: TriggerType, input: Fields, requireAll: boolean): void {
  const own = new Set<string>(TYPE_FIELDS[type]);
  if (type === 'metric') own.add('eventAttributes');
  for (const f of ALL_TYPE_FIELDS) {
    const v = input[f as keyof Fields];
    // An empty or null filter list means "none" and fits every type.
    if (f === 'eventAttributes' && (!given(v) || (v as unknown[]).length === 0)) continue;
    if (!own.has(f) && given(v)) throw new ItemIssue(`${f} is not allowed for ${type} triggers`);
  }
  if (requireAll) {
    for (const f of TYPE_FIELDS[type]) {
      if (!given(input[f as keyof Fields])) throw new ItemIssue(`${f} is required for ${type} triggers`);
    }
  }
}

function checkReferences(snap: Snapshot, t: { metricId: string | null; achievementId: string | null }): void {
  if (t.metricId !== null && !snap.metricsById.has(t.metricId)) throw new ItemIssue('Metric not found');
  if (t.achievementId !== null && !snap.achievementsById.has(t.achievementId)) {
    throw new ItemIssue('Achievement not found');
  }
}

const triggerRows = liveTable(pointsTriggers, 'trigger', pointsTriggers.systemId);

export const triggersResource: BulkResource<ReturnType<typeof showTrigger>> = {
  name: 'trigger',
  schemas: { resource: AdminPointsTriggerSchema, create: createSchema, update: updateSchema },
  parent: requirePointsSystem,
  async list(deps, { limit, skip, ...scope }) {
    const rows = await triggerRows.list(deps, { limit, skip, ...scope });
    const snap = deps.catalog.snapshot;
    return rows.map((t) => showTrigger(snap, t));
  },
  async get(deps, { id, ...scope }) {
    const row = await triggerRows.find(deps, { id, ...scope });
    return row ? showTrigger(deps.catalog.snapshot, row) : null;
  },
  async create(deps, { item, ...scope }) {
    const input = parseItem(createSchema, item);
    checkTypeFields(input.type, input, true);
    const snap = deps.catalog.snapshot;
    const isMetric = input.type === 'metric';
    const values = {
      metricId: input.metricId ?? null,
      metricThreshold: input.metricThreshold ?? null,
      achievementId: input.achievementId ?? null,
      streakLength: input.streakLength ?? null,
      timeUnit: input.timeUnit ?? null,
      timeInterval: input.timeInterval ?? null,
    };
    checkReferences(snap, values);
    const userAttributes = checkFilters(snap, input.userAttributes, 'user', 'userAttributes');
    const eventAttributes: StoredFilter[] = isMetric
      ? checkFilters(snap, input.eventAttributes, 'event', 'eventAttributes')
      : [];
    const status = input.status ?? 'inactive';
    const now = new Date(deps.clock.now());
    const row = await triggerRows.insert(
      deps,
      {
        systemId: systemIdOf(scope),
        type: input.type,
        points: input.points,
        status,
        userAttributes,
        eventAttributes,
        ...values,
        activatedAt: status === 'active' ? now : null,
      },
      { now },
    );
    return showTrigger(snap, row);
  },
  async update(deps, { item, ...scope }) {
    const { input, current } = await triggerRows.patch(
      deps,
      item,
      updateSchema,
      { nonNullable: TRIGGER_FIELDS },
      scope,
    );
    const snap = deps.catalog.snapshot;

    const type = input.type ?? current.type;
    const typeChanged = type !== current.type;
    const identityChanged =
      typeChanged ||
      (input.metricId !== undefined && input.metricId !== current.metricId) ||
      (input.achievementId !== undefined && input.achievementId !== current.achievementId);
    if (identityChanged && current.status !== 'inactive') {
      throw new ItemIssue(
        'type, metricId and achievementId can only be changed while the trigger is inactive',
      );
    }
    // A new type starts from its own fields only; the old type's fields are cleared.
    checkTypeFields(type, input, typeChanged);
    const base = typeChanged
      ? {
          metricId: null,
          metricThreshold: null,
          achievementId: null,
          streakLength: null,
          timeUnit: null,
          timeInterval: null,
        }
      : current;
    const values = {
      metricId: input.metricId ?? base.metricId,
      metricThreshold: input.metricThreshold ?? base.metricThreshold,
      achievementId: input.achievementId ?? base.achievementId,
      streakLength: input.streakLength ?? base.streakLength,
      timeUnit: input.timeUnit ?? base.timeUnit,
      timeInterval: input.timeInterval ?? base.timeInterval,
    };
    if (input.metricId !== undefined || input.achievementId !== undefined) checkReferences(snap, values);
    const userAttributes =
      input.userAttributes === undefined
        ? current.userAttributes
        : checkFilters(snap, input.userAttributes, 'user', 'userAttributes');
    let eventAttributes: StoredFilter[] = [];
    if (type === 'metric') {
      eventAttributes =
        input.eventAttributes === undefined && !typeChanged
          ? current.eventAttributes
          : checkFilters(snap, input.eventAttributes, 'event', 'eventAttributes');
    }
    const status = input.status ?? current.status;
    const now = new Date(deps.clock.now());
    const row = await triggerRows.update(
      deps,
      current.id,
      {
        type,
        points: input.points ?? current.points,
        status,
        userAttributes,
        eventAttributes,
        ...values,
        // A change to active is an activation: running totals and time anchors restart from here.
        activatedAt: status === 'active' && current.status !== 'active' ? now : current.activatedAt,
      },
      { now },
    );
    return showTrigger(snap, row);
  },
  async remove(deps, { id, ...scope }) {
    // Soft delete: past awards keep showing the trigger as archived.
    await triggerRows.remove(deps, { id, ...scope });
  },
};
