import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  date,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  pgView,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';

/** An attribute filter as stored: the attribute id and the value it must have. */
export type StoredFilter = { attributeId: string; attributeValue: string };
export type StreakCondition = { metricId: string; threshold: number };

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
const created = () => ts('created').notNull().defaultNow();
const updated = () => ts('updated').notNull().defaultNow();
const deletedAt = () => ts('deleted_at');

// ---------------------------------------------------------------- configuration

export const apiKeys = pgTable('api_keys', {
  id: uuid('id').primaryKey().defaultRandom(),
  name: text('name').notNull(),
  kind: text('kind', { enum: ['admin', 'application'] }).notNull(),
  prefix: text('prefix').notNull().unique(),
  secretHash: text('secret_hash').notNull(),
  status: text('status', { enum: ['active', 'revoked'] })
    .notNull()
    .default('active'),
  rateLimitPerSecond: integer('rate_limit_per_second'),
  created: created(),
  lastUsed: ts('last_used'),
  revoked: ts('revoked'),
});

export const attributes = pgTable(
  'attributes',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    key: text('key').notNull(),
    name: text('name').notNull(),
    type: text('type', { enum: ['user', 'event'] }).notNull(),
    created: created(),
    updated: updated(),
    deletedAt: deletedAt(),
  },
  (t) => [uniqueIndex('attributes_type_key').on(t.type, t.key)],
);

export const metrics = pgTable('metrics', {
  id: uuid('id').primaryKey().defaultRandom(),
  key: text('key').notNull().unique(),
  name: text('name').notNull(),
  unitType: text('unit_type', { enum: ['number', 'currency'] })
    .notNull()
    .default('number'),
  units: text('units'),
  created: created(),
  updated: updated(),
  deletedAt: deletedAt(),
});

export const pointsSystems = pgTable('points_systems', {
  id: uuid('id').primaryKey().defaultRandom(),
  key: text('key').notNull().unique(),
  name: text('name').notNull(),
  description: text('description'),
  badgeUrl: text('badge_url'),
  maxPoints: bigint('max_points', { mode: 'number' }),
  created: created(),
  updated: updated(),
  deletedAt: deletedAt(),
});

export const pointsTriggers = pgTable(
  'points_triggers',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    systemId: uuid('system_id')
      .notNull()
      .references(() => pointsSystems.id),
    type: text('type', { enum: ['metric', 'achievement', 'streak', 'time', 'user_creation'] }).notNull(),
    points: bigint('points', { mode: 'number' }).notNull(),
    status: text('status', { enum: ['active', 'inactive'] })
      .notNull()
      .default('inactive'),
    userAttributes: jsonb('user_attributes').$type<StoredFilter[]>().notNull().default([]),
    metricId: uuid('metric_id').references(() => metrics.id),
    metricThreshold: doublePrecision('metric_threshold'),
    eventAttributes: jsonb('event_attributes').$type<StoredFilter[]>().notNull().default([]),
    achievementId: uuid('achievement_id'),
    streakLength: integer('streak_length'),
    timeUnit: text('time_unit', { enum: ['hours', 'days'] }),
    timeInterval: integer('time_interval'),
    /** Latest activation: resets running totals and time anchors (semantics §5.3, §5.6). */
    activatedAt: ts('activated_at'),
    created: created(),
    updated: updated(),
    deletedAt: deletedAt(),
  },
  (t) => [index('points_triggers_system').on(t.systemId)],
);

export const pointsLevels = pgTable(
  'points_levels',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    systemId: uuid('system_id')
      .notNull()
      .references(() => pointsSystems.id),
    key: text('key').notNull(),
    name: text('name').notNull(),
    description: text('description'),
    badgeUrl: text('badge_url'),
    points: bigint('points', { mode: 'number' }).notNull(),
    created: created(),
    updated: updated(),
    deletedAt: deletedAt(),
  },
  (t) => [index('points_levels_system').on(t.systemId)],
);

export const pointsBoosts = pgTable(
  'points_boosts',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    systemId: uuid('system_id')
      .notNull()
      .references(() => pointsSystems.id),
    name: text('name').notNull(),
    start: date('start', { mode: 'string' }).notNull(),
    end: date('end', { mode: 'string' }),
    multiplier: doublePrecision('multiplier').notNull(),
    rounding: text('rounding', { enum: ['down', 'up', 'nearest'] })
      .notNull()
      .default('down'),
    userId: text('user_id'),
    userAttributes: jsonb('user_attributes').$type<StoredFilter[]>().notNull().default([]),
    created: created(),
    updated: updated(),
    deletedAt: deletedAt(),
  },
  (t) => [index('points_boosts_system').on(t.systemId)],
);

