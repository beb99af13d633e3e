import type { MetricRow, Snapshot } from '../../../catalog/snapshot';
import type { Deps } from '../../../deps';
import { fromMicros } from '../../../engine/decimal';
import { completionOf, loadUser, type UserState } from '../../../services/user-reads';
import { notFound } from '../../../errors';
import { z } from '../../../zod';
import { createRoute, ErrorBodySchema, mount, type RoutesApp } from '../../openapi';
import { achievementResponse } from '../../../wire/achievements';
import { userIdParam } from '../../validate';

/** MetricResponse: the user's total and the metric's active achievements plus locked ones the user completed. */
function metricResponse(snap: Snapshot, m: MetricRow, state: UserState) {
  const achievements = snap.achievements
    .filter((a) => a.trigger === 'metric' && a.metricId === m.id)
    .map((a) => ({ a, done: completionOf(state.achievements[a.id]) }))
    .filter(({ a, done }) => a.status === 'active' || (a.status === 'locked' && done))
    .map(({ a, done }) => achievementResponse(snap, a, done ? done.at : null));
  return {
    id: m.id,
    key: m.key,
    name: m.name,
    status: 'active',
    current: fromMicros(Number(state.metrics[m.id] ?? 0)),
    achievements,
  };
}

const error = { description: 'Error', content: { 'application/json': { schema: ErrorBodySchema } } };
const metric = z
  .object({
    id: z.string(),
    key: z.string(),
    name: z.string(),
    status: z.literal('active'),
    current: z.number(),
    achievements: z.array(z.object({ id: z.string(), achievedAt: z.string().nullable() }).passthrough()),
  })
  .openapi('MetricResponse');

const userMetrics = createRoute({
  method: 'get',
  path: '/users/{id}/metrics',
  tags: ['metrics'],
  summary: "A user's total of every metric, with the metrics' achievements",
  request: { params: z.object({ id: z.string() }) },
  responses: {
    200: { description: 'Metrics', content: { 'application/json': { schema: z.array(metric) } } },
    404: error,
  },
});

const userMetric = createRoute({
  method: 'get',
  path: '/users/{id}/metrics/{key}',
  tags: ['metrics'],
  summary: "A user's total of one metric, with its achievements",
  request: { params: z.object({ id: z.string(), key: z.string() }) },
  responses: {
    200: { description: 'Metric', content: { 'application/json': { schema: metric } } },
    404: error,
  },
});

/** A user's metric totals (application-api §6.5, #10, #11). */
export function mountMetrics(app: RoutesApp, deps: Deps): void {
  mount(app, userMetrics, async (c) => {
    const state = await loadUser(deps, userIdParam(c), ['metrics', 'achievements']);
    if (!state) throw notFound('User not found');
    const snap = deps.catalog.snapshot;
    return c.json(snap.metrics.map((m) => metricResponse(snap, m, state)));
  });

  mount(app, userMetric, async (c) => {
    const state = await loadUser(deps, userIdParam(c), ['metrics', 'achievements']);
    if (!state) throw notFound('User not found');
    const snap = deps.catalog.snapshot;
    const m = snap.metricsByKey.get(c.req.param('key'));
    if (!m) throw notFound('Metric not found');
    return c.json(metricResponse(snap, m, state));
  });
}
