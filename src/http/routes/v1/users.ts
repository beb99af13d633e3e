import type { Hono } from 'hono';
import type { Deps } from '../../../deps';
import { runUserOp } from '../../../services/user-op';
import { loadUser } from '../../../services/user-reads';
import { notFound, unprocessable } from '../../../errors';
import { z } from '../../../zod';
import type { AppEnv } from '../../../app-env';
import { ErrorBodySchema, type OpenAPIRegistry } from '../../openapi';
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

/**
 * `/v1/users` (application-api §6.4, #4–#9). Creating a user may award `user_creation` points, so
 * creating routes apply the points-leaderboard values the op produced.
 */
export function mountUsers(app: Hono<AppEnv>, deps: Deps, registry: OpenAPIRegistry): void {
  app.post('/users', async (c) => {
    const body = parseWith(UpsertedUserSchema, await readJson(c));
    const snap = deps.catalog.snapshot;
    const r = await runUserOp(deps, { kind: 'upsert', user: toUserInput(snap, body.id, body) });
    return c.json(userResponse(deps.catalog.snapshot, r.profile), r.created ? 201 : 200);
  });

  app.get('/users/:id', async (c) => {
    const state = await loadUser(deps, userIdParam(c));
    if (!state) throw notFound('User not found');
    return c.json(userResponse(deps.catalog.snapshot, state.profile));
  });

  app.put('/users/:id', async (c) => {
    const body = parseWith(UpdatedUserSchema, await readJson(c));
    const id = userIdParam(c);
    const r = await runUserOp(deps, { kind: 'upsert', user: toUserInput(deps.catalog.snapshot, id, body) });
    return c.json(userResponse(deps.catalog.snapshot, r.profile), 200);
  });

  app.patch('/users/:id', async (c) => {
    const body = parseWith(UpdatedUserSchema, await readJson(c));
    const id = userIdParam(c);
    checkTimeZone(body);
    // An unknown user outranks configuration checks such as attribute keys (application-api §5.3).
    if (!(await deps.redis.hexists(deps.keys.user(id).profile, 'created'))) throw notFound('User not found');
    const user = toUserInput(deps.catalog.snapshot, id, body);
    const r = await runUserOp(deps, { kind: 'upsert', user, mustExist: true });
    return c.json(userResponse(deps.catalog.snapshot, r.profile), 200);
  });

  app.get('/users/:id/preferences', async (c) => {
    const state = await loadUser(deps, userIdParam(c));
    if (!state) throw notFound('User not found');
    return c.json({ notifications: notificationPreferences(state.profile) });
  });

  app.patch('/users/:id/preferences', async (c) => {
    const body = parseWith(UpdateUserPreferencesSchema, await readJson(c));
    const id = userIdParam(c);
    const preferences = preferencesInput(body);
    const r = await runUserOp(deps, { kind: 'upsert', user: { id, preferences }, mustExist: true });
    return c.json({ notifications: notificationPreferences(r.profile) });
  });

  document(registry);
}

function document(registry: OpenAPIRegistry): void {
  const error = { description: 'Error', content: { 'application/json': { schema: ErrorBodySchema } } };
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
  const userJson = { content: { 'application/json': { schema: user } } };
  const prefs = z
    .object({ notifications: z.record(z.string(), z.array(z.enum(['email', 'push']))) })
    .openapi('UserPreferencesResponse');
  const prefsJson = { content: { 'application/json': { schema: prefs } } };
  const params = z.object({ id: z.string().min(1).max(255) });
  const tags = ['users'];
  registry.registerPath({
    method: 'post',
    path: '/v1/users',
    tags,
    summary: 'Create a user, or update it if the id exists',
    request: { body: { content: { 'application/json': { schema: UpsertedUserSchema } } } },
    responses: {
      200: { description: 'Existed (updated)', ...userJson },
      201: { description: 'Created', ...userJson },
      400: error,
      422: error,
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/users/{id}',
    tags,
    summary: 'A user',
    request: { params },
    responses: { 200: { description: 'The user', ...userJson }, 404: error, 422: error },
  });
  registry.registerPath({
    method: 'put',
    path: '/v1/users/{id}',
    tags,
    summary: 'Identify: create or update the user with this id',
    request: { params, body: { content: { 'application/json': { schema: UpdatedUserSchema } } } },
    responses: { 200: { description: 'The user', ...userJson }, 400: error, 422: error },
  });
  registry.registerPath({
    method: 'patch',
    path: '/v1/users/{id}',
    tags,
    summary: 'Update an existing user (absent or null fields are unchanged)',
    request: { params, body: { content: { 'application/json': { schema: UpdatedUserSchema } } } },
    responses: { 200: { description: 'The user', ...userJson }, 400: error, 404: error, 422: error },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/users/{id}/preferences',
    tags,
    summary: "A user's notification preferences",
    request: { params },
    responses: { 200: { description: 'Preferences', ...prefsJson }, 404: error, 422: error },
  });
  registry.registerPath({
    method: 'patch',
    path: '/v1/users/{id}/preferences',
    tags,
    summary: 'Merge notification preferences per type',
    request: {
      params,
      body: { content: { 'application/json': { schema: UpdateUserPreferencesSchema } } },
    },
    responses: { 200: { description: 'Preferences', ...prefsJson }, 400: error, 404: error, 422: error },
  });
}
