import {
  getStreakSettings,
  showStreakSettings,
  StreakSettingsPatchSchema,
  StreakSettingsSchema,
  updateStreakSettings,
} from '../../../admin/streak-settings';
import { recordAdminWrite } from '../../../config-as-code/audit';
import type { Deps } from '../../../deps';
import { badRequest } from '../../../errors';
import { createRoute, errorResponse, mount, type RoutesApp } from '../../openapi';
import { parseWith } from '../../../wire/parse';
import { readJson } from '../../validate';

/** `GET` and `PATCH /admin/v1/streaks/settings` (admin §12): one singleton, validated as a whole. */
export function mountStreakSettings(app: RoutesApp, deps: Deps): void {
  const ok = {
    description: 'The streak settings',
    content: { 'application/json': { schema: StreakSettingsSchema } },
  };
  const getSettings = createRoute({
    method: 'get',
    path: '/streaks/settings',
    tags: ['streak settings'],
    summary: 'Get the streak settings',
    responses: { 200: ok, 401: errorResponse('Missing or invalid admin key') },
  });
  mount(app, getSettings, async (c) => c.json(showStreakSettings(deps, await getStreakSettings(deps))));

  const updateSettings = createRoute({
    method: 'patch',
    path: '/streaks/settings',
    tags: ['streak settings'],
    summary: 'Change any subset of the streak settings; conditions are replaced as a whole',
    request: { body: { content: { 'application/json': { schema: StreakSettingsPatchSchema } } } },
    responses: {
      200: ok,
      400: errorResponse('Malformed request'),
      401: errorResponse('Missing or invalid admin key'),
      422: errorResponse('Invalid value or combination; nothing changed'),
    },
  });
  mount(app, updateSettings, async (c) => {
    const body = await readJson(c);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw badRequest('Request body must be a JSON object');
    }
    const patch = parseWith(StreakSettingsPatchSchema, body);
    const row = await recordAdminWrite(deps, () => updateStreakSettings(deps, patch));
    return c.json(showStreakSettings(deps, row));
  });
}
