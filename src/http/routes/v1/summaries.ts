import type { Context } from 'hono';
import { splitUserHash } from '../../../redis/user-hash';
import type { Deps } from '../../../deps';
import { metricEventSummary, pointsEventSummary } from '../../../services/event-summary';
import { dayIndex, isValidTimeZone, localDate, parseDate } from '../../../engine/periods';
import type { SummaryAggregation } from '../../../engine/summary-buckets';
import { type WrappedPeriodData, wrapped } from '../../../services/wrapped';
import { notFound, unprocessable } from '../../../errors';
import { z } from '../../../zod';
import { createRoute, ErrorBodySchema, mount, type RoutesApp } from '../../openapi';
import { achievementResponse } from '../../../wire/achievements';
import { userResponse } from '../../../wire/users';
import { queryDate, queryInt, queryOne } from '../../validate';
import { leaderboardBase } from '../../../wire/leaderboards';
import { extend } from '../../../wire/common';

const AGGREGATIONS = ['daily', 'weekly', 'monthly'] as const;

/** The `{id}` segment: 1–255 characters (application-api §6.4), else 422. */
function userId(c: Context): string {
  const id = c.req.param('id') ?? '';
  if (id.length < 1 || id.length > 255) throw unprocessable('User id must be 1 to 255 characters');
  return id;
}

/** Summary query (application-api §6.5): input-domain checks only (422), before any lookup. */
function summaryQuery(c: Context): { aggregation: SummaryAggregation; start: string; end: string } {
  const aggregation = queryOne(c, 'aggregation');
  if (aggregation === undefined) throw unprocessable('aggregation is required');
  if (!(AGGREGATIONS as readonly string[]).includes(aggregation)) {
    throw unprocessable('aggregation must be one of daily, weekly, monthly');
  }
  const start = queryDate(c, 'startDate');
  if (start === undefined) throw unprocessable('startDate is required');
  const end = queryDate(c, 'endDate');
  if (end === undefined) throw unprocessable('endDate is required');
  if (start >= end) throw unprocessable('startDate must be before endDate');
  if (dayIndex(end) - dayIndex(start) > 400)
    throw unprocessable('endDate must be at most 400 days after startDate');
  return { aggregation: aggregation as SummaryAggregation, start, end };
}

/** The stored profile of an existing user (404 otherwise). */
async function profileOf(deps: Deps, id: string): Promise<Record<string, string>> {
  const { profile } = splitUserHash(await deps.redis.hgetall(deps.keys.user(id).hash));
  if (!profile.created) throw notFound('User not found');
  return profile;
}

const tzOf = (p: Record<string, string>) => (p.tz && isValidTimeZone(p.tz) ? p.tz : 'UTC');

/** WrappedActivityPeriod (application-api §7.10) from the computed figures. */
function periodResponse(deps: Deps, d: WrappedPeriodData) {
  const snap = deps.catalog.snapshot;
  const leaderboards: Record<string, unknown> = {};
  for (const l of d.leaderboards) {
    leaderboards[l.board.key] = extend(leaderboardBase(snap, l.board), { rank: l.rank, value: l.value });
  }
  return {
    metrics: d.metrics,
    points: d.points,
    achievements: d.achievements.map((a) => achievementResponse(snap, a.row, a.at)),
    leaderboards,
  };
}

const error = { description: 'Error', content: { 'application/json': { schema: ErrorBodySchema } } };
const summaryItem = z
  .object({ date: z.string(), total: z.number(), change: z.number() })
  .openapi('MetricEventSummaryItem');

/** The event summary of a user's metric or points system. */
const summaryRoute = <P extends string>(path: P, section: 'metrics' | 'points', what: string) =>
  createRoute({
    method: 'get',
    path,
    tags: [section],
    summary: `A user's ${what} change and total per day, week or month (user's local calendar)`,
    request: {
      params: z.object({ id: z.string(), key: z.string() }),
      query: z.object({
        aggregation: z.enum(AGGREGATIONS),
        startDate: z.string().describe('YYYY-MM-DD, before endDate'),
        endDate: z.string().describe('YYYY-MM-DD, at most 400 days after startDate'),
      }),
    },
    responses: {
      200: {
        description: 'Buckets, oldest first',
        content: { 'application/json': { schema: z.array(summaryItem) } },
      },
      404: error,
      422: error,
    },
  });

const metricSummaryRoute = summaryRoute('/users/{id}/metrics/{key}/event-summary', 'metrics', 'metric');
const pointsSummaryRoute = summaryRoute('/users/{id}/points/{key}/event-summary', 'points', 'points');

const wrappedRoute = createRoute({
  method: 'get',
  path: '/users/{id}/wrapped',
  tags: ['users'],
  summary: "A user's year in review",
  request: {
    params: z.object({ id: z.string() }),
    query: z.object({ year: z.number().int().min(1).optional() }),
  },
  responses: {
    200: {
      description: 'WrappedResponse',
      content: {
        'application/json': {
          schema: z
            .object({
              user: z.object({ id: z.string() }).passthrough(),
              activity: z.object({}).passthrough(),
            })
            .openapi('WrappedResponse'),
        },
      },
    },
    404: error,
    422: error,
  },
});

/** Event summaries (#12, #16) and wrapped (#18). */
export function mountSummaries(app: RoutesApp, deps: Deps): void {
  mount(app, metricSummaryRoute, async (c) => {
    const q = summaryQuery(c);
    const id = userId(c);
    await profileOf(deps, id);
    const metric = deps.catalog.snapshot.metricsByKey.get(c.req.param('key'));
    if (!metric) throw notFound('Metric not found');
    return c.json(await metricEventSummary(deps, id, metric.id, q.aggregation, q.start, q.end));
  });

  mount(app, pointsSummaryRoute, async (c) => {
    const q = summaryQuery(c);
    const id = userId(c);
    await profileOf(deps, id);
    const sys = deps.catalog.snapshot.systemsByKey.get(c.req.param('key'));
    if (!sys) throw notFound('Points system not found');
    return c.json(await pointsEventSummary(deps, id, sys.id, q.aggregation, q.start, q.end));
  });

  mount(app, wrappedRoute, async (c) => {
    const given = queryOne(c, 'year') === undefined ? undefined : queryInt(c, 'year', 0, 1, 1_000_000);
    const id = userId(c);
    const profile = await profileOf(deps, id);
    const tz = tzOf(profile);
    const currentYear = parseDate(localDate(deps.clock.now(), tz)).year;
    const year = given ?? currentYear;
    if (year > currentYear) throw unprocessable(`year must be between 1 and ${currentYear}`);
    const w = await wrapped(deps, id, tz, year);
    return c.json({
      user: userResponse(deps.catalog.snapshot, profile),
      activity: {
        daysActive: w.daysActive,
        weeksActive: w.weeksActive,
        monthsActive: w.monthsActive,
        mostActiveDay: { date: w.mostActiveDay.date, ...periodResponse(deps, w.mostActiveDay.data) },
        mostActiveWeek: {
          start: w.mostActiveWeek.start,
          end: w.mostActiveWeek.end,
          ...periodResponse(deps, w.mostActiveWeek.data),
        },
        mostActiveMonth: { month: w.mostActiveMonth.month, ...periodResponse(deps, w.mostActiveMonth.data) },
        entireYear: {
          longestStreak: { ...w.entireYear.longestStreak, frequency: deps.catalog.snapshot.streak.frequency },
          ...periodResponse(deps, w.entireYear.data),
        },
      },
    });
  });
}
