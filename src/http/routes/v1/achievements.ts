import type { AchievementRow, Snapshot } from '../../../catalog/snapshot';
import type { Deps } from '../../../deps';
import { rarity } from '../../../engine/stats';
import { runUserOp } from '../../../services/user-op';
import { achievementStats, completionOf, loadUser, profileAttributes } from '../../../services/user-reads';
import { notFound, unprocessable } from '../../../errors';
import { z } from '../../../zod';
import { appError, jsonContent, jsonResponse, mount, type RoutesApp, routesTagged } from '../../openapi';
import { achievementResponse } from '../../../wire/achievements';
import { attributeFilters, extend } from '../../../wire/common';
import { checkTimeZone, toUserInput, UpsertedUserSchema } from '../../../wire/user-input';
import { parseWith } from '../../../wire/parse';
import {
  queryAttributeFilter,
  requireKnownUserAttributes,
  queryOne,
  readJson,
  userIdParam,
} from '../../validate';
import { completedAchievements, pointsMap } from '../../../wire/event-response';

export const AchievementsCompleteRequestSchema = z
  .object({ user: UpsertedUserSchema })
  .openapi('AchievementsCompleteRequest');

/** Whether every user-attribute filter of an achievement is satisfied by the given attributes. */
function eligible(
  snap: Snapshot,
  a: AchievementRow,
  attrs: (key: string, value: string) => boolean,
): boolean {
  return attributeFilters(snap, a.userAttributes).every((f) => attrs(f.key, f.value));
}

const achievement = z
  .object({ id: z.string(), name: z.string(), trigger: z.string(), key: z.string() })
  .passthrough()
  .openapi('AchievementResponse');
const withStats = achievement.extend({ completions: z.number().int(), rarity: z.number() });
const route = routesTagged(['achievements']);

const listAchievements = route('get', '/achievements', {
  summary: 'Active achievements with completions and rarity',
  request: { query: z.object({ userAttributes: z.string().optional() }) },
  responses: { 200: jsonResponse('Achievements', z.array(withStats)), 422: appError },
});

const completeAchievement = route('post', '/achievements/{key}/complete', {
  summary: 'Complete an `api` achievement for a user (upserts the user)',
  request: { params: z.object({ key: z.string() }), body: jsonContent(AchievementsCompleteRequestSchema) },
  responses: {
    200: { description: 'Already completed: the original completion' },
    201: { description: 'Completed' },
    400: appError,
    404: appError,
    422: appError,
  },
});

const userAchievements = route('get', '/users/{id}/achievements', {
  summary: "A user's completed achievements (and, with includeIncomplete=true, the ones left)",
  request: {
    params: z.object({ id: z.string() }),
    query: z.object({ includeIncomplete: z.enum(['true']).optional() }),
  },
  responses: {
    200: jsonResponse('Achievements', z.array(withStats.extend({ achievedAt: z.string().nullable() }))),
    404: appError,
    422: appError,
  },
});

/** `/v1/achievements` and a user's achievements (application-api §6.3, §6.6; #1, #2, #13). */
export function mountAchievements(app: RoutesApp, deps: Deps): void {
  mount(app, listAchievements, async (c) => {
    const filter = queryAttributeFilter(c);
    const snap = deps.catalog.snapshot;
    if (filter) requireKnownUserAttributes(snap, filter);
    const given = (key: string, value: string) => filter?.some(([k, v]) => k === key && v === value) ?? false;
    const list = snap.achievements.filter(
      (a) => a.status === 'active' && (!filter || eligible(snap, a, given)),
    );
    const stats = await achievementStats(
      deps,
      list.map((a) => a.id),
    );
    return c.json(
      list.map((a) => {
        const completions = stats.completions.get(a.id) ?? 0;
        return extend(achievementResponse(snap, a), {
          completions,
          rarity: rarity(completions, stats.users),
        });
      }),
    );
  });

  mount(app, completeAchievement, async (c) => {
    const body = parseWith(AchievementsCompleteRequestSchema, await readJson(c));
    checkTimeZone(body.user);
    const snap = deps.catalog.snapshot;
    const a = snap.achievementsByKey.get(c.req.param('key'));
    if (!a || a.status === 'inactive') throw notFound('Achievement not found');
    const user = toUserInput(snap, body.user.id, body.user);
    if (a.trigger !== 'api') throw unprocessable('Achievement cannot be completed through the API');
    const r = await runUserOp(deps, { kind: 'complete', achievementId: a.id, user });
    if (r.already) {
      return c.json(
        {
          completionId: r.already.cid,
          achievement: achievementResponse(snap, a, r.already.at),
          points: {},
          achievements: [],
        },
        200,
      );
    }
    // Points leaderboards move with the completion's awards; the response does not list them.
    const own = r.completions.find((x) => x.id === a.id)!;
    return c.json(
      {
        completionId: own.cid,
        achievement: achievementResponse(snap, a, own.at),
        points: pointsMap(snap, r),
        achievements: completedAchievements(snap, r),
      },
      201,
    );
  });

  mount(app, userAchievements, async (c) => {
    const includeIncomplete = queryOne(c, 'includeIncomplete') === 'true';
    const state = await loadUser(deps, userIdParam(c), ['achievements']);
    if (!state) throw notFound('User not found');
    const snap = deps.catalog.snapshot;
    const completed: Array<{ a: AchievementRow; at: number; order: number }> = [];
    const incomplete: AchievementRow[] = [];
    const attrs = profileAttributes(state.profile);
    snap.achievements.forEach((a, order) => {
      const done = completionOf(state.achievements[a.id]);
      if (done && (a.status === 'active' || a.status === 'locked')) completed.push({ a, at: done.at, order });
      else if (
        !done &&
        includeIncomplete &&
        a.status === 'active' &&
        eligible(snap, a, (k, v) => attrs[k] === v)
      )
        incomplete.push(a);
    });
    completed.sort((x, y) => x.at - y.at || x.order - y.order);
    const list = [
      ...completed.map((x) => ({ a: x.a, at: x.at as number | null })),
      ...incomplete.map((a) => ({ a, at: null })),
    ];
    const stats = await achievementStats(
      deps,
      list.map((x) => x.a.id),
    );
    return c.json(
      list.map(({ a, at }) => {
        const completions = stats.completions.get(a.id) ?? 0;
        return {
          ...achievementResponse(snap, a),
          completions,
          rarity: rarity(completions, stats.users),
          achievedAt: at === null ? null : new Date(at).toISOString(),
        };
      }),
    );
  });
}