export const achievements = pgTable('achievements', {
  id: uuid('id').primaryKey().defaultRandom(),
  key: text('key').notNull().unique(),
  name: text('name').notNull(),
  description: text('description'),
  badgeUrl: text('badge_url'),
  trigger: text('trigger', { enum: ['metric', 'streak', 'api', 'achievement'] }).notNull(),
  status: text('status', { enum: ['inactive', 'active', 'locked'] })
    .notNull()
    .default('inactive'),
  metricId: uuid('metric_id').references(() => metrics.id),
  metricValue: doublePrecision('metric_value'),
  eventAttributes: jsonb('event_attributes').$type<StoredFilter[]>().notNull().default([]),
  streakLength: integer('streak_length'),
  achievementIds: jsonb('achievement_ids').$type<string[]>().notNull().default([]),
  userAttributes: jsonb('user_attributes').$type<StoredFilter[]>().notNull().default([]),
  created: created(),
  updated: updated(),
  deletedAt: deletedAt(),
});

/** A singleton row (id = 1). */
export const streakSettings = pgTable('streak_settings', {
  id: integer('id').primaryKey().default(1),
  enabled: boolean('enabled').notNull().default(false),
  frequency: text('frequency', { enum: ['daily', 'weekly', 'monthly'] })
    .notNull()
    .default('daily'),
  mode: text('mode', { enum: ['all', 'any'] })
    .notNull()
    .default('all'),
  conditions: jsonb('conditions').$type<StreakCondition[]>().notNull().default([]),
  freezesEnabled: boolean('freezes_enabled').notNull().default(false),
  maxFreezes: integer('max_freezes').notNull().default(1),
  initialFreezes: integer('initial_freezes').notNull().default(0),
  freezeAutoEarnAmount: integer('freeze_auto_earn_amount'),
  freezeAutoEarnInterval: integer('freeze_auto_earn_interval'),
  /** When streaks were last enabled: only activity after it counts (semantics §4.10). */
  enabledAt: ts('enabled_at'),
  autoEarnEnabledAt: ts('auto_earn_enabled_at'),
  /** Bumped whenever the streak state of every user must be discarded or recomputed. */
  epoch: integer('epoch').notNull().default(0),
  updated: updated(),
});

export const streakPauses = pgTable(
  'streak_pauses',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    userId: text('user_id').notNull(),
    start: date('start', { mode: 'string' }).notNull(),
    end: date('end', { mode: 'string' }).notNull(),
    created: created(),
    deletedAt: deletedAt(),
  },
  (t) => [index('streak_pauses_user').on(t.userId)],
);

export const leaderboards = pgTable('leaderboards', {
  id: uuid('id').primaryKey().defaultRandom(),
  key: text('key').notNull().unique(),
  name: text('name').notNull(),
  description: text('description'),
  /** Stored status; `scheduled` turns `active` by the clock (computed at read time too). */
  status: text('status', { enum: ['inactive', 'scheduled', 'active', 'finished'] })
    .notNull()
    .default('inactive'),
  rankBy: text('rank_by', { enum: ['metric', 'points', 'streak'] }).notNull(),
  metricId: uuid('metric_id').references(() => metrics.id),
  pointsSystemId: uuid('points_system_id').references(() => pointsSystems.id),
  maxParticipants: integer('max_participants').notNull().default(1000),
  start: date('start', { mode: 'string' }).notNull(),
  end: date('end', { mode: 'string' }),
  breakdownAttributes: jsonb('breakdown_attributes').$type<string[]>().notNull().default([]),
  runUnit: text('run_unit', { enum: ['day', 'month', 'year'] }),
  runInterval: integer('run_interval').notNull().default(0),
  activatedAt: ts('activated_at'),
  finishedAt: ts('finished_at'),
  created: created(),
  updated: updated(),
  deletedAt: deletedAt(),
});

