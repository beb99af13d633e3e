import type { LeaderboardRow } from '../catalog/snapshot';
import { leaderboards } from '../db/schema';
import type { Deps } from '../deps';
import { type LeaderboardStatus, leaderboardStatus, utcDate } from '../engine/leaderboard-status';
import type { BulkResource } from './resource';
import { z } from '../zod';
import { iso, ItemIssue, keyedColumns, keyedPatch, liveTable, parseItem } from './common';
import { dateSchema, descriptionSchema, keySchema, nameSchema } from './fields';

const RANK_BY = ['metric', 'points', 'streak'] as const;
const RUN_UNITS = ['day', 'month', 'year'] as const;
const STATUSES = ['inactive', 'scheduled', 'active', 'finished'] as const;

export const AdminLeaderboardSchema = z
  .object({
    id: z.uuid(),
    key: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    status: z.enum(STATUSES),
    rankBy: z.enum(RANK_BY),
    metricId: z.uuid().nullable(),
    pointsSystemId: z.uuid().nullable(),
    maxParticipants: z.number().int(),
    start: z.string(),
    end: z.string().nullable(),
    breakdownAttributes: z.array(z.uuid()),
    runUnit: z.enum(RUN_UNITS).nullable(),
    runInterval: z.number().int(),
    created: z.string(),
    updated: z.string(),
  })
  .openapi('AdminLeaderboard');

const maxParticipantsSchema = z.number().int().min(1).max(1000);
const breakdownSchema = z.array(z.uuid()).max(5);
const runIntervalSchema = z.number().int().min(0).nullable();

const createSchema = z
  .object({
    name: nameSchema,
    key: keySchema,
    rankBy: z.enum(RANK_BY),
    metricId: z.uuid().nullable().optional(),
    pointsSystemId: z.uuid().nullable().optional(),
    description: descriptionSchema.optional(),
    maxParticipants: maxParticipantsSchema.optional(),
    start: dateSchema.optional(),
    end: dateSchema.nullable().optional(),
    breakdownAttributes: breakdownSchema.nullable().optional(),
    runUnit: z.enum(RUN_UNITS).nullable().optional(),
    runInterval: runIntervalSchema.optional(),
    status: z.enum(STATUSES).optional(),
  })
  .openapi('AdminLeaderboardCreate');

const updateSchema = z
  .object({
    id: z.uuid(),
    name: nameSchema.optional(),
    description: descriptionSchema.optional(),
    status: z.enum(STATUSES).optional(),
    end: dateSchema.nullable().optional(),
    start: dateSchema.optional(),
    maxParticipants: maxParticipantsSchema.optional(),
    key: keySchema.optional(),
    rankBy: z.enum(RANK_BY).optional(),
    metricId: z.uuid().nullable().optional(),
    pointsSystemId: z.uuid().nullable().optional(),
    breakdownAttributes: breakdownSchema.optional(),
    runUnit: z.enum(RUN_UNITS).nullable().optional(),
    runInterval: runIntervalSchema.optional(),
  })
  .openapi('AdminLeaderboardUpdate');

type UpdateInput = z.output<typeof updateSchema>;

type Config = Pick<
  LeaderboardRow,
  | 'rankBy'
  | 'metricId'
  | 'pointsSystemId'
  | 'start'
  | 'end'
  | 'breakdownAttributes'
  | 'runUnit'
  | 'runInterval'
>;

/** Admin shape; the status is computed from the clock (a due board shows its new status before the job runs). */
export const showLeaderboard = (b: LeaderboardRow, nowMs: number) => ({
  id: b.id,
  key: b.key,
  name: b.name,
  description: b.description,
  status: leaderboardStatus(b, nowMs),
  rankBy: b.rankBy,
  metricId: b.metricId,
  pointsSystemId: b.pointsSystemId,
  maxParticipants: b.maxParticipants,
  start: b.start,
  end: b.end,
  breakdownAttributes: b.breakdownAttributes,
  runUnit: b.runUnit,
  runInterval: b.runInterval,
  created: iso(b.created),
  updated: iso(b.updated),
});

type ShownLeaderboard = ReturnType<typeof showLeaderboard>;

