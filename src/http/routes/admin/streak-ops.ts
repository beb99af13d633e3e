import type { Context } from 'hono';
import type { Deps } from '../../../deps';
import { addDays, isValidTimeZone, localDate, periodIndex } from '../../../engine/periods';
import { runUserOp } from '../../../services/user-op';
import { AppError, badRequest, unprocessable } from '../../../errors';
import { z } from '../../../zod';
import { createRoute, errorResponse, mount, type RoutesApp } from '../../openapi';
import { readJson } from '../../validate';

/** StreakIssue (admin-api §13.1): the SDK requires userId, level and reason. */
interface StreakIssue {
  userId: string;
  level: 'error' | 'warning';
  reason: string;
  severity: 'error' | 'warning';
  message: string;
  index: number;
}

const issue = (userId: string, index: number, level: 'error' | 'warning', reason: string): StreakIssue => ({
  userId,
  level,
  reason,
  severity: level,
  message: reason,
  index,
});

/** Look-back of a restore (semantics §4.8), in days of the local calendar ending today. */
const LOOK_BACK_DAYS = { daily: 90, weekly: 365, monthly: 730 } as const;

/** The items of `{ <field>: [ { <idField>: string } ] }`: structure → 400, count → 422. */
async function readItems(c: Context, field: string, idField: string, max: number): Promise<string[]> {
  const body = await readJson(c);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badRequest('Request body must be a JSON object');
  }
  const items = (body as Record<string, unknown>)[field];
  if (items === undefined || items === null) throw badRequest(`${field} is required`);
  if (!Array.isArray(items)) throw badRequest(`${field} must be an array`);
  const ids = items.map((item, i) => {
    const id = typeof item === 'object' && item !== null && !Array.isArray(item) ? item[idField] : undefined;
    if (typeof id !== 'string') throw badRequest(`${field}.${i}.${idField} must be a string`);
    return id;
  });
  if (ids.length === 0) throw unprocessable(`${field} must contain at least one item`);
  if (ids.length > max) throw unprocessable(`${field} must contain at most ${max} items`);
  return ids;
}

const isNoUser = (err: unknown) => err instanceof AppError && err.code === 'NOT_FOUND';

const errors = {
  400: errorResponse('Malformed request'),
  401: errorResponse('Missing or invalid admin key'),
  422: errorResponse('Item count, or the feature is not enabled'),
};

const StreakIssueSchema = z
  .object({
    userId: z.string(),
    level: z.enum(['error', 'warning']),
    reason: z.string(),
    severity: z.enum(['error', 'warning']),
    message: z.string(),
    index: z.number().int(),
  })
  .openapi('StreakIssue');

const grantFreezes = createRoute({
  method: 'post',
  path: '/streaks/freezes',
  tags: ['streak operations'],
  summary: 'Grant one streak freeze per item (1-1000 items), capped at maxFreezes',
  request: {
    body: {
      content: {
        'application/json': {
          schema: z.object({
            freezes: z
              .array(z.object({ userId: z.string() }))
              .min(1)
              .max(1000),
          }),
        },
      },
    },
  },
  responses: {
    201: {
      description: 'At least one freeze granted',
      content: {
        'application/json': {
          schema: z.object({ issues: z.array(StreakIssueSchema) }).openapi('CreateStreakFreezesResponse'),
        },
      },
    },
    200: { description: 'Nothing granted (see issues)' },
    ...errors,
  },
});

const restoreStreaks = createRoute({
  method: 'post',
  path: '/streaks/restore',
  tags: ['streak operations'],
  summary: "Restore users' streaks to their best length of the look-back window (1-100 users)",
  request: {
    body: {
      content: {
        'application/json': {
          schema: z.object({
            users: z
              .array(z.object({ id: z.string() }))
              .min(1)
              .max(100),
          }),
        },
      },
    },
  },
  responses: {
    201: {
      description: 'At least one streak restored',
      content: {
        'application/json': {
          schema: z
            .object({ restoredUsers: z.array(z.string()), issues: z.array(StreakIssueSchema) })
            .openapi('RestoreStreaksResponse'),
        },
      },
    },
    200: { description: 'Nothing restored (see issues)' },
    ...errors,
  },
});

/** Admin streak operations called by the SDK: #25 grant freezes, #26 restore (admin-api §13.1, §13.2). */
export function mountStreakOps(app: RoutesApp, deps: Deps): void {
  mount(app, grantFreezes, async (c) => {
    const userIds = await readItems(c, 'freezes', 'userId', 1000);
    if (!deps.catalog.snapshot.streak.freezesEnabled) throw unprocessable('Streak freezes are not enabled');
    const issues: StreakIssue[] = [];
    let granted = 0;
    // One freeze per item, in order; the user's script serialises items of the same user.
    for (const [index, userId] of userIds.entries()) {
      try {
        const r = await runUserOp(deps, { kind: 'freeze', user: { id: userId }, count: 1 });
        if ((r.granted ?? 0) > 0) granted += r.granted ?? 0;
        else issues.push(issue(userId, index, 'warning', 'Would exceed maximum freeze limit'));
      } catch (err) {
        if (!isNoUser(err)) throw err;
        issues.push(issue(userId, index, 'error', 'User does not exist'));
      }
    }
    return c.json({ issues }, granted > 0 ? 201 : 200);
  });

  mount(app, restoreStreaks, async (c) => {
    const ids = await readItems(c, 'users', 'id', 100);
    const s = deps.catalog.snapshot.streak;
    if (!s.enabled || s.conditions.length === 0) throw unprocessable('Streaks are not enabled');
    const restoredUsers: string[] = [];
    const issues: StreakIssue[] = [];
    const seen = new Set<string>();
    for (const [index, userId] of ids.entries()) {
      if (seen.has(userId)) continue; // duplicates are processed once
      seen.add(userId);
      try {
        const storedTz = await deps.redis.hget(deps.keys.user(userId).hash, 'tz');
        const tz = storedTz && isValidTimeZone(storedTz) ? storedTz : 'UTC';
        const today = localDate(deps.clock.now(), tz);
        const fromIdx = periodIndex(s.frequency, addDays(today, -LOOK_BACK_DAYS[s.frequency]));
        const r = await runUserOp(deps, { kind: 'restore', user: { id: userId }, fromIdx });
        if (r.restore?.to !== undefined) restoredUsers.push(userId);
        else if (r.restore?.issue === 'max') {
          issues.push(issue(userId, index, 'warning', 'Streak is already at maximum length'));
        } else issues.push(issue(userId, index, 'warning', 'No streak to restore'));
      } catch (err) {
        if (!isNoUser(err)) throw err;
        issues.push(issue(userId, index, 'error', 'User does not exist'));
      }
    }
    return c.json({ restoredUsers, issues }, restoredUsers.length > 0 ? 201 : 200);
  });
}
