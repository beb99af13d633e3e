import { dashboardRoutes } from './dashboard';
import { actorContext } from './config-as-code/audit';
import type { Deps } from './deps';
import { AppError, isInfrastructureError } from './errors';
import { apiGuard } from './http/middleware/guard';
import { rateLimiter } from './http/middleware/rate-limit';
import { requestId } from './http/middleware/request-id';
import { buildOpenApiDocument, routesApp } from './http/openapi';
import { httpMetrics } from './metrics/http';
import { countBackendError } from './metrics/hooks';
import { adminRoutes } from './http/routes/admin';
import { mountConfigSchema } from './http/routes/admin/config';
import { systemRoutes } from './http/routes/system';
import { v1Routes } from './http/routes/v1';

/** Builds the HTTP application: middleware, error handling and every route module. */
export function createApp(deps: Deps) {
  const app = routesApp();

  app.use('*', requestId);
  app.use('*', httpMetrics);

  app.onError((err, c) => {
    if (err instanceof AppError) {
      for (const [k, v] of Object.entries(err.headers ?? {})) c.header(k, v);
      return c.json({ error: err.message }, err.status);
    }
    if (isInfrastructureError(err)) {
      countBackendError('http', err);
      deps.logger.warn({ err: err.message, requestId: c.get('requestId') }, 'infrastructure unavailable');
      return c.json({ error: 'Service unavailable' }, 503);
    }
    deps.logger.error({ err, requestId: c.get('requestId'), path: c.req.path }, 'unhandled error');
    return c.json({ error: 'Internal server error' }, 500);
  });
  app.notFound((c) => c.json({ error: 'Not found' }, 404));

  app.route(
    '/',
    systemRoutes(deps, () => openApiDocument),
  );

  // Order of checks (application-api §5.3): 413, browser refusal, 401, 429, then routing.
  const limiter = rateLimiter(deps);
  const application = apiGuard(deps, { maxBody: deps.config.BODY_LIMIT_BYTES, kind: 'application', limiter });
  app.use('/v1/*', application);
  app.use('/api/*', application);
  // Public like /openapi.json: the configuration document's schema, for editors (no data in it).
  mountConfigSchema(app);
  app.use(
    '/admin/v1/*',
    apiGuard(deps, { maxBody: deps.config.ADMIN_BODY_LIMIT_BYTES, kind: 'admin', limiter }),
  );

  // The audit log reads which admin key made a change from the request context.
  app.use('/admin/v1/*', actorContext);
  app.use('/dashboard/*', actorContext);

  const v1 = v1Routes(deps);
  app.route('/v1', v1.routes);
  // The legacy path of the event endpoint: the same handler; nothing else exists under /api.
  app.route('/api', v1.legacy);
  app.route('/admin/v1', adminRoutes(deps));
  app.route('/dashboard', dashboardRoutes(deps));

  // Every documented route is mounted by now: the document is built once, from the routes themselves.
  const openApiDocument = buildOpenApiDocument(app);
  return app;
}