export const webhookEndpoints = pgTable('webhook_endpoints', {
  id: uuid('id').primaryKey().defaultRandom(),
  url: text('url').notNull(),
  description: text('description'),
  eventTypes: jsonb('event_types').$type<string[]>().notNull(),
  enabled: boolean('enabled').notNull().default(true),
  secret: text('secret').notNull(),
  created: created(),
  updated: updated(),
  deletedAt: deletedAt(),
});

/**
 * The audit log of configuration changes: one row per changed item of one admin write (resource
 * endpoints, dashboard, configuration apply), with the item before and after in the configuration
 * document's shape (keys, never ids; no secrets). `batch` groups the rows of one write.
 */
export const configChanges = pgTable(
  'config_changes',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    batch: uuid('batch').notNull(),
    at: ts('at').notNull(),
    keyId: uuid('key_id'),
    keyName: text('key_name').notNull(),
    keyPrefix: text('key_prefix'),
    source: text('source', { enum: ['api', 'dashboard', 'config', 'system'] }).notNull(),
    resource: text('resource').notNull(),
    item: text('item').notNull(),
    action: text('action', { enum: ['create', 'update', 'delete'] }).notNull(),
    before: jsonb('before'),
    after: jsonb('after'),
  },
  (t) => [index('config_changes_at').on(t.at)],
);

// ---------------------------------------------------------------- history (written by the history writer)

export const users = pgTable('users', {
  id: text('id').primaryKey(),
  email: text('email'),
  name: text('name'),
  tz: text('tz'),
  attributes: jsonb('attributes').$type<Record<string, string>>().notNull().default({}),
  subscribeToEmails: boolean('subscribe_to_emails').notNull().default(true),
  deviceTokens: jsonb('device_tokens').$type<string[]>().notNull().default([]),
  control: boolean('control').notNull().default(false),
  preferences: jsonb('preferences').$type<Record<string, string[]>>().notNull().default({}),
  created: created(),
  updated: updated(),
});

export const events = pgTable(
  'events',
  {
    id: uuid('id').notNull(),
    userId: text('user_id').notNull(),
    metricId: uuid('metric_id').notNull(),
    /** Value in millionths (semantics §2.1: exact fixed-point). */
    valueMicros: bigint('value_micros', { mode: 'number' }).notNull(),
    attributes: jsonb('attributes').$type<Record<string, string>>().notNull().default({}),
    idempotencyKey: text('idempotency_key'),
    localDate: date('local_date', { mode: 'string' }).notNull(),
    tz: text('tz').notNull(),
    created: created(),
    /** The user's op sequence number (orders a user's events exactly; rebuild replays in this order). */
    seq: bigint('seq', { mode: 'number' }),
    /**
     * The per-run leaderboard values this event produced (rebuild replays them), instead of a
     * `leaderboard_updates` row per board: ';'-separated entries
     * `<leaderboard id>|<run start>|<value>|<expires>|<ord>[|<group key>]` (no group field: the update
     * was sent without one; group keys are URI-encoded, so they hold neither separator). Null when the
     * event moved no board. Read through `leaderboard_updates_all` (migration 0009).
     */
    boards: text('boards'),
    /**
     * The user state fields this event wrote (rebuild folds them in op order: src/rebuild/user-states.ts),
     * instead of a `user_states` upsert per event: JSON `{"s": [streak field, value, ...], "c": [counter
     * field, value, ...], "a": "<active streak index entry>"}`, each key present only when written; null
     * when it wrote none (migration 0010).
     */
    state: text('state'),
  },
  (t) => [primaryKey({ columns: [t.userId, t.metricId, t.localDate, t.id] })],
);

/**
 * One index: the primary key (user, system, time, award id), which serves the per-user reads (awards,
 * summaries, wrapped) and keeps an award written twice (a retried history pass) one row.
 */
export const pointsAwards = pgTable(
  'points_awards',
  {
    id: uuid('id').notNull(),
    eventId: uuid('event_id'),
    userId: text('user_id').notNull(),
    systemId: uuid('system_id').notNull(),
    triggerId: uuid('trigger_id').notNull(),
    awarded: bigint('awarded', { mode: 'number' }).notNull(),
    total: bigint('total', { mode: 'number' }).notNull(),
    boosts: jsonb('boosts').$type<string[]>().notNull().default([]),
    localDate: date('local_date', { mode: 'string' }).notNull(),
    created: created(),
    /** The user's op sequence number and the award's position in that op (recent-award list order). */
    seq: bigint('seq', { mode: 'number' }),
    pos: integer('pos'),
  },
  (t) => [primaryKey({ columns: [t.userId, t.systemId, t.created, t.id] })],
);

