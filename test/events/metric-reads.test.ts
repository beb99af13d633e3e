import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// A user's metrics (application-api §6.5 #10, #11, §7.6).

let t: TestServer;
const NOW = '2025-03-10T12:00:00.000Z';
let words: { id: string };
let pages: { id: string };
let a: Record<string, { id: string }>;

const send = (key: string, user: string, value: number) =>
  t.api('POST', `/v1/metrics/${key}/event`, { user: { id: user }, value });

beforeAll(async () => {
  t = await createTestServer({ now: NOW });
  [words, pages] = await adminCreate(t, '/metrics', [
    { key: 'words', name: 'Words' },
    { key: 'pages', name: 'Pages' },
  ]);
  const [gone] = await adminCreate(t, '/metrics', [{ key: 'gone', name: 'Gone' }]);
  await t.admin('DELETE', `/metrics?ids=${gone.id}`);
  const created = await adminCreate(
    t,
    '/achievements',
    [
      { key: 'w10', metricValue: 10, status: 'active' },
      { key: 'w100', metricValue: 100, status: 'active' },
      { key: 'w-locked-done', metricValue: 1, status: 'active' },
      { key: 'w-locked-open', metricValue: 1000, status: 'active' },
      { key: 'w-inactive', metricValue: 1 },
    ].map((x) => ({ ...x, name: x.key, trigger: 'metric', metricId: words.id })),
  );
  a = Object.fromEntries(created.map((x: { key: string; id: string }) => [x.key, x]));
  await send('words', 'writer', 12.5);
  await send('words', 'writer', 0.25);
  await t.admin('PATCH', '/achievements', [
    { id: a['w-locked-done']!.id, status: 'locked' },
    { id: a['w-locked-open']!.id, status: 'locked' },
  ]);
  await t.api('POST', '/v1/users', { id: 'idle' });
});
afterAll(async () => t.close());

const THRESHOLDS: Record<string, number> = { w10: 10, w100: 100, 'w-locked-done': 1 };
const ach = (key: string, achievedAt: string | null) => ({
  id: a[key]!.id,
  name: key,
  trigger: 'metric',
  key,
  description: null,
  badgeUrl: null,
  metricId: words.id,
  metricName: 'Words',
  metricValue: THRESHOLDS[key],
  userAttributes: [],
  eventAttributes: [],
  achievedAt,
});

describe('GET /v1/users/{id}/metrics', () => {
  it("lists every metric in creation order with the user's exact total and the metric's achievements", async () => {
    const res = await t.api('GET', '/v1/users/writer/metrics');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      {
        id: words.id,
        key: 'words',
        name: 'Words',
        status: 'active',
        current: 12.75,
        achievements: [ach('w10', NOW), ach('w100', null), ach('w-locked-done', NOW)],
      },
      { id: pages.id, key: 'pages', name: 'Pages', status: 'active', current: 0, achievements: [] },
    ]);
  });

  it('shows zero totals and no locked achievements to a user without events', async () => {
    const res = await t.api('GET', '/v1/users/idle/metrics');
    expect(res.body.map((m: any) => [m.key, m.current, m.achievements.map((x: any) => x.key)])).toEqual([
      ['words', 0, ['w10', 'w100']],
      ['pages', 0, []],
    ]);
  });

  it('answers 404 for an unknown user', async () => {
    const res = await t.api('GET', '/v1/users/nobody/metrics');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'User not found' });
  });
});

describe('GET /v1/users/{id}/metrics/{key}', () => {
  it('returns one metric', async () => {
    const res = await t.api('GET', '/v1/users/writer/metrics/words');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: words.id, key: 'words', current: 12.75 });
    expect(res.body.achievements.map((x: any) => x.key)).toEqual(['w10', 'w100', 'w-locked-done']);
  });

  it('answers 404 for an unknown user, an unknown metric and a deleted metric', async () => {
    expect((await t.api('GET', '/v1/users/nobody/metrics/words')).body).toEqual({ error: 'User not found' });
    for (const key of ['nope', 'gone']) {
      const res = await t.api('GET', `/v1/users/writer/metrics/${key}`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'Metric not found' });
    }
  });
});
