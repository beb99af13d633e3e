import { achievementsResource } from '../../../admin/achievements';
import { apiKeysResource } from '../../../admin/api-keys';
import { leaderboardsResource } from '../../../admin/leaderboards';
import { webhooksResource } from '../../../admin/webhooks';
import { attributesResource } from '../../../admin/attributes';
import { boostsResource } from '../../../admin/boosts';
import { levelsResource } from '../../../admin/levels';
import { metricsResource } from '../../../admin/metrics';
import { pointsSystemsResource } from '../../../admin/points-systems';
import { triggersResource } from '../../../admin/triggers';
import type { Deps } from '../../../deps';
import { type RoutesApp, routesApp } from '../../openapi';
import { mountBulk } from './bulk';
import { mountConfig } from './config';
import { mountMetricEvents } from './metric-events';
import { mountRebuild } from './rebuild';
import { mountSimulations } from './simulations';
import { mountStreakOps } from './streak-ops';
import { mountStreakPauses } from './streak-pauses';
import { mountStreakSettings } from './streak-settings';
import { mountWebhookDeliveries } from './webhook-deliveries';

/** Every /admin/v1 route. */
export function adminRoutes(deps: Deps): RoutesApp {
  const app = routesApp();
  mountMetricEvents(app, deps);
  mountBulk(app, deps, '/metrics', metricsResource);
  mountBulk(app, deps, '/attributes', attributesResource);
  mountBulk(app, deps, '/points', pointsSystemsResource);
  mountBulk(app, deps, '/points/:systemId/triggers', triggersResource);
  mountBulk(app, deps, '/points/:systemId/levels', levelsResource);
  mountBulk(app, deps, '/points/:systemId/boosts', boostsResource);
  mountBulk(app, deps, '/api-keys', apiKeysResource);
  mountBulk(app, deps, '/achievements', achievementsResource);
  mountBulk(app, deps, '/leaderboards', leaderboardsResource);
  mountBulk(app, deps, '/webhooks', webhooksResource);
  mountWebhookDeliveries(app, deps);
  mountStreakSettings(app, deps);
  mountStreakPauses(app, deps);
  mountStreakOps(app, deps);
  mountRebuild(app, deps);
  mountConfig(app, deps);
  mountSimulations(app, deps);
  // (helpers add one mount line per resource here)
  return app;
}
