import type { Context } from 'hono';
import type { Snapshot } from '../../../catalog/snapshot';
import type { Deps } from '../../../deps';
import { toMicros } from '../../../engine/decimal';
import { runUserOp, type UserOpResult } from '../../../engine/user-op';
import { badRequest, notFound, unprocessable } from '../../../errors';
import type { AppEnv } from '../../env';
import { ErrorBodySchema, type OpenAPIRegistry } from '../../openapi';
import {
  achievementResponse,
  awardResponse,
  levelOf,
  levelResponse,
  metricTotal,
  streakResponse,
  systemBase,
} from '../../presenters';
import {
  checkAttributeKeys,
  checkTimeZone,
  EventAttributesSchema,
  toUserInput,
  UpsertedUserSchema,
} from '../../schemas/user';
import { parseWith, readJson } from '../../validate';
import { z } from '../../../zod';
import { leaderboardEntries } from './leaderboard-entries';

export const MetricsEventRequestSchema = z
  .object({
    user: UpsertedUserSchema,
    // A wrong JSON type (or a missing value) is structural, so it outranks 422 checks of other fields
    // (application-api §5.3); a non-finite number (e.g. 1e400) passes here and is a 422 below.
    value: z
      .unknown()
      .superRefine((v, ctx) => {
        if (typeof v !== 'number') ctx.addIssue({ code: 'invalid_type', expected: 'number', input: v });
      })
      .openapi({ type: 'number' }),
    attributes: EventAttributesSchema.nullish(),
  })
  .openapi('MetricsEventRequest');

/** Builds the `points` map of an event or completion response. */
export function pointsMap(snap: Snapshot, r: UserOpResult) {
  const out: Record<string, unknown> = {};
  for (const p of r.points) {
    const sys = snap.systemsById.get(p.sys);
    if (!sys) continue;
    // The levels at commit, from the script (semantics §5.11: a new user had none before).
    const before = p.lb !== undefined ? p.lb || null : levelOf(sys, p.total - p.added);
    const after = p.la !== undefined ? p.la || null : levelOf(sys, p.total);
    const entry: Record<string, unknown> = {
      ...systemBase(sys),
      total: p.total,
      added: p.added,
      awards: [...p.awards].reverse().map((a) => awardResponse(snap, sys, a, r.localDate)),
    };
    if ((before?.id ?? null) !== (after?.id ?? null)) entry.level = after ? levelResponse(after) : null;
    else if (p.awards.length === 0) continue;
    out[sys.key] = entry;
  }
  return out;
}

/** Achievements completed by an op, in completion order. */
export function completedAchievements(snap: Snapshot, r: UserOpResult) {
  return r.completions
    .map((c) => {
      const a = snap.achievementsById.get(c.id);
      return a ? achievementResponse(snap, a, c.at) : null;
    })
    .filter((a) => a !== null);
}

/** POST /v1/metrics/{key}/event and its /api alias. */
export function recordEventHandler(deps: Deps) {
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
      currentStreak: { ...streak, extended: r.streak.extended === true },
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

export function documentEvents(registry: OpenAPIRegistry): void {
  const errors = Object.fromEntries(
    [400, 401, 404, 413, 422, 429, 503].map((s) => [
      s,
      { description: 'Error', content: { 'application/json': { schema: ErrorBodySchema } } },
    ]),
  );
  for (const path of ['/v1/metrics/{key}/event', '/api/metrics/{key}/event']) {
    registry.registerPath({
      method: 'post',
      path,
      tags: ['events'],
      summary: 'Record a metric event; answers with every change it caused',
      request: {
        params: z.object({ key: z.string() }),
        headers: z.object({ 'Idempotency-Key': z.string().min(1).max(255).optional() }),
        body: { content: { 'application/json': { schema: MetricsEventRequestSchema } } },
      },
      responses: { 201: { description: 'Processed' }, 202: { description: 'Idempotent replay' }, ...errors },
    });
  }
}
