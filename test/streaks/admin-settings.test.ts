import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { streakSettings } from '../../src/db/schema';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

const NOW = '2025-03-10T12:00:00Z';
let t: TestServer;
let m1: any;
let m2: any;
beforeAll(async () => {
  t = await createTestServer({ now: NOW });
  [m1, m2] = await adminCreate(t, '/metrics', [
    { key: 'lessons', name: 'Lessons' },
    { key: 'minutes', name: 'Minutes' },
  ]);
});
afterAll(async () => t.close());
beforeEach(async () => {
  t.clock.set(NOW);
  await t.deps.db.delete(streakSettings);
  await t.deps.catalog.changed();
});

const get = async () => (await t.admin('GET', '/streaks/settings')).body;
const patch = (body: unknown) => t.admin('PATCH', '/streaks/settings', body);
const stored = async () => (await t.deps.db.select().from(streakSettings))[0];

const DEFAULTS = {
  enabled: false,
  frequency: 'daily',
  mode: 'all',
  conditions: [],
  freezesEnabled: false,
  maxFreezes: 1,
  initialFreezes: 0,
  freezeAutoEarnAmount: null,
  freezeAutoEarnInterval: null,
  updated: '1970-01-01T00:00:00.000Z',
};

describe('admin streak settings', () => {
  it('returns the defaults before anything was written', async () => {
    const res = await t.admin('GET', '/streaks/settings');
    expect(res.status).toBe(200);
    expect(res.body).toEqual(DEFAULTS);
  });

  it('applies a partial change, adds metric names, and publishes it to the snapshot', async () => {
    const res = await patch({
      enabled: true,
      conditions: [
        { metricId: m1.id, threshold: 1 },
        { metricId: m2.id, threshold: 2.5 },
      ],
      mode: 'any',
      freezesEnabled: true,
      maxFreezes: 3,
      initialFreezes: 3,
      freezeAutoEarnAmount: 1,
      freezeAutoEarnInterval: 7,
      unknownField: 'ignored',
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      enabled: true,
      frequency: 'daily',
      mode: 'any',
      conditions: [
        { metricId: m1.id, metricKey: 'lessons', metricName: 'Lessons', threshold: 1 },
        { metricId: m2.id, metricKey: 'minutes', metricName: 'Minutes', threshold: 2.5 },
      ],
      freezesEnabled: true,
      maxFreezes: 3,
      initialFreezes: 3,
      freezeAutoEarnAmount: 1,
      freezeAutoEarnInterval: 7,
      updated: '2025-03-10T12:00:00.000Z',
    });
    expect(await get()).toEqual(res.body);
    expect(t.deps.catalog.snapshot.streak).toMatchObject({ enabled: true, mode: 'any', maxFreezes: 3 });

    t.clock.advance(1000);
    const narrowed = await patch({ conditions: [{ metricId: m2.id, threshold: 1 }] });
    expect(narrowed.body.conditions).toEqual([
      { metricId: m2.id, metricKey: 'minutes', metricName: 'Minutes', threshold: 1 },
    ]);
    expect(narrowed.body).toMatchObject({ mode: 'any', maxFreezes: 3, updated: '2025-03-10T12:00:01.000Z' });
  });

  it('records enabledAt and bumps the epoch on enable, disable and a frequency change', async () => {
    await patch({ conditions: [{ metricId: m1.id, threshold: 1 }] });
    expect((await stored())!).toMatchObject({ epoch: 0, enabledAt: null });

    t.clock.set('2025-03-11T00:00:00Z');
    await patch({ enabled: true });
    expect((await stored())!).toMatchObject({ epoch: 1, enabledAt: new Date('2025-03-11T00:00:00Z') });

    await patch({ enabled: true, mode: 'any' });
    expect((await stored())!.epoch).toBe(1);

    await patch({ frequency: 'weekly' });
    expect((await stored())!.epoch).toBe(2);
    await patch({ frequency: 'weekly' });
    expect((await stored())!.epoch).toBe(2);

    t.clock.set('2025-03-12T00:00:00Z');
    await patch({ enabled: false });
    expect((await stored())!).toMatchObject({ epoch: 3, enabledAt: new Date('2025-03-11T00:00:00Z') });

    await patch({ enabled: true });
    expect((await stored())!).toMatchObject({ epoch: 4, enabledAt: new Date('2025-03-12T00:00:00Z') });
  });

  it('records when auto-earn was turned on', async () => {
    await patch({ freezeAutoEarnAmount: 1, freezeAutoEarnInterval: 3 });
    expect((await stored())!.autoEarnEnabledAt).toEqual(new Date(NOW));
    t.clock.advance(60_000);
    await patch({ freezeAutoEarnAmount: 2, freezeAutoEarnInterval: 3 });
    expect((await stored())!.autoEarnEnabledAt).toEqual(new Date(NOW));
    await patch({ freezeAutoEarnAmount: null, freezeAutoEarnInterval: null });
    t.clock.advance(60_000);
    await patch({ freezeAutoEarnAmount: 1, freezeAutoEarnInterval: 1 });
    expect((await stored())!.autoEarnEnabledAt).toEqual(new Date(t.clock.now()));
  });

  it.each([
    ['not JSON', '{', 400],
    ['an array', [], 400],
    ['a string', '"x"', 400],
    ['enabled as a string', { enabled: 'true' }, 400],
    ['conditions as an object', { conditions: {} }, 400],
    ['a condition without threshold', { conditions: [{ metricId: 'x' }] }, 400],
    ['a threshold as a string', { conditions: [{ metricId: 'x', threshold: '1' }] }, 400],
    ['maxFreezes as a string', { maxFreezes: '2' }, 400],
    ['a bad frequency', { frequency: 'hourly' }, 422],
    ['a bad mode', { mode: 'some' }, 422],
    ['enabled without conditions', { enabled: true, conditions: [] }, 422],
    ['enabled null', { enabled: null }, 422],
    ['an unknown metric', { conditions: [{ metricId: randomUUID(), threshold: 1 }] }, 422],
    [
      'a repeated metric',
      {
        conditions: [
          { metricId: 'M1', threshold: 1 },
          { metricId: 'M1', threshold: 2 },
        ],
      },
      422,
    ],
    ['a zero threshold', { conditions: [{ metricId: 'M1', threshold: 0 }] }, 422],
    ['a negative threshold', { conditions: [{ metricId: 'M1', threshold: -1 }] }, 422],
    [
      '21 conditions',
      { conditions: Array.from({ length: 21 }, () => ({ metricId: 'M1', threshold: 1 })) },
      422,
    ],
    ['maxFreezes 0', { maxFreezes: 0 }, 422],
    ['maxFreezes 101', { maxFreezes: 101 }, 422],
    ['maxFreezes 1.5', { maxFreezes: 1.5 }, 422],
    ['initialFreezes above maxFreezes', { maxFreezes: 2, initialFreezes: 3 }, 422],
    ['initialFreezes negative', { initialFreezes: -1 }, 422],
    ['auto-earn amount alone', { freezeAutoEarnAmount: 1 }, 422],
    ['auto-earn interval alone', { freezeAutoEarnInterval: 1 }, 422],
    ['auto-earn amount 0', { freezeAutoEarnAmount: 0, freezeAutoEarnInterval: 1 }, 422],
    ['auto-earn interval fractional', { freezeAutoEarnAmount: 1, freezeAutoEarnInterval: 0.5 }, 422],
  ])('answers %s (%j) with %i and changes nothing', async (_label, body, status) => {
    await patch({ conditions: [{ metricId: m1.id, threshold: 1 }], maxFreezes: 3, initialFreezes: 1 });
    const before = await get();
    const epochBefore = (await stored())!.epoch;
    const resolved =
      typeof body === 'string' ? body : JSON.parse(JSON.stringify(body).replaceAll('M1', m1.id));
    const res = await patch(resolved);
    expect(res.status).toBe(status);
    expect(Object.keys(res.body)).toEqual(['error']);
    expect(await get()).toEqual(before);
    expect((await stored())!.epoch).toBe(epochBefore);
  });

  it('validates the resulting settings: lowering maxFreezes below initialFreezes fails', async () => {
    await patch({ maxFreezes: 5, initialFreezes: 4 });
    const res = await patch({ maxFreezes: 3 });
    expect(res.status).toBe(422);
    expect(res.body.error).toContain('initialFreezes');
    expect((await get()).maxFreezes).toBe(5);
  });

  it('cannot clear the conditions of enabled streaks', async () => {
    await patch({ enabled: true, conditions: [{ metricId: m1.id, threshold: 1 }] });
    expect((await patch({ conditions: [] })).status).toBe(422);
    expect((await patch({ enabled: false, conditions: [] })).status).toBe(200);
  });

  it('requires an admin key', async () => {
    expect((await t.api('GET', '/admin/v1/streaks/settings')).status).toBe(401);
    const res = await t.app.request('/admin/v1/streaks/settings', { method: 'PATCH', body: '{}' });
    expect(res.status).toBe(401);
  });
});
