import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisContents } from '../helpers/redis-state';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// POST /v1/metrics/{key}/event: every rejected request answers {"error": string} with the status of
// application-api §5.2 / §5.3 and changes nothing in Redis.

let t: TestServer;
const USER = 'validation-user';

/** Every key under the server's prefix with its full contents. */
async function dumpRedis(): Promise<Record<string, unknown>> {
  // Reply markers of committed ops (`:op:<id>`) expire 10 s after their op by Redis's clock: not state.
  const keys = (await t.redisKeys()).filter((key) => !key.includes(':op:'));
  return redisContents(t.deps.redis, keys);
}

beforeAll(async () => {
  t = await createTestServer();
  await adminCreate(t, '/metrics', [
    { key: 'steps', name: 'Steps' },
    { key: 'other', name: 'Other' },
  ]);
  await adminCreate(t, '/attributes', [
    { key: 'plan', name: 'Plan', type: 'user' },
    { key: 'source', name: 'Source', type: 'event' },
  ]);
  // Some existing state, so that "nothing changed" covers a user, totals and the outbox.
  const first = await t.api(
    'POST',
    '/v1/metrics/steps/event',
    { user: { id: USER, email: 'a@x.test' }, value: 3 },
    { 'Idempotency-Key': 'seed' },
  );
  expect(first.status).toBe(201);
});
afterAll(async () => t.close());

const okUser = { id: USER };
const long = (n: number) => 'x'.repeat(n);

type Case = [
  label: string,
  body: unknown,
  status: number,
  message?: string,
  headers?: Record<string, string>,
  path?: string,
];