/** One index: the primary key (user, achievement): a user completes an achievement once. */
export const achievementCompletions = pgTable(
  'achievement_completions',
  {
    id: uuid('id').notNull(),
    userId: text('user_id').notNull(),
    achievementId: uuid('achievement_id').notNull(),
    achievedAt: ts('achieved_at').notNull(),
    eventId: uuid('event_id'),
    backdated: boolean('backdated').notNull().default(false),
  },
  (t) => [primaryKey({ columns: [t.userId, t.achievementId] })],
);

export const streakPeriods = pgTable(
  'streak_periods',
  {
    userId: text('user_id').notNull(),
    periodStart: date('period_start', { mode: 'string' }).notNull(),
    periodEnd: date('period_end', { mode: 'string' }).notNull(),
    length: integer('length').notNull(),
    usedFreeze: boolean('used_freeze').notNull().default(false),
    usedPause: boolean('used_pause').notNull().default(false),
    /** Streak settings epoch the period belongs to (Redis field h:<epoch>:<idx>). */
    epoch: integer('epoch').notNull().default(0),
    updated: updated(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.periodStart] })],
);

/**
 * Per-user state the history tables alone cannot give back exactly (rebuild, src/rebuild/): the last
 * op sequence number, and the streak and counters hash fields as last written by lua/applyUserOp.lua
 * (merged field by field in op order, like HSET), plus the user's streak-index entry. Written up to
 * migration 0010; since then each op's fields are kept with the op (`events.state`, or
 * `user_state_changes` for ops without an event row) and rebuild folds them over this row
 * (src/rebuild/user-states.ts).
 */
export const userStates = pgTable('user_states', {
  userId: text('user_id').primaryKey(),
  seq: bigint('seq', { mode: 'number' }).notNull(),
  streak: jsonb('streak').$type<Record<string, string>>().notNull().default({}),
  counters: jsonb('counters').$type<Record<string, string>>().notNull().default({}),
  /** Global index entries: `active` = "<length>|<changedAtMs>|<expiresMs>" or "" after a break. */
  indexes: jsonb('indexes').$type<Record<string, string>>().notNull().default({}),
  updated: updated(),
});

/**
 * The user state fields of each op that has no `events` row (profile upserts, completions, grants,
 * freezes, restores, recomputes), as `events.state` holds them for events; `state` null when the op
 * wrote none (the row still records its seq, the user's last op). Only ever inserted: one index, the
 * primary key (migration 0010).
 */
export const userStateChanges = pgTable(
  'user_state_changes',
  {
    userId: text('user_id').notNull(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    state: text('state'),
  },
  (t) => [primaryKey({ columns: [t.userId, t.seq] })],
);

/**
 * Every per-run leaderboard value an op produced, as the board script was called with it (rebuild replays them).
 * One index only, the primary key led by the user (an op belongs to one user, so it is as unique as
 * (op, board)): it serves the per-user reads of rebuild and verify and the writer's conflict check.
 * Rebuild reads a board's updates in commit order by a scan and a sort, once per rebuild, instead of
 * every event writing two more index entries (migration 0006).
 */
export const leaderboardUpdates = pgTable(
  'leaderboard_updates',
  {
    opId: uuid('op_id').notNull(),
    leaderboardId: uuid('leaderboard_id').notNull(),
    runStart: date('run_start', { mode: 'string' }).notNull(),
    userId: text('user_id').notNull(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    value: bigint('value', { mode: 'number' }).notNull(),
    /** Breakdown group the update was sent with; null when it was not sent (a breakdown value missing). */
    groupKey: text('group_key'),
    expires: bigint('expires', { mode: 'number' }).notNull().default(0),
    /** Commit order of the op (Redis TIME in microseconds): board updates replay in this order. */
    ord: bigint('ord', { mode: 'number' }).notNull(),
    created: ts('created').notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.opId, t.leaderboardId] })],
);

/**
 * Every op's per-run leaderboard values, as rebuild and verify read them: the rows of
 * `leaderboard_updates` (ops other than events, and events written before migration 0009) and the
 * entries of `events.boards`, one row per board, with the same columns. Its filters on `user_id` reach
 * both tables' primary keys.
 */
