import { Hono } from 'hono';
import { attributesResource } from '../../../admin/attributes';
import { boostsResource } from '../../../admin/boosts';
import { levelsResource } from '../../../admin/levels';
import { metricsResource } from '../../../admin/metrics';
import { pointsSystemsResource } from '../../../admin/points-systems';
import { triggersResource } from '../../../admin/triggers';
import type { Deps } from '../../../deps';
import type { AppEnv } from '../../env';
import type { OpenAPIRegistry } from '../../openapi';
import { mountBulk } from './bulk';

/** Every /admin/v1 route. */
export function adminRoutes(deps: Deps, registry: OpenAPIRegistry) {
  const app = new Hono<AppEnv>();
  mountBulk(app, deps, registry, '/metrics', metricsResource);
  mountBulk(app, deps, registry, '/attributes', attributesResource);
  mountBulk(app, deps, registry, '/points', pointsSystemsResource);
  mountBulk(app, deps, registry, '/points/:systemId/triggers', triggersResource);
  mountBulk(app, deps, registry, '/points/:systemId/levels', levelsResource);
  mountBulk(app, deps, registry, '/points/:systemId/boosts', boostsResource);
  // (helpers add one mount line per resource here)
  return app;
}