const leaderboardRows = liveTable(leaderboards, 'leaderboard');

/**
 * Checks a configuration as it will be stored. References are checked only when `fresh` says the
 * field was given, so a finished board whose metric was deleted can still be renamed.
 */
function checkConfig(deps: Deps, c: Config, fresh: Partial<Record<keyof Config, boolean>>): void {
  const snap = deps.catalog.snapshot;
  if (c.rankBy === 'metric' && !c.metricId) throw new ItemIssue('metricId is required when rankBy is metric');
  if (c.rankBy !== 'metric' && c.metricId)
    throw new ItemIssue('metricId is only allowed when rankBy is metric');
  if (c.rankBy === 'points' && !c.pointsSystemId)
    throw new ItemIssue('pointsSystemId is required when rankBy is points');
  if (c.rankBy !== 'points' && c.pointsSystemId) {
    throw new ItemIssue('pointsSystemId is only allowed when rankBy is points');
  }
  if (fresh.metricId && c.metricId && !snap.metricsById.has(c.metricId))
    throw new ItemIssue('Metric not found');
  if (fresh.pointsSystemId && c.pointsSystemId && !snap.systemsById.has(c.pointsSystemId)) {
    throw new ItemIssue('Points system not found');
  }
  if (c.rankBy === 'streak' && c.runUnit !== null)
    throw new ItemIssue('Streak leaderboards cannot repeat: runUnit must be null');
  if (c.runUnit !== null && c.runInterval < 1)
    throw new ItemIssue('runInterval must be at least 1 when runUnit is set');
  if (c.runUnit === null && c.runInterval !== 0) throw new ItemIssue('runInterval requires runUnit');
  if (c.end !== null && c.end < c.start) throw new ItemIssue('end must not be before start');
  if (fresh.breakdownAttributes) {
    const seen = new Set<string>();
    for (const id of c.breakdownAttributes) {
      const attr = snap.attributesById.get(id);
      if (!attr) throw new ItemIssue(`breakdownAttributes: attribute ${id} does not exist`);
      if (attr.type !== 'user')
        throw new ItemIssue(`breakdownAttributes: attribute ${attr.key} is not a user attribute`);
      if (seen.has(id)) throw new ItemIssue(`breakdownAttributes: attribute ${attr.key} is given twice`);
      seen.add(id);
    }
  }
}

/** Activation (admin §15): `active` when the start has come (UTC), else `scheduled`. */
const activate = (start: string, today: string): LeaderboardStatus =>
  start <= today ? 'active' : 'scheduled';

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

const INACTIVE_ONLY = [
  'key',
  'rankBy',
  'metricId',
  'pointsSystemId',
  'breakdownAttributes',
  'runUnit',
  'runInterval',
] as const;

