import type { Deps } from '../../../deps';
import {
  bulkStreaks,
  readStreak,
  streakRank,
  streakRankings,
  upcomingPauses,
} from '../../../services/streak-reads';
import { streakHistory } from '../../../engine/streak-view';
import { loadUser } from '../../../services/user-reads';
import { notFound, unprocessable } from '../../../errors';
import { z } from '../../../zod';
import { createRoute, ErrorBodySchema, mount, type RoutesApp } from '../../openapi';
import { isoMs } from '../../../wire/common';
import { streakResponse } from '../../../wire/streaks';
import { queryInt, queryList, queryOne, userIdParam } from '../../validate';

const error = { description: 'Error', content: { 'application/json': { schema: ErrorBodySchema } } };
const tags = ['streaks'];
const date = z.string().nullable();
const streak = z
  .object({
    length: z.number().int(),
    frequency: z.enum(['daily', 'weekly', 'monthly']),
    started: date,
    periodStart: date,
    periodEnd: date,
    expires: date,
    freezes: z.number().int().optional(),
    maxFreezes: z.number().int().optional(),
    freezeAutoEarnInterval: z.number().int().optional(),
    freezeAutoEarnAmount: z.number().int().optional(),
    rank: z.number().int().nullable(),
    streakHistory: z.array(
      z.object({
        periodStart: z.string(),
        periodEnd: z.string(),
        length: z.number().int(),
        usedFreeze: z.boolean().optional(),
        usedPause: z.boolean(),
      }),
    ),
    pauses: z.array(z.object({ id: z.string(), start: z.string(), end: z.string() })),
  })
  .openapi('StreakResponse');

const userStreak = createRoute({
  method: 'get',
  path: '/users/{id}/streak',
  tags,
  summary: "A user's current streak, rank, recent history and pauses",
  request: {
    params: z.object({ id: z.string() }),
    query: z.object({ historyPeriods: z.number().int().min(1).max(100).optional() }),
  },
  responses: {
    200: { description: 'Streak', content: { 'application/json': { schema: streak } } },
    404: error,
    422: error,
  },
});

const listStreaks = createRoute({
  method: 'get',
  path: '/streaks',
  tags,
  summary: 'Current streaks of up to 100 users (unknown ids are omitted)',
  request: { query: z.object({ userIds: z.string() }) },
  responses: {
    200: {
      description: 'Streaks, longest first',
      content: {
        'application/json': {
          schema: z.array(
            z.object({
              userId: z.string(),
              streakLength: z.number().int(),
              extended: z.string().nullable(),
            }),
          ),
        },
      },
    },
    422: error,
  },
});

const streakRankingsRoute = createRoute({
  method: 'get',
  path: '/streaks/rankings',
  tags,
  summary: 'Top users by current or longest streak',
  request: {
    query: z.object({
      limit: z.number().int().min(1).max(100).optional(),
      type: z.enum(['active', 'longest']).optional(),
    }),
  },
  responses: {
    200: {
      description: 'Rankings',
      content: {
        'application/json': {
          schema: z.array(
            z.object({ userId: z.string(), name: z.string().nullable(), streakLength: z.number().int() }),
          ),
        },
      },
    },
    422: error,
  },
});

/** Streak reads (application-api §6.7, #14, #19, #20). */
export function mountStreaks(app: RoutesApp, deps: Deps): void {
  mount(app, userStreak, async (c) => {
    const historyPeriods = queryInt(c, 'historyPeriods', 7, 1, 100);
    const userId = userIdParam(c);
    const state = await loadUser(deps, userId, ['streak']);
    if (!state) throw notFound('User not found');
    const snap = deps.catalog.snapshot;
    const now = deps.clock.now();
    const { view, settings, today, periodIdx } = readStreak(snap, state.profile, state.streak, now);
    const [rank, pauses] = await Promise.all([
      view.length > 0 ? streakRank(deps, view.length, now) : null,
      upcomingPauses(deps, userId, today),
    ]);
    return c.json({
      ...streakResponse(snap, view, periodIdx),
      rank,
      streakHistory: streakHistory(view, settings, periodIdx, historyPeriods),
      pauses,
    });
  });

  mount(app, listStreaks, async (c) => {
    const userIds = [...new Set(queryList(c, 'userIds'))];
    if (userIds.length === 0) throw unprocessable('userIds must name at least one user');
    if (userIds.length > 100) throw unprocessable('userIds must name at most 100 distinct users');
    const list = await bulkStreaks(deps, userIds, deps.clock.now());
    return c.json(
      list.map((s) => ({
        userId: s.userId,
        streakLength: s.streakLength,
        extended: s.extendedAt === null ? null : isoMs(s.extendedAt),
      })),
    );
  });

  mount(app, streakRankingsRoute, async (c) => {
    const limit = queryInt(c, 'limit', 10, 1, 100);
    const type = queryOne(c, 'type') ?? 'active';
    if (type !== 'active' && type !== 'longest') throw unprocessable('type must be active or longest');
    return c.json(await streakRankings(deps, type, limit, deps.clock.now()));
  });
}
