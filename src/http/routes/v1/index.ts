import type { Deps } from '../../../deps';
import { type RoutesApp, routesApp } from '../../openapi';
import { mountEvents } from './events';
import { mountLeaderboards } from './leaderboards';
import { mountAchievements } from './achievements';
import { mountMetrics } from './metrics';
import { mountPoints } from './points';
import { mountStreaks } from './streaks';
import { mountSummaries } from './summaries';
import { mountUsers } from './users';

/** Every /v1 route, and the legacy /api app (the event route alone, mounted at /api). */
export function v1Routes(deps: Deps): { routes: RoutesApp; legacy: RoutesApp } {
  const routes = routesApp();
  const legacy = routesApp();
  mountEvents(routes, legacy, deps);
  mountLeaderboards(routes, deps);
  mountUsers(routes, deps);
  mountAchievements(routes, deps);
  mountMetrics(routes, deps);
  mountStreaks(routes, deps);
  mountPoints(routes, deps);
  mountSummaries(routes, deps);
  return { routes, legacy };
}
