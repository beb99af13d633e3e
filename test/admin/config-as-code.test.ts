import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSnapshot } from '../../src/catalog/snapshot';
import { currentItems } from '../../src/config-as-code/items';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

const NOW = '2025-03-10T12:00:00Z';
let a: TestServer;
let b: TestServer;

/** Configures every kind of resource and option on `t` through the resource endpoints. */
async function configureEverything(t: TestServer) {
  const [plan, source] = await adminCreate(t, '/attributes', [
    { key: 'plan', name: 'Plan', type: 'user' },
    { key: 'source', name: 'Source', type: 'event' },
  ]);
  const [lessons, revenue] = await adminCreate(t, '/metrics', [
    { key: 'lessons', name: 'Lessons' },
    { key: 'revenue', name: 'Revenue', unitType: 'currency', units: 'USD' },
  ]);
  const [first, streak3, manual, locked] = await adminCreate(t, '/achievements', [
    {
      key: 'first-lesson',
      name: 'First lesson',
      trigger: 'metric',
      metricId: lessons.id,
      metricValue: 1,
      eventAttributes: [{ attributeId: source.id, attributeValue: 'web' }],
      status: 'active',
    },
    { key: 'streak-3', name: 'Three days', trigger: 'streak', streakLength: 3, status: 'active' },
    {
      key: 'manual',
      name: 'Manual',
      trigger: 'api',
      description: 'Given by hand',
      badge: { url: 'https://example.com/b.png' },
      userAttributes: [{ attributeId: plan.id, attributeValue: 'pro' }],
    },
    { key: 'locked-one', name: 'Locked', trigger: 'api', status: 'active' },
  ]);
  await adminCreate(t, '/achievements', [
    {
      key: 'combo',
      name: 'Combo',
      trigger: 'achievement',
      achievementIds: [first.id, streak3.id],
      status: 'active',
    },
  ]);
  expect(
    (await t.admin('PATCH', '/achievements', [{ id: locked.id, status: 'locked' }])).body.issues,
  ).toEqual([]);
  void manual;
  const streak = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    frequency: 'daily',
    mode: 'any',
    conditions: [{ metricId: lessons.id, threshold: 1 }],
    freezesEnabled: true,
    maxFreezes: 3,
    initialFreezes: 1,
    freezeAutoEarnAmount: 1,
    freezeAutoEarnInterval: 7,
  });
  expect(streak.status).toBe(200);
  const [xp, coins] = await adminCreate(t, '/points', [
    { key: 'xp', name: 'XP', description: 'Experience', badge: { url: 'https://example.com/xp.png' } },
    { key: 'coins', name: 'Coins', maxPoints: 1000 },
  ]);
  await adminCreate(t, `/points/${xp.id}/triggers`, [
    {
      type: 'metric',
      points: 10,
      status: 'active',
      metricId: lessons.id,
      metricThreshold: 1,
      eventAttributes: [{ attributeId: source.id, attributeValue: 'web' }],
    },
    { type: 'metric', points: 1, status: 'active', metricId: revenue.id, metricThreshold: 2.5 },
    { type: 'achievement', points: 50, status: 'active', achievementId: first.id },
    { type: 'streak', points: 5, streakLength: 3 },
    { type: 'time', points: 1, status: 'active', timeUnit: 'days', timeInterval: 1 },
    {
      type: 'user_creation',
      points: 100,
      status: 'active',
      userAttributes: [{ attributeId: plan.id, attributeValue: 'pro' }],
    },
  ]);
  await adminCreate(t, `/points/${coins.id}/triggers`, [
    { type: 'metric', points: 2, status: 'active', metricId: lessons.id, metricThreshold: 1 },
  ]);
  await adminCreate(t, `/points/${xp.id}/levels`, [
    { key: 'bronze', name: 'Bronze', points: 10 },
    {
      key: 'silver',
      name: 'Silver',
      points: 100,
      description: 'Shiny',
      badge: { url: 'https://example.com/s.png' },
    },
  ]);
  await adminCreate(t, `/points/${xp.id}/boosts`, [
    { name: 'Double', start: '2025-03-01', end: '2025-03-31', multiplier: 2 },
    {
      name: 'Pro bonus',
      start: '2025-03-01',
      multiplier: 1.5,
      rounding: 'up',
      userAttributes: [{ attributeId: plan.id, attributeValue: 'pro' }],
    },
  ]);
  await adminCreate(t, '/leaderboards', [
    {
      key: 'daily-lessons',
      name: 'Daily lessons',
      rankBy: 'metric',
      metricId: lessons.id,
      breakdownAttributes: [plan.id],
      runUnit: 'day',
      runInterval: 1,
      maxParticipants: 100,
      start: '2025-03-01',
      status: 'active',
    },
    { key: 'xp-board', name: 'XP board', rankBy: 'points', pointsSystemId: xp.id, description: 'All time' },
    {
      key: 'streaks',
      name: 'Streaks',
      rankBy: 'streak',
      start: '2025-04-01',
      end: '2025-12-31',
      status: 'active',
    },
  ]);
  await adminCreate(t, '/webhooks', [
    {
      url: 'https://example.com/hook',
      eventTypes: ['achievement.completed', 'points.changed'],
      description: 'Main',
      enabled: false,
    },
  ]);
}

