import { Hono, type Handler } from 'hono';
import type { Deps } from '../../../deps';
import type { AppEnv } from '../../env';
import type { OpenAPIRegistry } from '../../openapi';

/** Every /v1 route, plus the event handler for its legacy /api alias. */
export function v1Routes(deps: Deps, registry: OpenAPIRegistry): { routes: Hono<AppEnv>; recordEvent: Handler<AppEnv> } {
  const routes = new Hono<AppEnv>();
  void deps;
  void registry;
  const recordEvent: Handler<AppEnv> = (c) => c.json({ error: 'Not implemented' }, 501);
  routes.post('/metrics/:key/event', recordEvent);
  return { routes, recordEvent };
}
