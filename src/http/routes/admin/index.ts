import { Hono } from 'hono';
import { metricsResource } from '../../../admin/metrics';
import type { Deps } from '../../../deps';
import type { AppEnv } from '../../env';
import type { OpenAPIRegistry } from '../../openapi';
import { mountBulk } from './bulk';

/** Every /admin/v1 route. */
export function adminRoutes(deps: Deps, registry: OpenAPIRegistry) {
  const app = new Hono<AppEnv>();
  mountBulk(app, deps, registry, '/metrics', metricsResource);
  // (helpers add one mount line per resource here)
  return app;
}
