import { http, parseBody } from './http';

/**
 * Seeds a realistic configuration through the admin API, the way an operator would: one metric
 * with two achievements, a daily streak on it, a points system with a metric trigger, five levels
 * and an active global boost, and (when the server has them) a perpetual metric leaderboard that
 * started the day before and a monthly points leaderboard whose runs started 13 months ago.
 */

// A few zones on both sides of UTC, so users' local days (streak periods) differ as in production.
export const ZONES = [
  'UTC',
  'Europe/London',
  'Europe/Berlin',
  'America/New_York',
  'America/Los_Angeles',
  'Asia/Tokyo',
];

/** UUID-shaped ids: key names carry the user id, so its length is part of the memory per user. */
export const userId = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

export interface SeededConfig {
  appKey: string;
  metricKey: string;
  metricId: string;
  pointsSystemId: string;
  /** The points system's metric trigger (10 points a lesson). */
  metricTriggerId: string;
  /** Keys of the leaderboards created; empty when the server has no leaderboards yet. */
  leaderboardKeys: string[];
  notes: string[];
}

type Json = any;

/** Sends one admin request: over HTTP (http), or to an app in this process. */
export type Requester = typeof http;

async function call(
  origin: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
  request: Requester = http,
) {
  const res = await request(
    method,
    `${origin}/admin/v1${path}`,
    { 'x-api-key': key },
    body === undefined ? undefined : JSON.stringify(body),
  );
  return { status: res.status, body: parseBody(res.text) as Json };
}

/** Bulk-creates and returns the created items; any issue stops the bench (the numbers would mean nothing). */
async function create(
  origin: string,
  key: string,
  path: string,
  items: unknown[],
  request: Requester = http,
): Promise<Json[]> {
  const res = await call(origin, key, 'POST', path, items, request);
  if (res.status !== 201 || res.body?.issues?.length) {
    throw new Error(`seeding POST ${path} failed: ${res.status} ${JSON.stringify(res.body)}`);
  }
  return res.body.created;
}

function utcDate(offsetDays: number): string {
  return new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);
}

/** The first day (UTC) of the month `months` before the current one. */
export function monthStart(months: number, now = Date.now()): string {
  const d = new Date(now);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - months, 1)).toISOString().slice(0, 10);
}

export async function seedConfiguration(
  origin: string,
  adminKey: string,
  opts: { boards?: boolean } = {},
): Promise<SeededConfig> {
  const notes: string[] = [];
  const [metric] = await create(origin, adminKey, '/metrics', [
    { name: 'Lessons completed', key: 'lessons', unitType: 'number', units: 'lessons' },
  ]);
  await create(origin, adminKey, '/achievements', [
    {
      name: 'First lesson',
      key: 'first-lesson',
      trigger: 'metric',
      metricId: metric.id,
      metricValue: 1,
      status: 'active',
    },
    {
      name: 'Ten lessons',
      key: 'ten-lessons',
      trigger: 'metric',
      metricId: metric.id,
      metricValue: 10,
      status: 'active',
    },
  ]);

  const streak = await call(origin, adminKey, 'PATCH', '/streaks/settings', {
    enabled: true,
    frequency: 'daily',
    conditions: [{ metricId: metric.id, threshold: 1 }],
  });
  if (streak.status !== 200)
    throw new Error(`seeding streak settings failed: ${streak.status} ${JSON.stringify(streak.body)}`);

  const [xp] = await create(origin, adminKey, '/points', [{ name: 'XP', key: 'xp' }]);
  const [trigger] = await create(origin, adminKey, `/points/${xp.id}/triggers`, [
    { type: 'metric', points: 10, metricId: metric.id, metricThreshold: 1, status: 'active' },
  ]);
  await create(
    origin,
    adminKey,
    `/points/${xp.id}/levels`,
    [0, 50, 200, 500, 1000].map((points, i) => ({ name: `Level ${i + 1}`, key: `level-${i + 1}`, points })),
  );
  // Started yesterday (UTC) so it is active in every user time zone the bench sends.
  const [boost] = await create(origin, adminKey, `/points/${xp.id}/boosts`, [
    { name: 'Launch week', start: utcDate(-1), multiplier: 1.5, rounding: 'nearest' },
  ]);
  if (boost.status !== 'active') notes.push(`the boost is ${boost.status}, not active`);

  const [app] = await create(origin, adminKey, '/api-keys', [
    { name: 'bench', kind: 'application', rateLimitPerSecond: 1_000_000 },
  ]);

  const leaderboardKeys: string[] = [];
  // Not probed when asked for no boards.
  const probe = opts.boards === false ? null : await call(origin, adminKey, 'GET', '/leaderboards?limit=1');
  if (!probe) {
    notes.push('no leaderboards seeded (asked not to)');
  } else if (probe.status === 200) {
    const boards = await create(origin, adminKey, '/leaderboards', [
      {
        name: 'Most lessons',
        key: 'lessons-all-time',
        rankBy: 'metric',
        metricId: metric.id,
        // From the day before (UTC): a board starting on its creation day leaves out every event whose
        // local date is still the day before (semantics §0: attributed to the local date), so between
        // 00:00 UTC and local midnight in New York and Los Angeles a third of the bench's users would
        // not move it, and every figure would depend on the hour the bench ran.
        start: utcDate(-1),
        status: 'active',
      },
      {
        name: 'XP this month',
        key: 'xp-monthly',
        rankBy: 'points',
        pointsSystemId: xp.id,
        runUnit: 'month',
        runInterval: 1,
        // Runs since 13 months ago: the veteran users' year of events falls into 12-13 monthly runs.
        start: monthStart(13),
        status: 'active',
      },
    ]);
    for (const b of boards) {
      if (b.status !== 'active') notes.push(`leaderboard ${b.key} is ${b.status}, not active`);
      leaderboardKeys.push(b.key);
    }
  } else {
    notes.push(`no leaderboards seeded: GET /admin/v1/leaderboards answered ${probe.status}`);
  }

  return {
    appKey: app.key,
    metricKey: metric.key,
    metricId: metric.id,
    pointsSystemId: xp.id,
    metricTriggerId: trigger.id,
    leaderboardKeys,
    notes,
  };
}

/**
 * Activates the seeded metric trigger again (set inactive, then active) through `request`: given the
 * admin API of an app whose clock reads an earlier time, the trigger is activated as of that time. A
 * metric trigger counts events from its activation (semantics §5.3), so events sent with a controlled
 * clock before the seeding (the bench's veterans) count toward it only when it was activated before them.
 */
export async function activateTriggerAsOf(
  origin: string,
  adminKey: string,
  seeded: Pick<SeededConfig, 'pointsSystemId' | 'metricTriggerId'>,
  request: Requester,
): Promise<void> {
  for (const status of ['inactive', 'active']) {
    const res = await call(
      origin,
      adminKey,
      'PATCH',
      `/points/${seeded.pointsSystemId}/triggers`,
      [{ id: seeded.metricTriggerId, status }],
      request,
    );
    if (res.status !== 200 || res.body?.issues?.length)
      throw new Error(
        `setting the metric trigger ${status} failed: ${res.status} ${JSON.stringify(res.body)}`,
      );
  }
}