const cases: Case[] = [
  // 400: structure
  ['malformed JSON', '{"user": {"id": "a"}, "value": ', 400],
  ['an empty body', '', 400],
  ['a body that is an array', [{ user: okUser, value: 1 }], 400],
  ['a body that is a string', '"hello"', 400],
  ['a missing user', { value: 1 }, 400],
  ['user null', { user: null, value: 1 }, 400],
  ['a missing user.id', { user: { email: 'a@x.test' }, value: 1 }, 400],
  ['user.id as a number', { user: { id: 42 }, value: 1 }, 400],
  ['a missing value', { user: okUser }, 400],
  ['value null (NaN from the SDK)', { user: okUser, value: null }, 400],
  ['value "5"', { user: okUser, value: '5' }, 400],
  ['value "NaN"', { user: okUser, value: 'NaN' }, 400],
  ['value true', { user: okUser, value: true }, 400],
  [
    'an event attribute value that is not a string',
    { user: okUser, value: 1, attributes: { source: 5 } },
    400,
  ],
  [
    'a user attribute value that is not a string',
    { user: { id: USER, attributes: { plan: true } }, value: 1 },
    400,
  ],
  ['attributes as an array', { user: okUser, value: 1, attributes: ['source'] }, 400],
  ['deviceTokens not an array of strings', { user: { id: USER, deviceTokens: [1] }, value: 1 }, 400],
  // The message tells a field of the wrong type from a missing one.
  ['value "NaN", named as a type error', { user: okUser, value: 'NaN' }, 400, 'value must be a number'],
  ['user.id 42, named as a type error', { user: { id: 42 }, value: 1 }, 400, 'user.id must be a string'],
  ['a missing value, named as missing', { user: okUser }, 400, 'value is required'],
  // 400 wins over 422 (application-api §5.3)
  ['an empty user.id together with value "5"', { user: { id: '' }, value: '5' }, 400],
  ['a bad tz together with a missing value', { user: { id: USER, tz: 'Mars/Base' } }, 400],
  // 422: input domain
  ['value 1e400', `{"user": {"id": "${USER}"}, "value": 1e400}`, 422],
  ['value -1e400', `{"user": {"id": "${USER}"}, "value": -1e400}`, 422],
  ['a value beyond the total range', { user: okUser, value: 1e12 }, 422],
  ['an empty user.id', { user: { id: '' }, value: 1 }, 422],
  ['a user.id of 256 characters', { user: { id: long(256) }, value: 1 }, 422],
  ['an unknown time zone', { user: { id: USER, tz: 'Mars/Base' }, value: 1 }, 422],
  ['an offset instead of a time zone', { user: { id: USER, tz: '+05:00' }, value: 1 }, 422],
  ['an e-mail without @', { user: { id: USER, email: 'nope' }, value: 1 }, 422],
  ['an empty name', { user: { id: USER, name: '' }, value: 1 }, 422],
  [
    'an event attribute value of 256 characters',
    { user: okUser, value: 1, attributes: { source: long(256) } },
    422,
  ],
  [
    'an Idempotency-Key of 256 characters',
    { user: okUser, value: 1 },
    422,
    undefined,
    { 'Idempotency-Key': long(256) },
  ],
  ['a blank Idempotency-Key', { user: okUser, value: 1 }, 422, undefined, { 'Idempotency-Key': '   ' }],
  // 422: configuration checks
  [
    'an unknown user attribute key',
    { user: { id: USER, attributes: { device: 'ios' } }, value: 1 },
    422,
    'Invalid attribute keys: device.',
  ],
  [
    'unknown user attribute keys (order given)',
    { user: { id: USER, attributes: { zeta: 'a', plan: 'pro', alpha: 'b' } }, value: 1 },
    422,
    'Invalid attribute keys: zeta, alpha.',
  ],
  [
    'unknown event attribute keys (order given)',
    { user: okUser, value: 1, attributes: { zeta: 'a', source: 'web', alpha: 'b' } },
    422,
    'Invalid attribute keys: zeta, alpha.',
  ],
  [
    'an event attribute key used as a user attribute',
    { user: { id: USER, attributes: { source: 'web' } }, value: 1 },
    422,
    'Invalid attribute keys: source.',
  ],
  [
    'a user attribute key used as an event attribute',
    { user: okUser, value: 1, attributes: { plan: 'pro' } },
    422,
    'Invalid attribute keys: plan.',
  ],
  // 404
  [
    'an unknown metric',
    { user: okUser, value: 1 },
    404,
    'Metric not found',
    undefined,
    '/v1/metrics/nope/event',
  ],
  // precedence between 404 and 422
  [
    'a bad tz on an unknown metric (422 first)',
    { user: { id: USER, tz: 'Mars/Base' }, value: 1 },
    422,
    undefined,
    undefined,
    '/v1/metrics/nope/event',
  ],
  [
    'a bad Idempotency-Key on an unknown metric (422 first)',
    { user: okUser, value: 1 },
    422,
    undefined,
    { 'Idempotency-Key': long(256) },
    '/v1/metrics/nope/event',
  ],
  [
    'an unknown attribute on an unknown metric (404 first)',
    { user: { id: USER, attributes: { device: 'ios' } }, value: 1 },
    404,
    'Metric not found',
    undefined,
    '/v1/metrics/nope/event',
  ],
  // 401
  ['a missing X-API-KEY', { user: okUser, value: 1 }, 401, undefined, { 'X-API-KEY': '' }],
  ['a malformed X-API-KEY', { user: okUser, value: 1 }, 401, undefined, { 'X-API-KEY': 'garbage' }],
  [
    'an unknown X-API-KEY',
    { user: okUser, value: 1 },
    401,
    undefined,
    { 'X-API-KEY': `zzzzzzzz.${long(43)}` },
  ],
  ['a wrong secret', { user: okUser, value: 1 }, 401, undefined, { 'X-API-KEY': 'WRONG_SECRET' }],
  ['the admin key', { user: okUser, value: 1 }, 401, undefined, { 'X-API-KEY': 'ADMIN' }],
  // 401 before 400
  ['malformed JSON with a bad key', '{', 401, undefined, { 'X-API-KEY': 'garbage' }],
  // 404 for unmatched routes
  ['an unmatched path', { user: okUser, value: 1 }, 404, 'Not found', undefined, '/v1/metrics/steps/events'],
];

function resolveHeaders(h: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!h) return h;
  const out = { ...h };
  if (out['X-API-KEY'] === 'ADMIN') out['X-API-KEY'] = t.adminKey;
  if (out['X-API-KEY'] === 'WRONG_SECRET') out['X-API-KEY'] = `${t.appKey.split('.')[0]}.${long(43)}`;
  return out;
}

