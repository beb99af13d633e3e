import type { Context } from 'hono';
import type { Deps } from '../../../deps';
import { toMicros } from '../../../engine/decimal';
import { runUserOp } from '../../../services/user-op';
import { badRequest, notFound, unprocessable } from '../../../errors';
import type { AppEnv } from '../../../app-env';
import { createRoute, ErrorBodySchema, mount, type RoutesApp } from '../../openapi';
import { completedAchievements, leaderboardEntries, pointsMap } from '../../../wire/event-response';
import { metricTotal } from '../../../wire/metrics';
import { streakResponse } from '../../../wire/streaks';
import { extend } from '../../../wire/common';
import {
  checkAttributeKeys,
  checkTimeZone,
  EventAttributesSchema,
  EventValueSchema,
  toUserInput,
  UpsertedUserSchema,
} from '../../../wire/user-input';
import { parseWith } from '../../../wire/parse';
import { readJson } from '../../validate';
import { z } from '../../../zod';

export const MetricsEventRequestSchema = z
  .object({
    user: UpsertedUserSchema,
    value: EventValueSchema,
    attributes: EventAttributesSchema.nullish(),
  })
  .openapi('MetricsEventRequest');

/** POST /v1/metrics/{key}/event and its /api alias. */
function recordEventHandler(deps: Deps) {
  return async (c: Context<AppEnv>) => {
    const body = parseWith(MetricsEventRequestSchema, await readJson(c));
    if (body.value === undefined || body.value === null) throw badRequest('value is required');
    if (typeof body.value !== 'number') throw badRequest('value must be a number');
    if (!Number.isFinite(body.value)) throw unprocessable('value must be a finite number');
    checkTimeZone(body.user);
    const idemHeader = c.req.header('idempotency-key');
    const idempotencyKey = idemHeader === undefined ? undefined : idemHeader.trim();
    if (idempotencyKey !== undefined && (idempotencyKey.length < 1 || idempotencyKey.length > 255)) {
      throw unprocessable('Idempotency-Key must be 1 to 255 characters');
    }
    let valueMicros: number;
    try {
      valueMicros = toMicros(body.value);
    } catch {
      throw unprocessable('value is too large');
    }

    const snap = deps.catalog.snapshot;
    const metric = snap.metricsByKey.get(c.req.param('key') ?? '');
    if (!metric) throw notFound('Metric not found');
    const user = toUserInput(snap, body.user.id, body.user);
    if (body.attributes) checkAttributeKeys(snap, body.attributes, 'event');

    const r = await runUserOp(deps, {
      kind: 'event',
      metricId: metric.id,
      user,
      valueMicros,
      eventAttributes: body.attributes ?? undefined,
      idempotencyKey,
    });
    const streak = streakResponse(deps.catalog.snapshot, r.streak, r.periodIdx);
    const response: Record<string, unknown> = {
      eventId: r.eventId,
      metricId: metric.id,
      total: metricTotal(r.totalMicros),
      achievements: completedAchievements(snap, r),
      currentStreak: extend(streak, { extended: r.streak.extended === true }),
      points: pointsMap(snap, r),
      leaderboards: leaderboardEntries(deps, r),
    };
    if (idempotencyKey !== undefined) {
      response.idempotencyKey = idempotencyKey;
      response.idempotentReplayed = r.replayOf !== undefined;
    }
    return c.json(response, r.replayOf !== undefined ? 202 : 201);
  };
}

/** The event route, relative to its app: /v1 and the legacy /api mount the same definition. */
const recordEventRoute = createRoute({
  method: 'post',
  path: '/metrics/{key}/event',
  tags: ['events'],
  summary: 'Record a metric event; answers with every change it caused',
  request: {
    params: z.object({ key: z.string() }),
    headers: z.object({ 'Idempotency-Key': z.string().min(1).max(255).optional() }),
    body: { content: { 'application/json': { schema: MetricsEventRequestSchema } } },
  },
  responses: {
    201: { description: 'Processed' },
    202: { description: 'Idempotent replay' },
    ...Object.fromEntries(
      [400, 401, 404, 413, 422, 429, 503].map((s) => [
        s,
        { description: 'Error', content: { 'application/json': { schema: ErrorBodySchema } } },
      ]),
    ),
  },
});

/** POST /v1/metrics/{key}/event, and the same handler at its legacy path /api/metrics/{key}/event. */
export function mountEvents(v1: RoutesApp, legacy: RoutesApp, deps: Deps): void {
  const recordEvent = recordEventHandler(deps);
  mount(v1, recordEventRoute, recordEvent);
  mount(legacy, recordEventRoute, recordEvent);
}
