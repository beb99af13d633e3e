import type { Hono } from 'hono';
import type { PointsSystemConfig, Snapshot } from '../../../catalog/snapshot';
import type { Deps } from '../../../deps';
import { boostStatus } from '../../../engine/boost-status';
import { utcDate } from '../../../engine/leaderboard-status';
import { localDate } from '../../../engine/periods';
import { levelSummary, pointsHistogram, userPoints } from '../../../services/points-reads';
import { loadUser, profileAttributes, profileTz } from '../../../services/user-reads';
import { invalidAttributeKeys, notFound, unprocessable } from '../../../errors';
import { z } from '../../../zod';
import type { AppEnv } from '../../../app-env';
import { ErrorBodySchema, type OpenAPIRegistry } from '../../openapi';
import { attributeFilters } from '../../../wire/common';
import { awardResponse, boostResponse, triggerResponse } from '../../../wire/points';
import { levelOf, levelResponse, systemBase } from '../../../engine/levels';
import { queryAttributeFilter, queryBool, queryInt, userIdParam } from '../../validate';

function system(snap: Snapshot, key: string): PointsSystemConfig {
  const sys = snap.systemsByKey.get(key);
  if (!sys) throw notFound('Points system not found');
  return sys;
}

/** Points reads (application-api §6.8: #15, #21, #22, E1–E4). */
export function mountPoints(app: Hono<AppEnv>, deps: Deps, registry: OpenAPIRegistry): void {
  app.get('/users/:id/points/:key', async (c) => {
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

  app.get('/points/:key', (c) => {
    const snap = deps.catalog.snapshot;
    const sys = system(snap, c.req.param('key'));
    return c.json({
      ...systemBase(sys),
      triggers: sys.triggers.filter((t) => t.status === 'active').map((t) => triggerResponse(snap, t)),
    });
  });

  app.get('/points/:key/summary', async (c) => {
    const filter = queryAttributeFilter(c);
    const snap = deps.catalog.snapshot;
    const sys = system(snap, c.req.param('key'));
    if (filter) {
      const unknown = filter.map(([k]) => k).filter((k) => !snap.userAttributesByKey.has(k));
      if (unknown.length) throw invalidAttributeKeys(unknown);
    }
    return c.json(await pointsHistogram(deps, sys, filter));
  });

  app.get('/points/:key/levels', (c) => {
    const sys = system(deps.catalog.snapshot, c.req.param('key'));
    return c.json(sys.levels.map(levelResponse));
  });

  app.get('/points/:key/level-summary', async (c) => {
    const sys = system(deps.catalog.snapshot, c.req.param('key'));
    if (sys.levels.length === 0) throw unprocessable('No levels configured on the points system');
    const summary = await levelSummary(deps, sys);
    return c.json(summary.map((s) => ({ level: levelResponse(s.level), users: s.users })));
  });

  app.get('/points/:key/boosts', (c) => {
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

  app.get('/users/:id/points/:key/boosts', async (c) => {
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

  document(registry);
}

function document(registry: OpenAPIRegistry): void {
  const error = { description: 'Error', content: { 'application/json': { schema: ErrorBodySchema } } };
  const json = (schema: z.ZodType) => ({ content: { 'application/json': { schema } } });
  const tags = ['points'];
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
  registry.registerPath({
    method: 'get',
    path: '/v1/users/{id}/points/{key}',
    tags,
    summary: "A user's total, level and most recent awards in a points system",
    request: { params: userKey, query: z.object({ awards: z.number().int().min(1).max(100).optional() }) },
    responses: {
      200: {
        description: 'User points',
        ...json(
          z
            .object({
              ...base,
              total: z.number().int(),
              level: level.nullable(),
              awards: z.array(z.object({ id: z.string(), awarded: z.number().int() }).passthrough()),
            })
            .openapi('GetUserPointsResponse'),
        ),
      },
      404: error,
      422: error,
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/points/{key}',
    tags,
    summary: 'A points system with its active triggers',
    request: { params: key },
    responses: {
      200: {
        description: 'Points system',
        ...json(z.object({ ...base, triggers: z.array(trigger) }).openapi('PointsSystemResponse')),
      },
      404: error,
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/points/{key}/summary',
    tags,
    summary: "Histogram of users' totals: exactly 11 ranges",
    request: { params: key, query: z.object({ userAttributes: z.string().optional() }) },
    responses: {
      200: {
        description: 'Ranges',
        ...json(z.array(z.object({ from: z.number().int(), to: z.number().int(), users: z.number().int() }))),
      },
      404: error,
      422: error,
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/points/{key}/levels',
    tags,
    summary: 'Levels of a points system, ascending by threshold',
    request: { params: key },
    responses: { 200: { description: 'Levels', ...json(z.array(level)) }, 404: error },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/points/{key}/level-summary',
    tags,
    summary: 'Users currently at each level',
    request: { params: key },
    responses: {
      200: { description: 'Level summary', ...json(z.array(z.object({ level, users: z.number().int() }))) },
      404: error,
      422: error,
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/points/{key}/boosts',
    tags,
    summary: 'Global and cohort boosts of a points system (status on the UTC date)',
    request: { params: key, query: z.object({ includeFinished: z.enum(['true', 'false']).optional() }) },
    responses: { 200: { description: 'Boosts', ...json(z.array(boost)) }, 404: error, 422: error },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/users/{id}/points/{key}/boosts',
    tags,
    summary: "Active and scheduled boosts that apply to a user (the user's local date)",
    request: { params: userKey },
    responses: { 200: { description: 'Boosts', ...json(z.array(boost)) }, 404: error },
  });
}
