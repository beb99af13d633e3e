import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey, parseApiKey } from '../../src/api-keys';
import { createApp } from '../../src/app';
import { apiKeys } from '../../src/db/schema';
import { closeDeps, createDeps, type Deps } from '../../src/deps';
import { createLogger } from '../../src/logger';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

/**
 * Key hygiene (issue: keys never appear in logs or error bodies; admin and application keys can
 * never be used in each other's place). The app under test logs at trace level into memory.
 */
const lines: string[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    lines.push(String(chunk));
    done();
  },
});

let t: TestServer;
let deps: Deps;
let app: ReturnType<typeof createApp>;
let revoked: string;
let unknown: string;
const bodies: string[] = [];

beforeAll(async () => {
  t = await createTestServer();
  deps = await createDeps({ ...t.deps.config, LOG_LEVEL: 'trace' }, { logger: createLogger('trace', sink) });
  app = createApp(deps);
  // A route that fails the way a library error carrying the request would (headers attached).
  app.get('/v1/__test_failure', (c) => {
    throw Object.assign(new Error('simulated defect'), { headers: c.req.header() });
  });
  await adminCreate(t, '/metrics', [{ key: 'm', name: 'M' }]);
  const r = generateApiKey();
  await t.deps.db.insert(apiKeys).values({
    name: 'revoked',
    kind: 'application',
    prefix: r.prefix,
    secretHash: r.secretHash,
    status: 'revoked',
  });
  await t.deps.catalog.changed();
  await deps.catalog.reload();
  revoked = r.key;
  unknown = generateApiKey().key;
});
afterAll(async () => {
  if (deps) await closeDeps(deps);
  await t?.close();
});

async function call(method: string, path: string, key: string | undefined, body?: string) {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  if (key !== undefined) headers['X-API-KEY'] = key;
  const res = await app.request(path, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  bodies.push(text);
  return { status: res.status, text };
}

/** The full key and its secret part; both must never be echoed or logged. */
const secretsOf = (key: string) => [key, parseApiKey(key)?.secret ?? key];

describe('key hygiene', () => {
  it('answers 401 to a key of the wrong kind on both APIs, and to revoked, unknown and malformed keys', async () => {
    const appOnAdmin = await call('GET', '/admin/v1/metrics', t.appKey);
    expect([appOnAdmin.status, JSON.parse(appOnAdmin.text)]).toEqual([
      401,
      { error: 'This is an application key; the admin API (/admin/v1) needs an admin key' },
    ]);
    const adminOnApp = await call('GET', '/v1/achievements', t.adminKey);
    expect([adminOnApp.status, JSON.parse(adminOnApp.text)]).toEqual([
      401,
      { error: 'This is an admin key; the application API (/v1, /api) needs an application key' },
    ]);
    const adminEvent = await call(
      'POST',
      '/v1/metrics/m/event',
      t.adminKey,
      JSON.stringify({ user: { id: 'admin-as-app' }, value: 1 }),
    );
    expect(adminEvent.status).toBe(401);
    expect(await t.deps.redis.exists(t.deps.keys.user('admin-as-app').hash)).toBe(0);
    const appCreatesKey = await call(
      'POST',
      '/admin/v1/api-keys',
      t.appKey,
      JSON.stringify([{ name: 'escalate', kind: 'admin' }]),
    );
    expect(appCreatesKey.status).toBe(401);
    for (const key of [
      revoked,
      unknown,
      `${t.appKey}x`,
      t.appKey.slice(0, -1),
      t.appKey.toUpperCase(),
      ' ',
      'abc',
    ]) {
      for (const path of ['/v1/achievements', '/admin/v1/metrics']) {
        const r = await call('GET', path, key);
        expect(r.status, `${path} with ${key.length}-char key`).toBe(401);
      }
    }
    expect((await call('GET', '/v1/achievements', undefined)).status).toBe(401);
    // The right keys work (the checks above are not vacuous).
    expect((await call('GET', '/v1/achievements', t.appKey)).status).toBe(200);
    expect((await call('GET', '/admin/v1/metrics', t.adminKey)).status).toBe(200);
  });

  it('never puts a key (or its secret) in a response body or a log line, whatever the request', async () => {
    const keys = [t.adminKey, t.appKey, revoked, unknown];
    const bad = [
      '{',
      '[]',
      '{"user": {"id": 1}, "value": "x"}',
      JSON.stringify({ user: { id: 'u' }, value: 1, attributes: { nope: 'x' } }),
      JSON.stringify({ user: { id: 'u', tz: 'Mars/Base' }, value: 1 }),
      'x'.repeat(2 * 1024 * 1024),
    ];
    for (const key of keys) {
      for (const body of bad) {
        await call('POST', '/v1/metrics/m/event', key, body);
        await call('POST', '/admin/v1/metrics', key, body);
      }
      await call('GET', '/v1/users/nobody', key);
      await call('GET', '/v1/nowhere', key);
      await call('GET', '/admin/v1/api-keys', key);
      await call('GET', '/v1/__test_failure', key);
      // A key placed where a value goes is the caller's own data; it must not come back in an error.
      await call('POST', '/admin/v1/metrics', key, JSON.stringify([{ key, name: 'x'.repeat(300) }]));
    }
    // The simulated defect (reached with the application key only) was logged with the request
    // headers redacted, and answered generically.
    const failures = lines.filter((l) => l.includes('unhandled error'));
    expect(failures.length).toBe(1);
    expect(failures[0]).toContain('[redacted]');
    expect(bodies).toContain('{"error":"Internal server error"}');
    expect(lines.length).toBeGreaterThan(0);

    for (const key of keys) {
      for (const s of secretsOf(key)) {
        for (const b of bodies)
          expect(b.includes(s), `response body contains a key: ${b.slice(0, 200)}`).toBe(false);
        for (const l of lines)
          expect(l.includes(s), `log line contains a key: ${l.slice(0, 200)}`).toBe(false);
      }
    }
  });

  it('shows a new key once, in its creation response, and never again', async () => {
    const created = await call(
      'POST',
      '/admin/v1/api-keys',
      t.adminKey,
      JSON.stringify([{ name: 'once', kind: 'application' }]),
    );
    expect(created.status).toBe(201);
    const { id, key } = JSON.parse(created.text).created[0] as { id: string; key: string };
    const [, secret] = secretsOf(key);
    const later = [
      await call('GET', '/admin/v1/api-keys?limit=100', t.adminKey),
      await call('GET', `/admin/v1/api-keys/${id}`, t.adminKey),
      await call('PATCH', '/admin/v1/api-keys', t.adminKey, JSON.stringify([{ id, name: 'renamed' }])),
      await call('GET', '/v1/achievements', key),
    ];
    expect(later.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    for (const r of later) expect(r.text.includes(secret!)).toBe(false);
    for (const l of lines) expect(l.includes(secret!)).toBe(false);
  });
});
