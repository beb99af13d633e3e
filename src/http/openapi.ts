import { createRoute, OpenAPIHono, type RouteConfig } from '@hono/zod-openapi';
import type { Handler } from 'hono';
import type { AppEnv } from '../app-env';
import { z } from '../zod';

export { createRoute } from '@hono/zod-openapi';

/** A Hono app whose routes are their own OpenAPI document; `app.route()` merges a sub-app's routes. */
export type RoutesApp = OpenAPIHono<AppEnv>;

export const routesApp = (): RoutesApp => new OpenAPIHono<AppEnv>();

export const ErrorBodySchema = z.object({ error: z.string() }).openapi('ErrorBody');

/** A JSON request body or response content of `schema`. */
export const jsonContent = <S extends z.ZodType>(schema: S) => ({
  content: { 'application/json': { schema } },
});

/** A documented response: its description, and the JSON `schema` it carries. */
export const jsonResponse = <S extends z.ZodType>(description: string, schema: S) => ({
  description,
  ...jsonContent(schema),
});

/** An error response of a documented route: its description, and the ErrorBody it carries. */
export const errorResponse = (description: string) => jsonResponse(description, ErrorBodySchema);

/** The error response of the application API's routes (`/v1`): one description for every status. */
export const appError = errorResponse('Error');

/** The 401 of every admin route. */
const adminUnauthorized = errorResponse('Missing or invalid admin key');

/** What a route definition says besides its method, path and tags. */
type RouteDoc = Omit<RouteConfig, 'method' | 'path' | 'tags'>;

/**
 * The route definitions of one tag: `route(method, path, { summary, request, responses })` is
 * `createRoute` with the tag, so a definition states only what is its own.
 */
export const routesTagged =
  (tags: string[]) =>
  <const M extends RouteConfig['method'], const P extends string, const D extends RouteDoc>(
    method: M,
    path: P,
    doc: D,
  ) =>
    createRoute({ method, path, tags, ...doc });

/**
 * The route definitions of one admin tag: like `routesTagged`, and every one documents the 401 that
 * the admin key check answers before any handler.
 */
export const adminRoutes = (tags: string[]) => {
  const route = routesTagged(tags);
  return <const M extends RouteConfig['method'], const P extends string, const D extends RouteDoc>(
    method: M,
    path: P,
    doc: D,
  ) => route(method, path, { ...doc, responses: { ...doc.responses, 401: adminUnauthorized } });
};

/** `/users/{id}` → `/users/:id`: the Hono path of an OpenAPI path, for the handler's `c.req.param` types. */
type HonoPath<P extends string> = P extends `${infer Start}/{${infer Param}}${infer Rest}`
  ? `${Start}/:${Param}${HonoPath<Rest>}`
  : P;

/**
 * Serves `handler` at the method and path of `route` (made with `createRoute`), and documents the
 * operation from that same definition.
 *
 * The request schemas of `route` are documentation only: each handler validates its own input, with
 * the contract's messages and order of checks (application-api §5.3) and a body parsed once on the
 * hot paths. @hono/zod-openapi would otherwise mount its validators for them, answering a ZodError
 * with 400 (or 415 for another media type) before the handler, so the route is served without them
 * (`hide` plus its request left out) and registered whole, request included.
 */
export function mount<const R extends RouteConfig>(
  app: RoutesApp,
  route: R,
  handler: Handler<AppEnv, HonoPath<R['path']>>,
): void {
  app.openapi({ method: route.method, path: route.path, responses: {}, hide: true }, handler);
  app.openAPIRegistry.registerPath(route);
}

/** Builds the OpenAPI 3.1 document of every route of `app` once (never per request). */
export function buildOpenApiDocument(app: RoutesApp): object {
  app.openAPIRegistry.registerComponent('securitySchemes', 'ApiKey', {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-KEY',
  });
  return app.getOpenAPI31Document({
    openapi: '3.1.0',
    info: {
      title: 'Laurel',
      version: '1',
      description:
        'Self-hosted gamification service. Application API under /v1 (Trophy SDK compatible), admin API under /admin/v1.',
    },
    security: [{ ApiKey: [] }],
  });
}