/** Replaces every database id in a response by the key-based identity of what it names. */
async function byKeys(t: TestServer, value: unknown): Promise<unknown> {
  const snap = await loadSnapshot(t.deps.db, 0);
  const names = new Map<string, string>();
  for (const i of currentItems(snap, t.clock.now())) if (i.id) names.set(i.id, `${i.resource}:${i.key}`);
  const text = JSON.stringify(value).replace(
    /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g,
    (id) => names.get(id) ?? 'uuid',
  );
  return JSON.parse(text);
}

beforeAll(async () => {
  [a, b] = await Promise.all([createTestServer({ now: NOW }), createTestServer({ now: NOW })]);
  await configureEverything(a);
});
afterAll(async () => Promise.all([a.close(), b.close()]));

describe('configuration as code: round trip', () => {
  it('exports every resource by key, without ids or secrets, with a version', async () => {
    const res = await a.admin('GET', '/config');
    expect(res.status).toBe(200);
    const doc = res.body;
    expect(doc.format).toBe('laurel.config/v1');
    expect(doc.version).toMatch(/^[0-9a-f]{24}$/);
    const text = JSON.stringify(doc);
    expect(text).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/);
    expect(text).not.toContain('whsec_');
    expect(doc.metrics.map((m: any) => m.key)).toEqual(['lessons', 'revenue']);
    expect(doc.achievements.find((x: any) => x.key === 'combo').achievements).toEqual([
      'first-lesson',
      'streak-3',
    ]);
    expect(doc.streak.conditions).toEqual([{ metric: 'lessons', threshold: 1 }]);
    const xp = doc.pointsSystems.find((p: any) => p.key === 'xp');
    expect(xp.triggers).toHaveLength(6);
    expect(xp.triggers[0]).toMatchObject({
      type: 'metric',
      metric: 'lessons',
      eventAttributes: [{ attribute: 'source', value: 'web' }],
    });
    expect(doc.leaderboards.map((l: any) => [l.key, l.status])).toEqual([
      ['daily-lessons', 'active'],
      ['xp-board', 'inactive'],
      ['streaks', 'active'],
    ]);
    expect(doc.webhooks).toEqual([
      {
        url: 'https://example.com/hook',
        description: 'Main',
        eventTypes: ['achievement.completed', 'points.changed'],
        enabled: false,
      },
    ]);
  });

  it('applies A’s export to an empty B; B exports the same document and answers the same events identically', async () => {
    const exported = (await a.admin('GET', '/config')).body;
    const { version: _v, ...unversioned } = exported;
    const applied = await b.admin('POST', '/config/apply', unversioned);
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    expect(applied.body.applied).toBe(true);
    expect(applied.body.issues.filter((i: any) => i.severity === 'error')).toEqual([]);
    expect(applied.body.secrets).toHaveLength(1);
    const again = (await b.admin('GET', '/config')).body;
    expect(again).toEqual(exported);
    expect(applied.body.version).toBe(exported.version);

    const events = [
      { user: { id: 'u1', tz: 'UTC', attributes: { plan: 'pro' } }, value: 1, attributes: { source: 'web' } },
      { user: { id: 'u1' }, value: 2 },
      { user: { id: 'u2', attributes: { plan: 'free' } }, value: 1, attributes: { source: 'app' } },
    ];
    for (const [i, e] of events.entries()) {
      const path = i === 1 ? '/v1/metrics/revenue/event' : '/v1/metrics/lessons/event';
      const [ra, rb] = [await a.api('POST', path, e), await b.api('POST', path, e)];
      expect(ra.status, JSON.stringify(ra.body)).toBe(201);
      expect(rb.status).toBe(ra.status);
      expect(await byKeys(b, rb.body)).toEqual(await byKeys(a, ra.body));
    }
    for (const path of ['/v1/users/u1/points/xp', '/v1/users/u1/achievements', '/v1/users/u1/streak']) {
      const [ra, rb] = [await a.api('GET', path), await b.api('GET', path)];
      expect(ra.status, path).toBe(200);
      expect(rb.status).toBe(ra.status);
      expect(await byKeys(b, rb.body)).toEqual(await byKeys(a, ra.body));
    }
  });

  it('applying the same document twice changes nothing and records nothing the second time', async () => {
    const doc = (await b.admin('GET', '/config')).body;
    const before = await b.admin('GET', '/config/changes?limit=100');
    const res = await b.admin('POST', '/config/apply', doc);
    expect(res.status).toBe(200);
    expect(res.body.summary).toMatchObject({ create: 0, update: 0, delete: 0 });
    expect(res.body.version).toBe(doc.version);
    const after = await b.admin('GET', '/config/changes?limit=100');
    expect(after.headers.get('x-total-count')).toBe(before.headers.get('x-total-count'));
  });
});

