import { Hono } from 'hono';
import type { Deps } from '../../deps';
import type { AppEnv } from '../env';

/** Unauthenticated operability routes: liveness, readiness, the OpenAPI document. */
export function systemRoutes(deps: Deps, openApi: () => unknown) {
  const app = new Hono<AppEnv>();
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    try {
      await Promise.all([deps.redis.ping(), deps.sql`select 1`]);
      return c.json({ status: 'ok' });
    } catch {
      return c.json({ error: 'Service unavailable' }, 503);
    }
  });
  app.get('/openapi.json', (c) => c.json(openApi() as object));
  return app;
}
