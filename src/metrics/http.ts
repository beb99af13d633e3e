import type { MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { ERROR_STATUS } from '../errors';
import { events, httpDuration, httpRequests } from './registry';

/** The two paths of the event endpoint (application-api: the legacy /api path is the same operation). */
const EVENT_ROUTES = new Set(['/v1/metrics/:key/event', '/api/metrics/:key/event']);

/** Error code (lower case) by status, from the one error table: the `reason` of a refused event. */
const REASONS = new Map<number, string>(
  Object.entries(ERROR_STATUS).map(([code, status]) => [status as number, code.toLowerCase()]),
);

/**
 * The route template that answered: the last matched route registered for a method (middleware is
 * registered for ALL), so `/v1/users/:id` rather than the path itself; "unmatched" for a 404 no
 * route claimed. Templates come from the code, which keeps the label set bounded whatever clients send.
 */
function routeOf(c: Parameters<MiddlewareHandler>[0]): string {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    const r = routes[i]!;
    if (r.method !== 'ALL') return r.path;
  }
  return 'unmatched';
}

/**
 * Counts every request by method, route template and status, times it, and classifies metric
 * events (created 201, replayed 202, rejected 4xx or failed 5xx with the error code as reason).
 * In-memory counters only: nothing here talks to Redis or Postgres.
 */
export const httpMetrics: MiddlewareHandler = async (c, next) => {
  const start = performance.now();
  try {
    await next();
  } finally {
    const status = c.res.status;
    const route = routeOf(c);
    const method = c.req.method;
    httpRequests.labels(method, route, String(status)).inc();
    httpDuration.labels(method, route).observe((performance.now() - start) / 1000);
    if (method === 'POST' && EVENT_ROUTES.has(route)) {
      if (status === 201) events.labels('created', '').inc();
      else if (status === 202) events.labels('replayed', '').inc();
      else events.labels(status >= 500 ? 'failed' : 'rejected', REASONS.get(status) ?? String(status)).inc();
    }
  }
};
