import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Hono } from 'hono';
import type { Deps } from '../../deps';
import type { AppEnv } from '../../app-env';

/** A readiness probe that cannot answer in this time counts as not ready (Postgres connects wait 30 s). */
const READY_TIMEOUT_MS = 2000;

/** The swagger-ui-dist files the reference page needs; nothing else in the package is served. */
const DOC_ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

// Relative URLs, so the page keeps working behind a proxy that mounts Laurel under a path prefix.
const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Laurel API reference</title>
  <link rel="stylesheet" href="docs/assets/swagger-ui.css">
  <link rel="icon" type="image/png" href="docs/assets/favicon-32x32.png" sizes="32x32">
  <link rel="icon" type="image/png" href="docs/assets/favicon-16x16.png" sizes="16x16">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="docs/assets/swagger-ui-bundle.js"></script>
  <script src="docs/assets/swagger-ui-standalone-preset.js"></script>
  <script>
    window.ui = SwaggerUIBundle({
      url: 'openapi.json',
      dom_id: '#swagger-ui',
      deepLinking: true,
      presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
      layout: 'StandaloneLayout',
    });
  </script>
</body>
</html>
`;

/** The dashboard's logo; browsers ask for /favicon.ico on every page, and accept an SVG there. */
const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32" viewBox="0 0 26 26">
<circle cx="13" cy="13" r="12" fill="#2f6f4f"/>
<path d="M8 17c2-6 6-9 10-9-1 4-4 8-10 9z" fill="#e6f2eb"/>
<path d="M8 17l5-5" stroke="#2f6f4f" stroke-width="1.4"/>
</svg>
`;

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, expired]).finally(() => clearTimeout(timer));
}

/**
 * Unauthenticated operability routes: liveness, readiness, the OpenAPI document and its rendered
 * reference page (served from node_modules, so it works without internet access).
 */
export function systemRoutes(deps: Deps, openApi: () => unknown) {
  const app = new Hono<AppEnv>();
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  // A person opening the server's address lands on the dashboard (which asks for a sign-in).
  app.get('/', (c) => c.redirect('/dashboard', 302));
  app.get('/favicon.ico', (c) =>
    c.body(FAVICON_SVG, 200, { 'Content-Type': 'image/svg+xml', 'Cache-Control': 'public, max-age=86400' }),
  );
  app.get('/readyz', async (c) => {
    try {
      await withTimeout(Promise.all([deps.redis.ping(), deps.sql`select 1`]), READY_TIMEOUT_MS);
      return c.json({ status: 'ok' });
    } catch (err) {
      deps.logger.warn({ err: (err as Error).message }, 'not ready');
      return c.json({ error: 'Service unavailable' }, 503);
    }
  });
  app.get('/openapi.json', (c) => c.json(openApi() as object));

  const assetDir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const assets = new Map<string, Promise<Buffer>>();
  app.get('/docs', (c) => c.html(DOCS_HTML));
  // The page's URLs are relative to /docs; a relative redirect keeps working under a path prefix.
  app.get('/docs/', (c) => c.redirect('../docs', 301));
  app.get('/docs/assets/:file', async (c) => {
    const file = c.req.param('file');
    const type = Object.hasOwn(DOC_ASSETS, file) ? DOC_ASSETS[file] : undefined;
    if (!type) return c.json({ error: 'Not found' }, 404);
    let body = assets.get(file);
    if (!body) {
      body = readFile(join(assetDir, file));
      assets.set(file, body);
      body.catch(() => assets.delete(file));
    }
    return c.body(new Uint8Array(await body), 200, {
      'Content-Type': type,
      'Cache-Control': 'public, max-age=3600',
    });
  });
  return app;
}
