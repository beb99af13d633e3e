import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/api-keys';
import { createApp } from '../../src/app';
import { apiKeys } from '../../src/db/schema';
import { closeDeps, createDeps, type Deps } from '../../src/deps';
import { createLogger } from '../../src/logger';
import { createTestServer, type TestServer } from '../helpers/server';

/** Polls until `check` holds; returns the time it took. Fails after `withinMs`. */
async function within(withinMs: number, check: () => boolean | Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > withinMs) throw new Error(`not seen within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return Date.now() - started;
}

// Two "processes": the test server's deps and a second set built from the same configuration
// (its own Redis connections, Postgres pool and configuration cache).
let t: TestServer;
let other: Deps;
let otherApp: ReturnType<typeof createApp>;
beforeAll(async () => {
  t = await createTestServer();
  other = await createDeps(t.deps.config, { logger: createLogger('silent') });
  otherApp = createApp(other);
});
afterAll(async () => {
  if (other) await closeDeps(other);
  await t?.close();
});

describe('configuration cache across processes', () => {
  it('shows a metric created through one process in the other within a second', async () => {
    expect(other.catalog.snapshot.metricsByKey.has('cross_process')).toBe(false);
    const res = await t.admin('POST', '/metrics', [{ name: 'Cross process', key: 'cross_process' }]);
    expect(res.status).toBe(201);
    // Read-your-writes in the writing process.
    expect(t.deps.catalog.snapshot.metricsByKey.get('cross_process')?.id).toBe(res.body.created[0].id);
    await within(1000, () => other.catalog.snapshot.metricsByKey.has('cross_process'));
    expect(other.catalog.snapshot.metricsByKey.get('cross_process')?.id).toBe(res.body.created[0].id);
  });

  it('rejects in the other process an API key revoked in one within a second', async () => {
    const k = generateApiKey();
    await t.deps.db
      .insert(apiKeys)
      .values({ name: 'short-lived', kind: 'admin', prefix: k.prefix, secretHash: k.secretHash });
    await t.deps.catalog.changed();
    const status = async () =>
      (await otherApp.request('/admin/v1/metrics', { headers: { 'X-API-KEY': k.key } })).status;
    await within(1000, async () => (await status()) === 200);

    await t.deps.db.update(apiKeys).set({ status: 'revoked' }).where(eq(apiKeys.prefix, k.prefix));
    await t.deps.catalog.changed();
    expect((await t.app.request('/admin/v1/metrics', { headers: { 'X-API-KEY': k.key } })).status).toBe(401);
    await within(1000, async () => (await status()) === 401);
    const res = await otherApp.request('/admin/v1/metrics', { headers: { 'X-API-KEY': k.key } });
    expect(await res.json()).toEqual({ error: 'This API key was revoked' });
  });
});
