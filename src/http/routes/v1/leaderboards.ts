import type { Hono } from 'hono';
import type { LeaderboardRow, Snapshot } from '../../../catalog/snapshot';
import type { Deps } from '../../../deps';
import { leaderboardStatus, utcDate } from '../../../engine/leaderboard-status';
import {
  breakdownKeys,
  groupKey,
  rankingsWindow,
  runForRead,
  userHistory,
  userNames,
  userStanding,
} from '../../../engine/leaderboards';
import { localDate } from '../../../engine/periods';
import { invalidAttributeKeys, notFound, unprocessable } from '../../../errors';
import { z } from '../../../zod';
import type { AppEnv } from '../../env';
import type { OpenAPIRegistry } from '../../openapi';
import { memo } from '../../presenters';
import { queryAttributeFilter, queryDate, queryInt, queryOne } from '../../validate';

/** LeaderboardResponse fields (application-api §7.9). */
export function leaderboardBase(snap: Snapshot, b: LeaderboardRow) {
  return memo(snap, `lb:${b.id}`, () => buildLeaderboardBase(snap, b));
}

function buildLeaderboardBase(snap: Snapshot, b: LeaderboardRow) {
  const keys = breakdownKeys(snap, b);
  const metric = b.metricId ? snap.metricsById.get(b.metricId) : undefined;
  const system = b.pointsSystemId ? snap.systemsById.get(b.pointsSystemId) : undefined;
  return {
    id: b.id,
    name: b.name,
    key: b.key,
    rankBy: b.rankBy,
    description: b.description,
    breakdownAttribute: keys[0] ?? null,
    breakdownAttributes: keys,
    metricKey: b.rankBy === 'metric' ? (metric?.key ?? null) : null,
    metricName: b.rankBy === 'metric' ? (metric?.name ?? null) : null,
    pointsSystemKey: b.rankBy === 'points' ? (system?.key ?? null) : null,
    pointsSystemName: b.rankBy === 'points' ? (system?.name ?? null) : null,
    start: b.start,
    end: b.end,
    maxParticipants: b.maxParticipants,
    runUnit: b.runUnit,
    runInterval: b.runInterval,
  };
}

function visibleBoard(deps: Deps, key: string): LeaderboardRow {
  const b = deps.catalog.snapshot.leaderboardsByKey.get(key);
  if (!b || leaderboardStatus(b, deps.clock.now()) === 'inactive') throw notFound('Leaderboard not found');
  return b;
}

/** The group a userAttributes filter selects: every breakdown attribute, nothing else. */
function groupFromFilter(snap: Snapshot, b: LeaderboardRow, pairs: Array<[string, string]>): string {
  const unknown = pairs.map(([k]) => k).filter((k) => !snap.userAttributesByKey.has(k));
  if (unknown.length) throw invalidAttributeKeys(unknown);
  const keys = breakdownKeys(snap, b);
  if (keys.length === 0) throw unprocessable('This leaderboard has no breakdown attributes');
  const given = new Map(pairs);
  if (keys.some((k) => !given.has(k)) || pairs.some(([k]) => !keys.includes(k))) {
    throw unprocessable(`userAttributes must give a value for each breakdown attribute: ${keys.join(', ')}`);
  }
  return groupKey(keys.map((k) => given.get(k)!));
}

