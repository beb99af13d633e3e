import type { Deps } from '../../../deps';
import { type RebuildSummary, rebuildState } from '../../../rebuild/rebuild';
import { z } from '../../../zod';
import { adminRoutes, errorResponse, jsonResponse, mount, type RoutesApp } from '../../openapi';

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
export function mountRebuild(app: RoutesApp, deps: Deps): void {
  let state: Status = { status: 'idle', startedAt: null, finishedAt: null, summary: null, error: null };
  const route = adminRoutes(['operations']);
  const ok = (description: string) => jsonResponse(description, RebuildStatusSchema);

  const startRebuild = route('post', '/rebuild', {
    summary:
      'Rebuild all Redis state (totals, points, levels, streaks, achievements, leaderboards, indexes) from Postgres history',
    description:
      'Writes pending outbox records first, then replaces every Redis key Laurel derives from history. Runs in the background; poll GET /admin/v1/rebuild. Stop application traffic while it runs.',
    responses: {
      202: ok('Rebuild started'),
      409: errorResponse('A rebuild is already running'),
    },
  });
  mount(app, startRebuild, (c) => {
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

  const rebuildStatus = route('get', '/rebuild', {
    summary: 'Status of the last rebuild started by this process',
    responses: { 200: ok('Rebuild status') },
  });
  mount(app, rebuildStatus, (c) => c.json(state));
}
