import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

let t: TestServer;
beforeAll(async () => {
  t = await createTestServer();
  await adminCreate(t, '/metrics', [{ key: 'm', name: 'M' }]);
  const s = await t.admin('PATCH', '/streaks/settings', { freezesEnabled: true });
  expect(s.status).toBe(200);
});
afterAll(async () => t.close());

// Lone UTF-16 surrogates arrive only as JSON escapes; UTF-8 and Postgres cannot hold them.
describe('strings that are not valid Unicode', () => {
  it.each([
    ['an event user id', '/v1/metrics/m/event', '{"user":{"id":"\\ud800"},"value":1}', 'api'],
    [
      'an attribute key deep in a body',
      '/v1/metrics/m/event',
      '{"user":{"id":"ok"},"value":1,"attributes":{"\\udc00":"x"}}',
      'api',
    ],
    ['a streak freeze user id', '/streaks/freezes', '{"freezes":[{"userId":"\\ud800"}]}', 'admin'],
    ['an admin metric name', '/metrics', '[{"key":"k","name":"a\\udfffb"}]', 'admin'],
  ])('refuses %s with 422 and writes nothing', async (_what, path, body, api) => {
    const before = await t.redisKeys();
    const res = api === 'api' ? await t.api('POST', path, body) : await t.admin('POST', path, body);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error: 'Strings must be valid Unicode (no lone surrogates)' });
    expect(await t.redisKeys()).toEqual(before);
  });

  it('accepts escaped surrogate pairs (a valid emoji)', async () => {
    const res = await t.api('POST', '/v1/metrics/m/event', '{"user":{"id":"\\ud83d\\ude00"},"value":1}');
    expect(res.status).toBe(201);
  });
});