describe('event validation', () => {
  for (const prefix of ['/v1', '/api']) {
    it.each(cases)(
      `${prefix}: %s is rejected and changes nothing`,
      async (_label, body, status, message, headers, path) => {
        const before = await dumpRedis();
        const target = (path ?? '/v1/metrics/steps/event').replace(/^\/v1/, prefix);
        const res = await t.api('POST', target, body, resolveHeaders(headers));
        expect(res.status).toBe(status);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        expect(Object.keys(res.body)).toEqual(['error']);
        expect(typeof res.body.error).toBe('string');
        expect(res.body.error.length).toBeGreaterThan(0);
        if (message) expect(res.body.error).toBe(message);
        expect(await dumpRedis()).toEqual(before);
      },
    );
  }

  it('answers 413 for a body larger than 1 MiB, before authentication, and changes nothing', async () => {
    const before = await dumpRedis();
    const huge = JSON.stringify({ user: okUser, value: 1, attributes: { source: long(1024 * 1024 + 10) } });
    for (const headers of [undefined, { 'X-API-KEY': '' }]) {
      for (const prefix of ['/v1', '/api']) {
        const res = await t.api('POST', `${prefix}/metrics/steps/event`, huge, headers);
        expect(res.status).toBe(413);
        expect(Object.keys(res.body)).toEqual(['error']);
        expect(typeof res.body.error).toBe('string');
      }
    }
    expect(await dumpRedis()).toEqual(before);
  });

  it('answers 413 over a real socket when Content-Length exceeds the limit', async () => {
    const origin = await t.listen();
    const before = await dumpRedis();
    const huge = JSON.stringify({ user: okUser, value: 1, pad: long(1024 * 1024 + 1) });
    const res = await fetch(`${origin}/v1/metrics/steps/event`, {
      method: 'POST',
      headers: { 'X-API-KEY': t.appKey, 'Content-Type': 'application/json' },
      body: huge,
    });
    expect(res.status).toBe(413);
    expect(Object.keys((await res.json()) as object)).toEqual(['error']);
    expect(await dumpRedis()).toEqual(before);
  });

  it('accepts a body just under the limit (unknown fields are ignored)', async () => {
    const body = JSON.stringify({ user: { id: 'big-body' }, value: 1, pad: long(1024 * 1024 - 100) });
    const res = await t.api('POST', '/v1/metrics/steps/event', body);
    expect(res.status).toBe(201);
    expect(res.body.total).toBe(1);
  });

  it('a rejected request does not store its idempotency key', async () => {
    const bad = await t.api(
      'POST',
      '/v1/metrics/steps/event',
      { user: { id: 'idem-val', tz: 'Mars/Base' }, value: 1 },
      { 'Idempotency-Key': 'k1' },
    );
    expect(bad.status).toBe(422);
    const overflow = await t.api(
      'POST',
      '/v1/metrics/steps/event',
      { user: { id: 'idem-val' }, value: 9007199254 },
      { 'Idempotency-Key': 'k2' },
    );
    expect(overflow.status).toBe(201);
    const tooMuch = await t.api(
      'POST',
      '/v1/metrics/steps/event',
      { user: { id: 'idem-val' }, value: 1 },
      { 'Idempotency-Key': 'k3' },
    );
    expect(tooMuch.status).toBe(422);
    const down = await t.api(
      'POST',
      '/v1/metrics/steps/event',
      { user: { id: 'idem-val' }, value: -9007199254 },
      { 'Idempotency-Key': 'k1' },
    );
    expect(down.status).toBe(201);
    expect(down.body).toMatchObject({ total: 0, idempotencyKey: 'k1', idempotentReplayed: false });
    const again = await t.api(
      'POST',
      '/v1/metrics/steps/event',
      { user: { id: 'idem-val' }, value: 1 },
      { 'Idempotency-Key': 'k3' },
    );
    expect(again.status).toBe(201);
    expect(again.body).toMatchObject({ total: 1, idempotentReplayed: false });
  });

  it('the /api alias records events exactly like /v1 (same body, same idempotency scope)', async () => {
    const v1 = await t.api(
      'POST',
      '/v1/metrics/other/event',
      { user: { id: 'alias-user' }, value: 2 },
      { 'Idempotency-Key': 'same' },
    );
    expect(v1.status).toBe(201);
    const api = await t.api(
      'POST',
      '/api/metrics/other/event',
      { user: { id: 'alias-user' }, value: 5 },
      { 'Idempotency-Key': 'same' },
    );
    expect(api.status).toBe(202);
    expect(api.body).toEqual({ ...v1.body, idempotentReplayed: true });
    const fresh = await t.api('POST', '/api/metrics/other/event', { user: { id: 'alias-user' }, value: 5 });
    expect(fresh.status).toBe(201);
    expect(Object.keys(fresh.body).sort()).toEqual([
      'achievements',
      'currentStreak',
      'eventId',
      'leaderboards',
      'metricId',
      'points',
      'total',
    ]);
    expect(fresh.body.total).toBe(7);
    const other = await t.api('GET', '/api/metrics/other');
    expect(other.status).toBe(404);
    expect(other.body).toEqual({ error: 'Not found' });
  });

  it('ignores unknown fields and null optional fields', async () => {
    const res = await t.api('POST', '/v1/metrics/steps/event', {
      user: {
        id: 'nulls',
        email: null,
        name: null,
        tz: null,
        deviceTokens: null,
        subscribeToEmails: null,
        attributes: null,
        extra: 1,
      },
      value: 4,
      attributes: null,
      unknown: { deep: true },
    });
    expect(res.status).toBe(201);
    expect(res.body.total).toBe(4);
  });

  it('answers 400 for a body that is not valid UTF-8, changing nothing', async () => {
    const origin = await t.listen();
    const before = await dumpRedis();
    const prefix = Buffer.from(`{"user": {"id": "${USER}", "name": "`);
    const body = Buffer.concat([prefix, Buffer.from([0xc3, 0x28]), Buffer.from('"}, "value": 1}')]);
    const res = await fetch(`${origin}/v1/metrics/steps/event`, {
      method: 'POST',
      headers: { 'X-API-KEY': t.appKey, 'Content-Type': 'application/json' },
      body,
    });
    expect(res.status).toBe(400);
    expect(Object.keys((await res.json()) as object)).toEqual(['error']);
    expect(await dumpRedis()).toEqual(before);
  });

  it('answers 404 for other methods on the event path', async () => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const res = await t.api(method, '/v1/metrics/steps/event');
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'Not found' });
    }
  });

  it('rejects a deleted attribute key (422) and changes nothing', async () => {
    const [legacy] = await adminCreate(t, '/attributes', [{ key: 'legacy', name: 'Legacy', type: 'user' }]);
    expect(
      (
        await t.api('POST', '/v1/metrics/steps/event', {
          user: { id: 'legacy-user', attributes: { legacy: 'x' } },
          value: 1,
        })
      ).status,
    ).toBe(201);
    const del = await t.admin('DELETE', `/attributes?ids=${legacy.id}`);
    expect(del.body.issues).toEqual([]);
    const before = await dumpRedis();
    const res = await t.api('POST', '/v1/metrics/steps/event', {
      user: { id: USER, attributes: { legacy: 'x' } },
      value: 1,
    });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error: 'Invalid attribute keys: legacy.' });
    expect(await dumpRedis()).toEqual(before);
  });

  it('accepts values at the edges of their domains', async () => {
    const id = `ü ${long(253)}`;
    expect(id.length).toBe(255);
    const res = await t.api(
      'POST',
      '/v1/metrics/steps/event',
      {
        user: { id, tz: 'America/Port-au-Prince', name: long(255), attributes: { plan: long(255) } },
        value: -0.000001,
        attributes: { source: '' },
      },
      { 'Idempotency-Key': ` ${long(255)} ` },
    );
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      total: -0.000001,
      idempotencyKey: long(255),
      idempotentReplayed: false,
    });
  });
});