describe('configuration as code: plan and apply', () => {
  it('plans creates, updates with the changed fields, deletes with prune, and unchanged items', async () => {
    const doc = (await a.admin('GET', '/config')).body;
    doc.metrics[0].name = 'Lessons done';
    doc.metrics.push({ key: 'quizzes', name: 'Quizzes' });
    doc.webhooks = [];
    const plan = await a.admin('POST', '/config/plan', doc);
    expect(plan.status).toBe(200);
    expect(plan.body.applied).toBe(false);
    const by = (k: string) => plan.body.changes.find((c: any) => c.key === k);
    expect(by('lessons')).toMatchObject({
      action: 'update',
      fields: { name: { before: 'Lessons', after: 'Lessons done' } },
    });
    expect(by('quizzes')).toMatchObject({ action: 'create', value: { key: 'quizzes', unitType: 'number' } });
    expect(by('revenue')).toMatchObject({ action: 'unchanged' });
    expect(by('https://example.com/hook#1')).toMatchObject({ action: 'unchanged', notInDocument: true });
    const pruned = await a.admin('POST', '/config/plan?prune=true', doc);
    expect(pruned.body.changes.find((c: any) => c.key === 'https://example.com/hook#1').action).toBe(
      'delete',
    );
    // A plan changes nothing.
    const metrics = await a.admin('GET', '/metrics?limit=100');
    expect(metrics.body.map((m: any) => m.name)).toEqual(['Lessons', 'Revenue']);
  });

  it('reports the resource endpoints’ validation issues and consequence warnings', async () => {
    const doc = (await a.admin('GET', '/config')).body;
    doc.metrics.push({ key: 'money', name: 'Money', unitType: 'currency' });
    doc.leaderboards[0].rankBy = 'streak';
    doc.pointsSystems[0].triggers[3].status = 'active';
    const plan = await a.admin('POST', '/config/plan', doc);
    expect(plan.status).toBe(200);
    const errors = plan.body.issues.filter((i: any) => i.severity === 'error');
    const direct = await a.admin('POST', '/metrics', [{ key: 'money', name: 'Money', unitType: 'currency' }]);
    expect(errors).toContainEqual({
      severity: 'error',
      resource: 'metric',
      key: 'money',
      message: direct.body.issues[0].message,
    });
    expect(errors).toContainEqual(
      expect.objectContaining({
        resource: 'leaderboard',
        key: 'daily-lessons',
        message: 'rankBy can only be changed while the leaderboard is inactive',
      }),
    );
    expect(plan.body.issues).toContainEqual(
      expect.objectContaining({ severity: 'warning', resource: 'points trigger', key: 'xp/streak#1' }),
    );
  });

  it('refuses a stale version with 409 and changes nothing', async () => {
    const doc = (await a.admin('GET', '/config')).body;
    const [lessons] = (await a.admin('GET', '/metrics')).body;
    expect((await a.admin('PATCH', '/metrics', [{ id: lessons.id, name: 'Renamed' }])).status).toBe(200);
    doc.metrics.push({ key: 'stale-new', name: 'New' });
    const res = await a.admin('POST', '/config/apply', doc);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatch(/changed since this document was exported/);
    const names = (await a.admin('GET', '/metrics?limit=100')).body.map((m: any) => m.name);
    expect(names).toEqual(['Renamed', 'Revenue']);
    await a.admin('PATCH', '/metrics', [{ id: lessons.id, name: 'Lessons' }]);
  });

  it('changes nothing when any item is invalid', async () => {
    const doc = (await a.admin('GET', '/config')).body;
    const before = doc.version;
    doc.metrics.push({ key: 'fresh', name: 'Fresh' });
    doc.achievements[0].name = 'Renamed first';
    doc.leaderboards.push({ key: 'broken', name: 'Broken', rankBy: 'metric', metric: 'no-such-metric' });
    const res = await a.admin('POST', '/config/apply', doc);
    expect(res.status).toBe(422);
    expect(res.body.error).toMatch(/nothing was changed/);
    expect(res.body).toEqual({
      error: expect.stringContaining('leaderboard broken: metric: metric no-such-metric does not exist'),
    });
    const now = (await a.admin('GET', '/config')).body;
    expect(now.version).toBe(before);
    expect(now.metrics.map((m: any) => m.key)).not.toContain('fresh');
  });

  it('prunes only when asked, and refuses a deletion the resource endpoint refuses', async () => {
    const doc = (await b.admin('GET', '/config')).body;
    doc.webhooks = [];
    doc.metrics = doc.metrics.filter((m: any) => m.key !== 'revenue');
    const kept = await b.admin('POST', '/config/apply', doc);
    expect(kept.status).toBe(200);
    expect((await b.admin('GET', '/webhooks')).body).toHaveLength(1);
    const refused = await b.admin('POST', '/config/apply?prune=true', { ...doc, version: undefined });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toContain('metric revenue: Metric is in use');
    expect((await b.admin('GET', '/webhooks')).body).toHaveLength(1);
    const xp = doc.pointsSystems.find((p: any) => p.key === 'xp');
    xp.triggers = xp.triggers.filter((t: any) => t.metric !== 'revenue');
    const pruned = await b.admin('POST', '/config/apply?prune=true', { ...doc, version: undefined });
    expect(pruned.status, JSON.stringify(pruned.body.issues)).toBe(200);
    expect((await b.admin('GET', '/webhooks')).body).toHaveLength(0);
    expect((await b.admin('GET', '/metrics?limit=100')).body.map((m: any) => m.key)).toEqual(['lessons']);
  });

  it('accepts YAML and answers YAML exports', async () => {
    const yaml = await a.app.request('/admin/v1/config?format=yaml', {
      headers: { 'X-API-KEY': a.adminKey },
    });
    expect(yaml.headers.get('content-type')).toMatch(/yaml/);
    const text = await yaml.text();
    expect(text).toContain('format: laurel.config/v1');
    const res = await a.app.request('/admin/v1/config/plan', {
      method: 'POST',
      headers: { 'X-API-KEY': a.adminKey, 'Content-Type': 'application/yaml' },
      body: text,
    });
    expect(res.status).toBe(200);
    const plan = (await res.json()) as any;
    expect(plan.summary).toMatchObject({ create: 0, update: 0, delete: 0 });
  });

  it('never half-applies while other admin writes run concurrently', async () => {
    for (let round = 0; round < 3; round++) {
      const doc = (await a.admin('GET', '/config')).body;
      const keys = Array.from({ length: 15 }, (_, i) => `c${round}_${i}`);
      doc.metrics.push(...keys.map((key) => ({ key, name: key })));
      const [lessons] = (await a.admin('GET', '/metrics')).body;
      const [applied, write] = await Promise.all([
        a.admin('POST', '/config/apply', doc),
        a.admin('PATCH', '/metrics', [{ id: lessons.id, name: `Lessons ${round}` }]),
      ]);
      expect(write.status).toBe(200);
      expect([200, 409]).toContain(applied.status);
      const present = (await a.admin('GET', '/metrics?limit=100')).body.map((m: any) => m.key);
      const created = keys.filter((k) => present.includes(k));
      expect(created).toEqual(applied.status === 200 ? keys : []);
      // Whichever came second, the rename is there (apply's document named the old name only if it ran first).
      const name = (await a.admin('GET', `/metrics/${lessons.id}`)).body.name;
      expect([`Lessons ${round}`, round === 0 ? 'Lessons' : `Lessons ${round - 1}`]).toContain(name);
    }
  });
});

