import type { PointsSystemConfig, Snapshot } from '../../../catalog/snapshot';
import type { Deps } from '../../../deps';
import { boostStatus } from '../../../engine/boost-status';
import { utcDate } from '../../../engine/leaderboard-status';
import { localDate } from '../../../engine/periods';
import { levelSummary, pointsHistogram, userPoints } from '../../../services/points-reads';
import { loadUser, profileAttributes, profileTz } from '../../../services/user-reads';
import { notFound, unprocessable } from '../../../errors';
import { z } from '../../../zod';
import { appError, jsonResponse, mount, type RoutesApp, routesTagged } from '../../openapi';
import { attributeFilters } from '../../../wire/common';
import { awardResponse, boostResponse, triggerResponse } from '../../../wire/points';
import { levelOf, levelResponse, systemBase } from '../../../engine/levels';
import {
  queryAttributeFilter,
  requireKnownUserAttributes,
  queryBool,
  queryInt,
  userIdParam,
} from '../../validate';

function system(snap: Snapshot, key: string): PointsSystemConfig {
  const sys = snap.systemsByKey.get(key);
  if (!sys) throw notFound('Points system not found');
  return sys;
}

const route = routesTagged(['points']);
const key = z.object({ key: z.string() });
const userKey = z.object({ id: z.string(), key: z.string() });
const level = z
  .object({
    id: z.string(),
    key: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    badgeUrl: z.string().nullable(),
    points: z.number().int(),
  })
  .openapi('PointsLevel');
const boost = z
  .object({
    id: z.string(),
    name: z.string(),
    status: z.enum(['scheduled', 'active', 'finished']),
    start: z.string(),
    end: z.string().nullable(),
    multiplier: z.number(),
    rounding: z.enum(['down', 'up', 'nearest']),
  })
  .openapi('PointsBoost');
const base = {
  id: z.string(),
  key: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  badgeUrl: z.string().nullable(),
  maxPoints: z.number().int().nullable(),
};
const trigger = z.object({ id: z.string(), type: z.string(), points: z.number().int() }).passthrough();

const userPointsRoute = route('get', '/users/{id}/points/{key}', {
  summary: "A user's total, level and most recent awards in a points system",
  request: { params: userKey, query: z.object({ awards: z.number().int().min(1).max(100).optional() }) },
  responses: {
    200: jsonResponse(
      'User points',
      z
        .object({
          ...base,
          total: z.number().int(),
          level: level.nullable(),
          awards: z.array(z.object({ id: z.string(), awarded: z.number().int() }).passthrough()),
        })
        .openapi('GetUserPointsResponse'),
    ),
    404: appError,
    422: appError,
  },
});

const getSystem = route('get', '/points/{key}', {
  summary: 'A points system with its active triggers',
  request: { params: key },
  responses: {
    200: jsonResponse(
      'Points system',
      z.object({ ...base, triggers: z.array(trigger) }).openapi('PointsSystemResponse'),
    ),
    404: appError,
  },
});

const systemSummary = route('get', '/points/{key}/summary', {
  summary: "Histogram of users' totals: exactly 11 ranges",
  request: { params: key, query: z.object({ userAttributes: z.string().optional() }) },
  responses: {
    200: jsonResponse(
      'Ranges',
      z.array(z.object({ from: z.number().int(), to: z.number().int(), users: z.number().int() })),
    ),
    404: appError,
    422: appError,
  },
});

const systemLevels = route('get', '/points/{key}/levels', {
  summary: 'Levels of a points system, ascending by threshold',
  request: { params: key },
  responses: { 200: jsonResponse('Levels', z.array(level)), 404: appError },
});

const systemLevelSummary = route('get', '/points/{key}/level-summary', {
  summary: 'Users currently at each level',
  request: { params: key },
  responses: {
    200: jsonResponse('Level summary', z.array(z.object({ level, users: z.number().int() }))),
    404: appError,
    422: appError,
  },
});

