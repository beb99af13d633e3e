import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { spyOwnCalls } from '../helpers/spy';

let t: TestServer;
beforeAll(async () => {
  t = await createTestServer({ env: { RATE_LIMIT_PER_SECOND: '5' } });
  await adminCreate(t, '/metrics', [{ key: 'm', name: 'M' }]);
});
afterAll(async () => t.close());

/** Counts the rate-limit script calls the server makes. */
function spyRateLimit(server: TestServer): () => number {
  const spy = spyOwnCalls(server.deps.redis, 'rateLimit');
  return () => spy.calls().length;
}

const event = (user: string) => t.api('POST', '/v1/metrics/m/event', { user: { id: user }, value: 1 });

describe('rate limits', () => {
  it('allows a burst of twice the rate, then answers 429 with Retry-After and commits nothing', async () => {
    t.clock.advance(10_000); // a fresh, full bucket
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await event(`rl-${i}`)).status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    const limited = await event('rl-over');
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ error: 'Rate limit exceeded' });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await t.deps.redis.exists(t.deps.keys.user('rl-over').hash)).toBe(0);
    expect(await t.deps.redis.exists(t.deps.keys.user('rl-11').hash)).toBe(0);
  });

  it('refills at the configured rate', async () => {
    t.clock.advance(10_000);
    for (let i = 0; i < 10; i++) await event('refill');
    expect((await event('refill')).status).toBe(429);
    t.clock.advance(400); // 5/s: two tokens
    expect((await event('refill')).status).toBe(201);
    expect((await event('refill')).status).toBe(201);
    expect((await event('refill')).status).toBe(429);
  });

  it('limits per key: another key has its own bucket, and a per-key limit overrides the default', async () => {
    t.clock.advance(10_000);
    const res = await t.admin('POST', '/api-keys', [
      { name: 'fast', kind: 'application', rateLimitPerSecond: 100 },
    ]);
    expect(res.status).toBe(201);
    const fastKey = res.body.created[0].key as string;
    for (let i = 0; i < 10; i++) await event('bucket');
    expect((await event('bucket')).status).toBe(429);
    let ok = 0;
    for (let i = 0; i < 50; i++) {
      const r = await t.app.request('/v1/metrics/m/event', {
        method: 'POST',
        headers: { 'X-API-KEY': fastKey, 'Content-Type': 'application/json' },
        body: JSON.stringify({ user: { id: 'fast' }, value: 1 }),
      });
      if (r.status === 201) ok++;
    }
    expect(ok).toBe(50);
  });

  it('leases once for a burst of parallel requests: the bucket pays for what was served, not per request', async () => {
    // 100,000/s leases 50 tokens at a time; the test clock stands still, so nothing refills.
    const t2 = await createTestServer({
      env: { RATE_LIMIT_PER_SECOND: '100000', RATE_LIMIT_BURST_FACTOR: '1' },
    });
    try {
      await adminCreate(t2, '/metrics', [{ key: 'm', name: 'M' }]);
      const calls = spyRateLimit(t2);
      const statuses = await Promise.all(
        Array.from({ length: 300 }, (_, i) =>
          t2
            .api('POST', '/v1/metrics/m/event', { user: { id: `burst-${i % 7}` }, value: 1 })
            .then((r) => r.status),
        ),
      );
      expect(statuses.every((s) => s === 201)).toBe(true);
      // 300 requests need 6 leases of 50; requests that arrive while a lease is in flight wait for it.
      expect(calls()).toBeLessThanOrEqual(8);
      const appRow = t2.deps.catalog.snapshot.apiKeysByPrefix.get(t2.appKey.split('.')[0]!)!;
      const bucket = await t2.deps.redis.hget(t2.deps.keys.rateLimit(appRow.id), 'tokens');
      expect(100_000 - Number(bucket)).toBeLessThanOrEqual(300 + 2 * 50);
    } finally {
      await t2.close();
    }
  });

  it('serves the waiting requests from a lease whose round trip took longer than a lease lives', async () => {
    const t2 = await createTestServer({ env: { RATE_LIMIT_PER_SECOND: '100000' } });
    try {
      await adminCreate(t2, '/metrics', [{ key: 'm', name: 'M' }]);
      const redis = t2.deps.redis;
      const real = redis.rateLimit.bind(redis);
      // Each lease answers 300 ms later than it was asked for (a lease lives 250 ms).
      const slow = vi
        .spyOn(redis, 'rateLimit')
        .mockImplementation(async (...args: Parameters<typeof real>) => {
          const reply = await real(...args);
          t2.clock.advance(300);
          return reply;
        });
      const served = Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          t2
            .api('POST', '/v1/metrics/m/event', { user: { id: `slow-${i}` }, value: 1 })
            .then((r) => r.status),
        ),
      );
      const timeout = new Promise<string>((r) => setTimeout(() => r('still waiting after 5 s'), 5000));
      expect(await Promise.race([served, timeout])).toEqual(Array(20).fill(201));
      // One lease of 50 tokens serves all 20.
      expect(slow.mock.calls.length).toBe(1);
    } finally {
      vi.restoreAllMocks();
      await t2.close();
    }
  });

  it('refuses locally until the next token is due once the bucket is empty (no call to Redis)', async () => {
    t.clock.advance(10_000);
    for (let i = 0; i < 10; i++) expect((await event('local')).status).toBe(201);
    const calls = spyRateLimit(t);
    try {
      expect((await event('local')).status).toBe(429); // asks Redis: empty
      const again = await Promise.all(Array.from({ length: 20 }, () => event('local')));
      expect(again.map((r) => r.status)).toEqual(Array(20).fill(429));
      expect(Number(again[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(calls()).toBe(1);
      t.clock.advance(200); // 5/s: the next token is due
      expect((await event('local')).status).toBe(201);
      expect(calls()).toBe(2);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('does not limit /healthz and /readyz', async () => {
    for (let i = 0; i < 30; i++) expect((await t.app.request('/healthz')).status).toBe(200);
  });
});

describe('browser protection', () => {
  it.each([
    [{ Origin: 'https://evil.example' }],
    [{ 'Sec-Fetch-Site': 'cross-site', 'Sec-Fetch-Mode': 'cors' }],
  ])('refuses application and admin requests carrying %j with 403 and no CORS headers', async (headers) => {
    t.clock.advance(10_000);
    const r = await t.api('POST', '/v1/metrics/m/event', { user: { id: 'browser' }, value: 1 }, headers);
    expect(r.status).toBe(403);
    expect(r.body.error).toMatch(/server-side/);
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
    expect(await t.deps.redis.exists(t.deps.keys.user('browser').hash)).toBe(0);
    const a = await t.app.request('/admin/v1/metrics', {
      headers: { 'X-API-KEY': t.adminKey, ...headers },
    });
    expect(a.status).toBe(403);
  });

  it("lets Node's fetch through although it sends Sec-Fetch-Mode: cors (the Trophy SDK uses it)", async () => {
    const origin = await t.listen();
    t.clock.advance(10_000);
    const res = await fetch(`${origin}/v1/metrics/m/event`, {
      method: 'POST',
      headers: { 'X-API-KEY': t.appKey, 'Content-Type': 'application/json' },
      body: JSON.stringify({ user: { id: 'node-fetch' }, value: 1 }),
    });
    expect(res.status).toBe(201);
  });

  it('lets an allowed origin through', async () => {
    const t2 = await createTestServer({ env: { ALLOWED_ORIGINS: 'https://app.example' } });
    try {
      const r = await t2.app.request('/admin/v1/metrics', {
        headers: { 'X-API-KEY': t2.adminKey, Origin: 'https://app.example' },
      });
      expect(r.status).toBe(200);
      const bad = await t2.app.request('/admin/v1/metrics', {
        headers: { 'X-API-KEY': t2.adminKey, Origin: 'https://other.example' },
      });
      expect(bad.status).toBe(403);
    } finally {
      await t2.close();
    }
  });
});
