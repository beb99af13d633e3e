import { Hono } from 'hono';
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
import type { AppEnv } from '../../../app-env';
import type { OpenAPIRegistry } from '../../openapi';
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
export function adminRoutes(deps: Deps, registry: OpenAPIRegistry) {
  const app = new Hono<AppEnv>();
  mountMetricEvents(app, deps, registry);
  mountBulk(app, deps, registry, '/metrics', metricsResource);
  mountBulk(app, deps, registry, '/attributes', attributesResource);
  mountBulk(app, deps, registry, '/points', pointsSystemsResource);
  mountBulk(app, deps, registry, '/points/:systemId/triggers', triggersResource);
  mountBulk(app, deps, registry, '/points/:systemId/levels', levelsResource);
  mountBulk(app, deps, registry, '/points/:systemId/boosts', boostsResource);
  mountBulk(app, deps, registry, '/api-keys', apiKeysResource);
  mountBulk(app, deps, registry, '/achievements', achievementsResource);
  mountBulk(app, deps, registry, '/leaderboards', leaderboardsResource);
  mountBulk(app, deps, registry, '/webhooks', webhooksResource);
  mountWebhookDeliveries(app, deps, registry);
  mountStreakSettings(app, deps, registry);
  mountStreakPauses(app, deps, registry);
  mountStreakOps(app, deps, registry);
  mountRebuild(app, deps, registry);
  mountConfig(app, deps, registry);
  mountSimulations(app, deps, registry);
  // (helpers add one mount line per resource here)
  return app;
}
