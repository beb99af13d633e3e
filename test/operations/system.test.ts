import { OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { inspectRoutes } from 'hono/dev';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApp } from '../../src/app';
import { createRedis } from '../../src/redis/client';
import { createTestServer, type TestServer } from '../helpers/server';

let t: TestServer;
beforeAll(async () => {
  t = await createTestServer();
});
afterAll(async () => {
  await t?.close();
});

/** Hono path → OpenAPI path: `:id` and `:id{regex}` become `{id}`. */
const toDocPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?\??/g, '{$1}');

describe('operability routes', () => {
  it('answers /healthz 200 {"status":"ok"} without a key', async () => {
    const res = await t.app.request('/healthz');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('answers /readyz 200 when Redis and Postgres are reachable', async () => {
    const res = await t.app.request('/readyz');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('answers /readyz 503 {"error": ...} when Redis is unreachable', async () => {
    // Same Postgres, a Redis client pointed at a closed port; the shared Redis is left alone.
    const deadRedis = createRedis({ url: 'redis://127.0.0.1:1' });
    deadRedis.on('error', () => {});
    try {
      const app = createApp({ ...t.deps, redis: deadRedis });
      const started = Date.now();
      const res = await app.request('/readyz');
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ error: expect.any(String) });
      expect(res.headers.get('x-request-id')).toBeTruthy();
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      deadRedis.disconnect();
    }
  });

  it('answers /readyz 503 when Postgres is unreachable', async () => {
    const deadSql = postgres('postgres://postgres@127.0.0.1:1/none', { max: 1, connect_timeout: 1 });
    try {
      const res = await createApp({ ...t.deps, sql: deadSql }).request('/readyz');
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ error: expect.any(String) });
    } finally {
      await deadSql.end({ timeout: 0 });
    }
  });

  it('answers an unknown route 404 {"error":"Not found"}', async () => {
    const res = await t.app.request('/no/such/route');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'Not found' });
  });

  it('puts X-Request-Id on every response and echoes a sane one from the caller', async () => {
    const paths = [
      '/healthz',
      '/readyz',
      '/openapi.json',
      '/docs',
      '/docs/assets/swagger-ui.css',
      '/nope',
      '/admin/v1/metrics',
    ];
    for (const path of paths) {
      const res = await t.app.request(path);
      expect(res.headers.get('x-request-id'), path).toMatch(/^[0-9a-f-]{36}$/);
    }
    const echoed = await t.app.request('/healthz', { headers: { 'X-Request-Id': 'caller-id.42' } });
    expect(echoed.headers.get('x-request-id')).toBe('caller-id.42');
  });

  it('serves the operability routes over a real socket', async () => {
    const origin = await t.listen();
    const res = await fetch(`${origin}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect(await res.json()).toEqual({ status: 'ok' });
  });
});

describe('OpenAPI document', () => {
  let doc: any;
  beforeAll(async () => {
    const res = await t.app.request('/openapi.json');
    expect(res.status).toBe(200);
    doc = await res.json();
  });

  it('is OpenAPI 3.1 with the admin metric paths', () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.info.title).toBe('Laurel');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/admin/v1/metrics', '/admin/v1/metrics/{id}']),
    );
  });

  it('documents every route mounted under /admin/v1', () => {
    const served = inspectRoutes(t.app).filter((r) => !r.isMiddleware && r.path.startsWith('/admin/v1/'));
    expect(served.length).toBeGreaterThan(0);
    const missing = served
      .map((r) => `${r.method} ${toDocPath(r.path)}`)
      .filter((op) => {
        const [method, path] = op.split(' ') as [string, string];
        return !doc.paths[path]?.[method.toLowerCase()];
      });
    expect(missing, 'admin routes missing from /openapi.json').toEqual([]);
  });

  it('documents only operations that are served', () => {
    const served = new Set(
      inspectRoutes(t.app)
        .filter((r) => !r.isMiddleware)
        .map((r) => `${r.method} ${toDocPath(r.path)}`),
    );
    const phantom: string[] = [];
    for (const [path, ops] of Object.entries<Record<string, unknown>>(doc.paths)) {
      for (const method of Object.keys(ops)) {
        if (['get', 'put', 'post', 'delete', 'patch', 'options', 'head'].includes(method)) {
          if (!served.has(`${method.toUpperCase()} ${path}`)) phantom.push(`${method.toUpperCase()} ${path}`);
        }
      }
    }
    expect(phantom, 'documented operations without a route').toEqual([]);
  });

  it('is built once, not per request', async () => {
    // Counts document generations: one for a new app (eager or on first use), none per request after.
    const generate = vi.spyOn(OpenApiGeneratorV31.prototype, 'generateDocument');
    try {
      const app = createApp(t.deps);
      for (let i = 0; i < 3; i++) {
        const res = await app.request('/openapi.json');
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual(doc);
      }
      expect(generate).toHaveBeenCalledTimes(1);
    } finally {
      generate.mockRestore();
    }
  });
});

describe('/docs reference page', () => {
  it('returns HTML that loads the document and swagger-ui assets served locally', async () => {
    const res = await t.app.request('/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toContain('openapi.json');
    expect(html).not.toMatch(/https?:\/\//);
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(refs).toEqual(
      expect.arrayContaining(['docs/assets/swagger-ui.css', 'docs/assets/swagger-ui-bundle.js']),
    );
    for (const ref of refs) {
      const asset = await t.app.request(new URL(ref, 'http://x/docs').pathname);
      expect(asset.status, ref).toBe(200);
      expect((await asset.arrayBuffer()).byteLength, ref).toBeGreaterThan(0);
    }
  });

  it('serves the bundle as JavaScript and the stylesheet as CSS', async () => {
    const js = await t.app.request('/docs/assets/swagger-ui-bundle.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    expect(await js.text()).toContain('SwaggerUIBundle');
    const css = await t.app.request('/docs/assets/swagger-ui.css');
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
  });

  it('answers 404 for files outside the asset list', async () => {
    for (const path of [
      '/docs/assets/package.json',
      '/docs/assets/..%2Fpackage.json',
      '/docs/assets/index.html',
    ]) {
      const res = await t.app.request(path);
      expect(res.status, path).toBe(404);
      expect(await res.json()).toEqual({ error: 'Not found' });
    }
  });
});