export const leaderboardUpdatesAll = pgView('leaderboard_updates_all', {
  opId: uuid('op_id').notNull(),
  leaderboardId: uuid('leaderboard_id').notNull(),
  runStart: date('run_start', { mode: 'string' }).notNull(),
  userId: text('user_id').notNull(),
  seq: bigint('seq', { mode: 'number' }).notNull(),
  value: bigint('value', { mode: 'number' }).notNull(),
  groupKey: text('group_key'),
  expires: bigint('expires', { mode: 'number' }).notNull(),
  ord: bigint('ord', { mode: 'number' }).notNull(),
  created: ts('created').notNull(),
}).as(sql`select op_id, leaderboard_id, run_start, user_id, seq, value, group_key, expires, ord, created
  from leaderboard_updates
  union all
  select e.id, p[1]::uuid, p[2]::date, e.user_id, e.seq, p[3]::int8,
    case when cardinality(p) >= 6 then p[6] end, p[4]::int8, p[5]::int8, e.created
  from events e
  cross join lateral unnest(string_to_array(e.boards, ';')) as b(entry)
  cross join lateral string_to_array(b.entry, '|') as p
  where e.boards is not null`);

export const leaderboardRankChanges = pgTable(
  'leaderboard_rank_changes',
  {
    id: uuid('id').primaryKey(),
    leaderboardId: uuid('leaderboard_id').notNull(),
    runStart: date('run_start', { mode: 'string' }).notNull(),
    groupKey: text('group_key').notNull().default(''),
    userId: text('user_id').notNull(),
    previousRank: integer('previous_rank'),
    rank: integer('rank'),
    previousValue: doublePrecision('previous_value'),
    value: doublePrecision('value'),
    created: created(),
    /**
     * Commit order within the board: its change stream entry id "<ms>-<n>" as ms * 1000 + n (n capped
     * at 999: exact below 2^53 until the year 2255).
     */
    streamSeq: bigint('stream_seq', { mode: 'number' }),
  },
  (t) => [index('leaderboard_rank_changes_user').on(t.leaderboardId, t.userId, t.runStart, t.created)],
);

export const leaderboardRunResults = pgTable(
  'leaderboard_run_results',
  {
    leaderboardId: uuid('leaderboard_id').notNull(),
    runStart: date('run_start', { mode: 'string' }).notNull(),
    runEnd: date('run_end', { mode: 'string' }),
    groupKey: text('group_key').notNull().default(''),
    userId: text('user_id').notNull(),
    rank: integer('rank').notNull(),
    value: doublePrecision('value').notNull(),
    finalizedAt: ts('finalized_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.leaderboardId, t.runStart, t.groupKey, t.userId] })],
);

/**
 * The webhook wire objects of a plan as configured when an op committed (points systems, levels,
 * triggers, the op's boosts: src/engine/plan.ts opWire), content-addressed. The user script's outbox
 * record names them by id instead of carrying ~1 KB of JSON per op; the history writer resolves the id
 * here. One row per distinct configuration (written once per API process), never per event.
 */
export const wireSnapshots = pgTable('wire_snapshots', {
  id: text('id').primaryKey(),
  body: text('body').notNull(),
  created: created(),
});

export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    endpointId: uuid('endpoint_id').notNull(),
    eventId: text('event_id').notNull(),
    type: text('type').notNull(),
    payload: jsonb('payload').notNull(),
    /** The exact JSON body sent (signed and resent byte for byte on every attempt). */
    body: text('body'),
    status: text('status', { enum: ['pending', 'succeeded', 'failed'] })
      .notNull()
      .default('pending'),
    attempts: integer('attempts').notNull().default(0),
    lastAttemptAt: ts('last_attempt_at'),
    nextAttemptAt: ts('next_attempt_at'),
    lastStatusCode: integer('last_status_code'),
    lastError: text('last_error'),
    created: created(),
  },
  (t) => [
    uniqueIndex('webhook_deliveries_event_endpoint').on(t.eventId, t.endpointId),
    index('webhook_deliveries_due').on(t.status, t.nextAttemptAt),
    index('webhook_deliveries_endpoint_created').on(t.endpointId, t.created),
  ],
);