const systemBoosts = route('get', '/points/{key}/boosts', {
  summary: 'Global and cohort boosts of a points system (status on the UTC date)',
  request: { params: key, query: z.object({ includeFinished: z.enum(['true', 'false']).optional() }) },
  responses: { 200: jsonResponse('Boosts', z.array(boost)), 404: appError, 422: appError },
});

const userBoosts = route('get', '/users/{id}/points/{key}/boosts', {
  summary: "Active and scheduled boosts that apply to a user (the user's local date)",
  request: { params: userKey },
  responses: { 200: jsonResponse('Boosts', z.array(boost)), 404: appError },
});

/** Points reads (application-api §6.8: #15, #21, #22, E1–E4). */
export function mountPoints(app: RoutesApp, deps: Deps): void {
  mount(app, userPointsRoute, async (c) => {
    const count = queryInt(c, 'awards', 10, 1, 100);
    const userId = userIdParam(c);
    const state = await loadUser(deps, userId);
    if (!state) throw notFound('User not found');
    const snap = deps.catalog.snapshot;
    const sys = system(snap, c.req.param('key'));
    const { total, awards } = await userPoints(deps, userId, sys.id, count);
    const today = localDate(deps.clock.now(), profileTz(state.profile));
    const level = levelOf(sys, total);
    return c.json({
      ...systemBase(sys),
      total,
      level: level ? levelResponse(level) : null,
      awards: awards.map((a) => awardResponse(snap, sys, a, today)),
    });
  });

  mount(app, getSystem, (c) => {
    const snap = deps.catalog.snapshot;
    const sys = system(snap, c.req.param('key'));
    return c.json({
      ...systemBase(sys),
      triggers: sys.triggers.filter((t) => t.status === 'active').map((t) => triggerResponse(snap, t)),
    });
  });

  mount(app, systemSummary, async (c) => {
    const filter = queryAttributeFilter(c);
    const snap = deps.catalog.snapshot;
    const sys = system(snap, c.req.param('key'));
    if (filter) requireKnownUserAttributes(snap, filter);
    return c.json(await pointsHistogram(deps, sys, filter));
  });

  mount(app, systemLevels, (c) => {
    const sys = system(deps.catalog.snapshot, c.req.param('key'));
    return c.json(sys.levels.map(levelResponse));
  });

  mount(app, systemLevelSummary, async (c) => {
    const sys = system(deps.catalog.snapshot, c.req.param('key'));
    if (sys.levels.length === 0) throw unprocessable('No levels configured on the points system');
    const summary = await levelSummary(deps, sys);
    return c.json(summary.map((s) => ({ level: levelResponse(s.level), users: s.users })));
  });

  mount(app, systemBoosts, (c) => {
    const includeFinished = queryBool(c, 'includeFinished', false);
    const sys = system(deps.catalog.snapshot, c.req.param('key'));
    const today = utcDate(deps.clock.now());
    return c.json(
      sys.boosts
        .filter((b) => b.userId === null)
        .map((b) => boostResponse(b, today))
        .filter((b) => includeFinished || b.status !== 'finished'),
    );
  });

  mount(app, userBoosts, async (c) => {
    const userId = userIdParam(c);
    const state = await loadUser(deps, userId);
    if (!state) throw notFound('User not found');
    const snap = deps.catalog.snapshot;
    const sys = system(snap, c.req.param('key'));
    const today = localDate(deps.clock.now(), profileTz(state.profile));
    const attrs = profileAttributes(state.profile);
    return c.json(
      sys.boosts
        .filter(
          (b) =>
            (b.userId === null &&
              attributeFilters(snap, b.userAttributes).every((f) => attrs[f.key] === f.value)) ||
            b.userId === userId,
        )
        .filter((b) => boostStatus(b.start, b.end, today) !== 'finished')
        .map((b) => boostResponse(b, today)),
    );
  });
}