export const leaderboardsResource: BulkResource<ShownLeaderboard> = {
  name: 'leaderboard',
  schemas: { resource: AdminLeaderboardSchema, create: createSchema, update: updateSchema },
  async list(deps, { limit, skip }) {
    const rows = await leaderboardRows.list(deps, { limit, skip });
    const now = deps.clock.now();
    return rows.map((r) => showLeaderboard(r, now));
  },
  async get(deps, { id }) {
    const row = await leaderboardRows.find(deps, { id });
    return row ? showLeaderboard(row, deps.clock.now()) : null;
  },
  async create(deps, { item }) {
    const input = parseItem(createSchema, item);
    const nowMs = deps.clock.now();
    const today = utcDate(nowMs);
    if (input.status === 'finished') throw new ItemIssue('A leaderboard cannot be created finished');
    const config: Config = {
      rankBy: input.rankBy,
      metricId: input.metricId ?? null,
      pointsSystemId: input.pointsSystemId ?? null,
      start: input.start ?? today,
      end: input.end ?? null,
      breakdownAttributes: input.breakdownAttributes ?? [],
      runUnit: input.runUnit ?? null,
      runInterval: input.runInterval ?? 0,
    };
    checkConfig(deps, config, { metricId: true, pointsSystemId: true, breakdownAttributes: true });
    const activating = input.status === 'active' || input.status === 'scheduled';
    const now = new Date(nowMs);
    const values = {
      ...keyedColumns(input),
      status: activating ? activate(config.start, today) : 'inactive',
      maxParticipants: input.maxParticipants ?? 1000,
      ...config,
      activatedAt: activating ? now : null,
    } as const;
    const row = await leaderboardRows.insert(deps, values, { now });
    return showLeaderboard(row, nowMs);
  },
  async update(deps, { item }) {
    const { input, current } = await leaderboardRows.patch(deps, item, updateSchema, {
      nonNullable: ['name', 'status', 'start', 'maxParticipants', 'key', 'rankBy', 'breakdownAttributes'],
    });
    if (input.runInterval === null) input.runInterval = 0;
    const nowMs = deps.clock.now();
    const today = utcDate(nowMs);
    const status = leaderboardStatus(current, nowMs);
    const changes = (f: keyof UpdateInput & keyof LeaderboardRow) =>
      input[f] !== undefined && !same(input[f], current[f]);

    for (const f of INACTIVE_ONLY) {
      if (changes(f) && status !== 'inactive')
        throw new ItemIssue(`${f} can only be changed while the leaderboard is inactive`);
    }
    for (const f of ['start', 'maxParticipants'] as const) {
      if (changes(f) && status !== 'inactive' && status !== 'scheduled') {
        throw new ItemIssue(`${f} can only be changed while the leaderboard is inactive or scheduled`);
      }
    }
    if (changes('end')) {
      if (status === 'finished') throw new ItemIssue('end cannot be changed on a finished leaderboard');
      if (status === 'active' && input.end !== null && input.end! < today) {
        throw new ItemIssue('end must not be before today (UTC) on an active leaderboard');
      }
    }

    // Switching rankBy drops the reference of the old kind unless the item names one.
    const rankBy = input.rankBy ?? current.rankBy;
    const runUnit = input.runUnit !== undefined ? input.runUnit : current.runUnit;
    const config: Config = {
      rankBy,
      metricId: input.metricId !== undefined ? input.metricId : rankBy === 'metric' ? current.metricId : null,
      pointsSystemId:
        input.pointsSystemId !== undefined
          ? input.pointsSystemId
          : rankBy === 'points'
            ? current.pointsSystemId
            : null,
      start: input.start ?? current.start,
      end: input.end !== undefined ? input.end : current.end,
      breakdownAttributes: input.breakdownAttributes ?? current.breakdownAttributes,
      runUnit,
      runInterval: input.runInterval ?? (runUnit === null ? 0 : current.runInterval),
    };
    checkConfig(deps, config, {
      metricId: changes('metricId'),
      pointsSystemId: changes('pointsSystemId'),
      breakdownAttributes: changes('breakdownAttributes'),
    });

    let nextStatus: LeaderboardStatus = current.status;
    let activatedAt = current.activatedAt;
    let finishedAt = current.finishedAt;
    const requested = input.status;
    if (requested !== undefined && requested !== status) {
      if (status === 'inactive' && (requested === 'active' || requested === 'scheduled')) {
        nextStatus = activate(config.start, today);
        activatedAt = new Date(nowMs);
      } else if (status === 'scheduled' && requested === 'inactive') {
        nextStatus = 'inactive';
      } else if (status === 'scheduled' && requested === 'active') {
        // Only reachable while the start is in the future (else the board is already active).
        if (config.start > today) {
          throw new ItemIssue(
            'Leaderboard stays scheduled until its start date; nothing was changed',
            'warning',
          );
        }
        nextStatus = 'active';
      } else if (status === 'active' && requested === 'finished') {
        nextStatus = 'finished';
        finishedAt = new Date(nowMs);
      } else {
        throw new ItemIssue('Invalid status transition');
      }
    }

    const row = await leaderboardRows.update(
      deps,
      current.id,
      {
        ...keyedPatch(input, current),
        status: nextStatus,
        maxParticipants: input.maxParticipants ?? current.maxParticipants,
        ...config,
        activatedAt,
        finishedAt,
      },
      { now: new Date(nowMs) },
    );
    return showLeaderboard(row, nowMs);
  },
  async remove(deps, { id }) {
    await leaderboardRows.remove(deps, { id });
  },
};