export function mountLeaderboards(app: Hono<AppEnv>, deps: Deps, registry: OpenAPIRegistry): void {
  app.get('/leaderboards', (c) => {
    const raw = queryOne(c, 'includeFinished');
    if (raw !== undefined && raw !== 'true' && raw !== 'false')
      throw unprocessable('includeFinished must be true or false');
    const includeFinished = raw === 'true';
    const snap = deps.catalog.snapshot;
    const now = deps.clock.now();
    const out = snap.leaderboards
      .map((b) => ({ b, status: leaderboardStatus(b, now) }))
      .filter(
        ({ status }) =>
          status === 'active' || status === 'scheduled' || (includeFinished && status === 'finished'),
      )
      .map(({ b, status }) => ({ ...leaderboardBase(snap, b), status }));
    return c.json(out);
  });

  app.get('/leaderboards/:key', async (c) => {
    const limit = queryInt(c, 'limit', 10, 0, 1000);
    const userId = queryOne(c, 'userId');
    const offset = queryInt(c, 'offset', 0, userId === undefined ? 0 : -1_000_000, 1_000_000);
    const runDate = queryDate(c, 'run');
    const filter = queryAttributeFilter(c);
    const snap = deps.catalog.snapshot;
    const b = visibleBoard(deps, c.req.param('key'));
    const now = deps.clock.now();
    const status = leaderboardStatus(b, now);
    const run = runForRead(b, now, utcDate(now), runDate);
    let group = '';
    if (filter) group = groupFromFilter(snap, b, filter);
    else if (b.breakdownAttributes.length) {
      if (userId === undefined)
        throw unprocessable('userAttributes is required on a leaderboard with breakdown attributes');
      const standing = await userStanding(deps, b, run, userId);
      if (standing.group === null)
        return c.json({ ...leaderboardBase(snap, b), start: b.start, end: b.end, status, rankings: [] });
      group = standing.group;
    }
    const ranked =
      status === 'scheduled' ? [] : await rankingsWindow(deps, b, run, group, { offset, limit, userId });
    const names = await userNames(
      deps,
      ranked.map((r) => r.userId),
    );
    return c.json({
      ...leaderboardBase(snap, b),
      status,
      rankings: ranked.map((r, i) => ({
        userId: r.userId,
        userName: names[i] ?? null,
        rank: r.rank,
        value: r.value,
      })),
    });
  });

  app.get('/users/:id/leaderboards/:key', async (c) => {
    const numEvents = queryInt(c, 'numEvents', 10, 0, 100);
    const runDate = queryDate(c, 'run');
    const userId = c.req.param('id');
    const profile = await deps.redis.hmget(deps.keys.user(userId).profile, 'created', 'tz');
    if (!profile[0]) throw notFound('User not found');
    const b = visibleBoard(deps, c.req.param('key'));
    const now = deps.clock.now();
    const run = runForRead(b, now, localDate(now, profile[1] ?? 'UTC'), runDate);
    const standing = await userStanding(deps, b, run, userId);
    const history = await userHistory(deps, b, run, userId, numEvents);
    return c.json({
      ...leaderboardBase(deps.catalog.snapshot, b),
      rank: standing.rank,
      value: standing.value,
      history,
    });
  });

  const board = z
    .object({ id: z.string(), key: z.string(), name: z.string(), status: z.string() })
    .passthrough();
  registry.registerPath({
    method: 'get',
    path: '/v1/leaderboards',
    tags: ['leaderboards'],
    summary: 'Active and scheduled leaderboards (finished with includeFinished=true)',
    request: { query: z.object({ includeFinished: z.enum(['true', 'false']).optional() }) },
    responses: {
      200: { description: 'Leaderboards', content: { 'application/json': { schema: z.array(board) } } },
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/leaderboards/{key}',
    tags: ['leaderboards'],
    summary: 'A leaderboard run with its rankings',
    request: {
      params: z.object({ key: z.string() }),
      query: z.object({
        offset: z.number().int().optional(),
        limit: z.number().int().min(0).max(1000).optional(),
        run: z.string().optional(),
        userId: z.string().optional(),
        userAttributes: z.string().optional(),
      }),
    },
    responses: {
      200: { description: 'Leaderboard with rankings', content: { 'application/json': { schema: board } } },
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/users/{id}/leaderboards/{key}',
    tags: ['leaderboards'],
    summary: "A user's rank, value and rank history in a run",
    request: {
      params: z.object({ id: z.string(), key: z.string() }),
      query: z.object({ run: z.string().optional(), numEvents: z.number().int().min(0).max(100).optional() }),
    },
    responses: { 200: { description: 'User standing and history' } },
  });
}
