import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApp } from '../../src/app';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// The routes are their own document (@hono/zod-openapi createRoute): these tests hold the document to
// the routes actually served, and the routes to the behaviour they had before (request schemas in the
// document do not validate anything).

let t: TestServer;
let doc: any;
beforeAll(async () => {
  t = await createTestServer();
  await adminCreate(t, '/metrics', [{ key: 'm', name: 'M' }]);
  const res = await t.app.request('/openapi.json');
  expect(res.status).toBe(200);
  doc = await res.json();
});
afterAll(async () => t?.close());

/** Hono path → OpenAPI path: `:id` becomes `{id}`. */
const toDocPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

/** `METHOD /path` of every route the app serves under an API prefix (middleware excluded). */
function servedApiOperations(): string[] {
  return t.app.routes
    .filter((r) => r.method !== 'ALL' && /^\/(v1|api|admin\/v1)\//.test(r.path))
    .map((r) => `${r.method} ${toDocPath(r.path)}`);
}

function documentedOperations(): string[] {
  return Object.entries<Record<string, unknown>>(doc.paths).flatMap(([path, ops]) =>
    Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
  );
}

describe('/openapi.json is built from the routes', () => {
  it('documents every route served under /v1, /api and /admin/v1', () => {
    const served = servedApiOperations();
    // Sanity: the filter sees the API (all three prefixes), so an empty "missing" list means something.
    expect(served).toEqual(
      expect.arrayContaining([
        'POST /v1/metrics/{key}/event',
        'POST /api/metrics/{key}/event',
        'GET /v1/leaderboards/{key}',
        'GET /admin/v1/points/{systemId}/levels/{id}',
        'GET /admin/v1/config/schema.json',
      ]),
    );
    const documented = new Set(documentedOperations());
    expect(
      served.filter((op) => !documented.has(op)),
      'served routes missing from /openapi.json',
    ).toEqual([]);
  });

  it('documents nothing that is not served, each operation once', () => {
    const served = new Set(servedApiOperations());
    const documented = documentedOperations();
    expect(
      documented.filter((op) => !served.has(op)),
      'documented operations without a route',
    ).toEqual([]);
    expect(new Set(documented).size).toBe(documented.length);
    expect(documented.length).toBe(served.size);
  });

  it('keeps the request and response schemas of the route definitions', () => {
    const event = doc.paths['/v1/metrics/{key}/event'].post;
    expect(event.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/MetricsEventRequest',
    });
    expect(event.parameters.map((p: any) => `${p.in} ${p.name}`)).toEqual([
      'path key',
      'header Idempotency-Key',
    ]);
    expect(Object.keys(event.responses)).toEqual([
      '201',
      '202',
      '400',
      '401',
      '404',
      '413',
      '422',
      '429',
      '503',
    ]);
    expect(doc.paths['/api/metrics/{key}/event'].post).toEqual(event);
    const board = doc.paths['/v1/leaderboards/{key}'].get;
    expect(board.parameters.map((p: any) => `${p.in} ${p.name}`)).toEqual([
      'path key',
      'query offset',
      'query limit',
      'query run',
      'query userId',
      'query userAttributes',
    ]);
    // A generic admin resource: list, get, create, update and delete, nested under its parent.
    expect(Object.keys(doc.paths['/admin/v1/points/{systemId}/levels']).sort()).toEqual([
      'delete',
      'get',
      'patch',
      'post',
    ]);
    expect(doc.paths['/admin/v1/config/schema.json'].get.security).toEqual([]);
    expect(doc.components.securitySchemes.ApiKey).toEqual({
      type: 'apiKey',
      in: 'header',
      name: 'X-API-KEY',
    });
    expect(doc.components.schemas.ErrorBody).toEqual({
      type: 'object',
      properties: { error: { type: 'string' } },
      required: ['error'],
    });
  });

  it('is built once: every request serves the same document object', async () => {
    const app = createApp(t.deps);
    // c.json serialises the object it is given: capture that object on each request.
    const stringify = vi.spyOn(JSON, 'stringify');
    try {
      for (let i = 0; i < 2; i++) expect((await app.request('/openapi.json')).status).toBe(200);
      const served = stringify.mock.calls
        .map(([value]) => value)
        .filter((v) => typeof v === 'object' && v !== null && 'openapi' in v && 'paths' in v);
      expect(served).toHaveLength(2);
      expect(served[1]).toBe(served[0]);
    } finally {
      stringify.mockRestore();
    }
  });

  it('uses one copy of @asteasolutions/zod-to-openapi, so the .openapi() extension is one library', () => {
    const ours = createRequire(import.meta.url).resolve('@asteasolutions/zod-to-openapi');
    const honos = createRequire(createRequire(import.meta.url).resolve('@hono/zod-openapi')).resolve(
      '@asteasolutions/zod-to-openapi',
    );
    expect(honos).toBe(ours);
  });
});

describe('request schemas document, handlers validate', () => {
  it('answers a path id the document types as a uuid with the handler 404, not a validation 400', async () => {
    const res = await t.admin('GET', '/metrics/not-a-uuid');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.stringContaining('not found') });
  });

  it('reads query numbers as the handler does (the document says integer; a validator would refuse a string)', async () => {
    const ok = await t.admin('GET', '/metrics?limit=5&skip=0');
    expect(ok.status).toBe(200);
    const bad = await t.admin('GET', '/metrics?limit=abc');
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({ error: 'limit must be an integer' });
  });

  it('checks an event body with the contract messages, whatever its content type', async () => {
    const missing = await t.api('POST', '/v1/metrics/m/event', { user: { id: 'u1' } });
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ error: 'value is required' });
    // No 415 from a media-type gate: the body is read as JSON like before.
    const res = await t.app.request('/v1/metrics/m/event', {
      method: 'POST',
      headers: { 'X-API-KEY': t.appKey, 'Content-Type': 'text/plain' },
      body: JSON.stringify({ user: { id: 'u1' }, value: 1 }),
    });
    expect(res.status).toBe(201);
    const legacy = await t.app.request('/api/metrics/m/event', {
      method: 'POST',
      headers: { 'X-API-KEY': t.appKey, 'Content-Type': 'application/json' },
      body: JSON.stringify({ user: { id: 'u1' }, value: 2 }),
    });
    expect(legacy.status).toBe(201);
    expect(((await legacy.json()) as any).total).toBe(3);
  });
});
