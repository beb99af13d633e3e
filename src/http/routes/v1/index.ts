import { Hono, type Handler } from 'hono';
import type { Deps } from '../../../deps';
import type { AppEnv } from '../../../app-env';
import type { OpenAPIRegistry } from '../../openapi';
import { documentEvents, recordEventHandler } from './events';
import { mountLeaderboards } from './leaderboards';
import { mountAchievements } from './achievements';
import { mountMetrics } from './metrics';
import { mountPoints } from './points';
import { mountStreaks } from './streaks';
import { mountSummaries } from './summaries';
import { mountUsers } from './users';

/** Every /v1 route, plus the event handler for its legacy /api alias. */
export function v1Routes(
  deps: Deps,
  registry: OpenAPIRegistry,
): { routes: Hono<AppEnv>; recordEvent: Handler<AppEnv> } {
  const routes = new Hono<AppEnv>();
  const recordEvent = recordEventHandler(deps);
  routes.post('/metrics/:key/event', recordEvent);
  documentEvents(registry);
  mountLeaderboards(routes, deps, registry);
  mountUsers(routes, deps, registry);
  mountAchievements(routes, deps, registry);
  mountMetrics(routes, deps, registry);
  mountStreaks(routes, deps, registry);
  mountPoints(routes, deps, registry);
  mountSummaries(routes, deps, registry);
  return { routes, recordEvent };
}