describe('configuration as code: bad input', () => {
  const cases: Array<[string, string, unknown, number]> = [
    ['not JSON', 'plan', '{nope', 400],
    ['an array', 'apply', [], 400],
    ['no format', 'plan', { metrics: [] }, 422],
    ['a wrong format', 'apply', { format: 'laurel.config/v2' }, 422],
    ['an unknown field', 'plan', { format: 'laurel.config/v1', metric: [] }, 422],
    ['a wrong type', 'apply', { format: 'laurel.config/v1', metrics: [{ key: 'x', name: 5 }] }, 422],
    ['a bad key', 'apply', { format: 'laurel.config/v1', metrics: [{ key: 'a b', name: 'x' }] }, 422],
    [
      'a duplicate key',
      'apply',
      {
        format: 'laurel.config/v1',
        metrics: [
          { key: 'x', name: 'x' },
          { key: 'x', name: 'y' },
        ],
      },
      422,
    ],
  ];
  it.each(cases)('answers %s with a 4xx {"error"}', async (_name, op, body, status) => {
    const res = await a.admin('POST', `/config/${op}`, body);
    expect(res.status).toBe(status);
    expect(typeof res.body.error).toBe('string');
  });

  it('answers bad YAML, a bad prune flag and bad paging with 4xx', async () => {
    const yaml = await a.app.request('/admin/v1/config/apply', {
      method: 'POST',
      headers: { 'X-API-KEY': a.adminKey, 'Content-Type': 'application/yaml' },
      body: 'format: [unclosed',
    });
    expect(yaml.status).toBe(400);
    expect(((await yaml.json()) as any).error).toMatch(/YAML/);
    const prune = await a.admin('POST', '/config/apply?prune=maybe', { format: 'laurel.config/v1' });
    expect(prune.status).toBe(422);
    expect((await a.admin('GET', '/config/changes?limit=0')).status).toBe(422);
    expect((await a.admin('GET', '/config?format=xml')).status).toBe(422);
  });

  it('serves the JSON Schema without a key and lists the routes in /openapi.json', async () => {
    const res = await a.app.request('/admin/v1/config/schema.json');
    expect(res.status).toBe(200);
    const schema = (await res.json()) as any;
    expect(schema.properties.format).toBeDefined();
    expect(schema.properties.pointsSystems).toBeDefined();
    const openapi = (await (await a.app.request('/openapi.json')).json()) as any;
    for (const p of [
      '/admin/v1/config',
      '/admin/v1/config/plan',
      '/admin/v1/config/apply',
      '/admin/v1/config/changes',
    ])
      expect(openapi.paths[p]).toBeDefined();
  });
});
