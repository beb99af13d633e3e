import type { Deps } from '../../../deps';
import { runUserOp } from '../../../services/user-op';
import { loadUser } from '../../../services/user-reads';
import { notFound, unprocessable } from '../../../errors';
import { z } from '../../../zod';
import { appError, jsonContent, jsonResponse, mount, type RoutesApp, routesTagged } from '../../openapi';
import { NOTIFICATION_TYPES, notificationPreferences, userResponse } from '../../../wire/users';
import { checkTimeZone, toUserInput, UpdatedUserSchema, UpsertedUserSchema } from '../../../wire/user-input';
import { parseWith } from '../../../wire/parse';
import { readJson, userIdParam } from '../../validate';

const channels = z.array(z.string()).nullish();

/** UpdateUserPreferencesRequest (application-api §7.2): each type sent replaces its channel list. */
export const UpdateUserPreferencesSchema = z
  .object({
    notifications: z
      .object({
        achievement_completed: channels,
        recap: channels,
        reactivation: channels,
        streak_reminder: channels,
      })
      .nullish(),
  })
  .openapi('UpdateUserPreferencesRequest');

/** Channel lists per type, duplicates collapsed; unknown channels → 422. */
function preferencesInput(body: z.output<typeof UpdateUserPreferencesSchema>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const type of NOTIFICATION_TYPES) {
    const list = body.notifications?.[type];
    if (list === null || list === undefined) continue;
    const bad = list.find((ch) => ch !== 'email' && ch !== 'push');
    if (bad !== undefined) throw unprocessable(`notifications.${type}: unknown channel ${bad}`);
    out[type] = [...new Set(list)];
  }
  return out;
}

const user = z
  .object({
    id: z.string(),
    email: z.string().nullable(),
    name: z.string().nullable(),
    tz: z.string().nullable(),
    deviceTokens: z.array(z.string()),
    subscribeToEmails: z.boolean(),
    attributes: z.record(z.string(), z.string()),
    control: z.boolean(),
    created: z.string(),
    updated: z.string(),
  })
  .openapi('User');
const prefs = z
  .object({ notifications: z.record(z.string(), z.array(z.enum(['email', 'push']))) })
  .openapi('UserPreferencesResponse');
const params = z.object({ id: z.string().min(1).max(255) });
const route = routesTagged(['users']);

const createUser = route('post', '/users', {
  summary: 'Create a user, or update it if the id exists',
  request: { body: jsonContent(UpsertedUserSchema) },
  responses: {
    200: jsonResponse('Existed (updated)', user),
    201: jsonResponse('Created', user),
    400: appError,
    422: appError,
  },
});

/**
 * A route on one user (`/users/{id}…`) answering `ok` (200). A route with a `body` may refuse it
 * (400); one that `creates` the user never answers 404; every one refuses a bad id or value (422).
 */
const userRoute = <const M extends 'get' | 'put' | 'patch', const P extends string>(
  method: M,
  path: P,
  doc: { summary: string; ok: ReturnType<typeof jsonResponse>; body?: z.ZodType; creates?: boolean },
) =>
  route(method, path, {
    summary: doc.summary,
    request: doc.body ? { params, body: jsonContent(doc.body) } : { params },
    responses: {
      200: doc.ok,
      ...(doc.body ? { 400: appError } : {}),
      ...(doc.creates ? {} : { 404: appError }),
      422: appError,
    },
  });

const theUser = jsonResponse('The user', user);
const preferences = jsonResponse('Preferences', prefs);

const getUser = userRoute('get', '/users/{id}', { summary: 'A user', ok: theUser });

const identifyUser = userRoute('put', '/users/{id}', {
  summary: 'Identify: create or update the user with this id',
  ok: theUser,
  body: UpdatedUserSchema,
  creates: true,
});

const updateUser = userRoute('patch', '/users/{id}', {
  summary: 'Update an existing user (absent or null fields are unchanged)',
  ok: theUser,
  body: UpdatedUserSchema,
});

const getPreferences = userRoute('get', '/users/{id}/preferences', {
  summary: "A user's notification preferences",
  ok: preferences,
});

const updatePreferences = userRoute('patch', '/users/{id}/preferences', {
  summary: 'Merge notification preferences per type',
  ok: preferences,
  body: UpdateUserPreferencesSchema,
});

/**
 * `/v1/users` (application-api §6.4, #4–#9). Creating a user may award `user_creation` points, so
 * creating routes apply the points-leaderboard values the op produced.
 */
export function mountUsers(app: RoutesApp, deps: Deps): void {
  mount(app, createUser, async (c) => {
    const body = parseWith(UpsertedUserSchema, await readJson(c));
    const snap = deps.catalog.snapshot;
    const r = await runUserOp(deps, { kind: 'upsert', user: toUserInput(snap, body.id, body) });
    return c.json(userResponse(deps.catalog.snapshot, r.profile), r.created ? 201 : 200);
  });

  mount(app, getUser, async (c) => {
    const state = await loadUser(deps, userIdParam(c));
    if (!state) throw notFound('User not found');
    return c.json(userResponse(deps.catalog.snapshot, state.profile));
  });

  mount(app, identifyUser, async (c) => {
    const body = parseWith(UpdatedUserSchema, await readJson(c));
    const id = userIdParam(c);
    const r = await runUserOp(deps, { kind: 'upsert', user: toUserInput(deps.catalog.snapshot, id, body) });
    return c.json(userResponse(deps.catalog.snapshot, r.profile), 200);
  });

  mount(app, updateUser, async (c) => {
    const body = parseWith(UpdatedUserSchema, await readJson(c));
    const id = userIdParam(c);
    checkTimeZone(body);
    // An unknown user outranks configuration checks such as attribute keys (application-api §5.3).
    if (!(await deps.redis.hexists(deps.keys.user(id).hash, 'created'))) throw notFound('User not found');
    const user = toUserInput(deps.catalog.snapshot, id, body);
    const r = await runUserOp(deps, { kind: 'upsert', user, mustExist: true });
    return c.json(userResponse(deps.catalog.snapshot, r.profile), 200);
  });

  mount(app, getPreferences, async (c) => {
    const state = await loadUser(deps, userIdParam(c));
    if (!state) throw notFound('User not found');
    return c.json({ notifications: notificationPreferences(state.profile) });
  });

  mount(app, updatePreferences, async (c) => {
    const body = parseWith(UpdateUserPreferencesSchema, await readJson(c));
    const id = userIdParam(c);
    const preferences = preferencesInput(body);
    const r = await runUserOp(deps, { kind: 'upsert', user: { id, preferences }, mustExist: true });
    return c.json({ notifications: notificationPreferences(r.profile) });
  });
}
