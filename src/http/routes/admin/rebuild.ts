import type { Hono } from 'hono';
import type { Deps } from '../../../deps';
import { type RebuildSummary, rebuildState } from '../../../rebuild/rebuild';
import { z } from '../../../zod';
import type { AppEnv } from '../../../app-env';
import { type OpenAPIRegistry, errorResponse } from '../../openapi';

const SummarySchema = z.object({
  users: z.number().int(),
  drained: z.number().int().describe('Outbox records written to Postgres before rebuilding'),
  leaderboards: z.number().int(),
  boardUpdates: z.number().int().describe('Leaderboard updates replayed'),
  keysWritten: z.number().int(),
  durationMs: z.number().int(),
});

export const RebuildStatusSchema = z
  .object({
    status: z.enum(['idle', 'running', 'succeeded', 'failed']),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    summary: SummarySchema.nullable(),
    error: z.string().nullable(),
  })
  .openapi('RebuildStatus');

type Status = z.output<typeof RebuildStatusSchema>;

/**
 * `POST /admin/v1/rebuild` starts a rebuild of all Redis state from Postgres history in the background
 * (202); `GET /admin/v1/rebuild` reports the last one of this process. For disaster recovery: stop
 * application traffic first.
 */
export function mountRebuild(app: Hono<AppEnv>, deps: Deps, registry: OpenAPIRegistry): void {
  let state: Status = { status: 'idle', startedAt: null, finishedAt: null, summary: null, error: null };
  const ok = (description: string) => ({
    description,
    content: { 'application/json': { schema: RebuildStatusSchema } },
  });

  registry.registerPath({
    method: 'post',
    path: '/admin/v1/rebuild',
    tags: ['operations'],
    summary:
      'Rebuild all Redis state (totals, points, levels, streaks, achievements, leaderboards, indexes) from Postgres history',
    description:
      'Writes pending outbox records first, then replaces every Redis key Laurel derives from history. Runs in the background; poll GET /admin/v1/rebuild. Stop application traffic while it runs.',
    responses: {
      202: ok('Rebuild started'),
      401: errorResponse('Missing or invalid admin key'),
      409: errorResponse('A rebuild is already running'),
    },
  });
  app.post('/rebuild', (c) => {
    if (state.status === 'running') return c.json({ error: 'A rebuild is already running' }, 409);
    state = {
      status: 'running',
      startedAt: new Date().toISOString(),
      finishedAt: null,
      summary: null,
      error: null,
    };
    rebuildState(deps).then(
      (summary: RebuildSummary) => {
        state = { ...state, status: 'succeeded', finishedAt: new Date().toISOString(), summary };
      },
      (err: unknown) => {
        deps.logger.error({ err }, 'rebuild failed');
        state = {
          ...state,
          status: 'failed',
          finishedAt: new Date().toISOString(),
          error: String((err as Error).message ?? err),
        };
      },
    );
    return c.json(state, 202);
  });

  registry.registerPath({
    method: 'get',
    path: '/admin/v1/rebuild',
    tags: ['operations'],
    summary: 'Status of the last rebuild started by this process',
    responses: { 200: ok('Rebuild status'), 401: errorResponse('Missing or invalid admin key') },
  });
  app.get('/rebuild', (c) => c.json(state));
}
