import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { streakPauses } from '../../src/db/schema';
import { dateOfDay } from '../../src/engine/periods';
import { userField } from '../../src/redis/user-hash';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// The streak reported by POST /v1/metrics/{key}/event (semantics §4; application-api §7.7).

let t: TestServer;
let n = 0;
const uid = () => `streak-user-${++n}`;

const send = (key: string, user: Record<string, unknown> | string, value: number) =>
  t.api('POST', `/v1/metrics/${key}/event`, { user: typeof user === 'string' ? { id: user } : user, value });

/** Sends an event at an instant and returns the currentStreak of the response. */
async function at(instant: string, key: string, user: Record<string, unknown> | string, value: number) {
  t.clock.set(instant);
  const res = await send(key, user, value);
  expect(res.status).toBe(201);
  return res.body.currentStreak;
}

async function metric(key: string) {
  const [m] = await adminCreate(t, '/metrics', [{ key, name: key }]);
  return m as { id: string; key: string };
}

interface Settings {
  frequency?: 'daily' | 'weekly' | 'monthly';
  mode?: 'all' | 'any';
  conditions: Array<{ metricId: string; threshold: number }>;
  freezesEnabled?: boolean;
  maxFreezes?: number;
  initialFreezes?: number;
  freezeAutoEarnAmount?: number | null;
  freezeAutoEarnInterval?: number | null;
}

async function configure(s: Settings) {
  const res = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    frequency: 'daily',
    mode: 'all',
    freezesEnabled: false,
    maxFreezes: 1,
    initialFreezes: 0,
    freezeAutoEarnAmount: null,
    freezeAutoEarnInterval: null,
    ...s,
  });
  expect(res.status).toBe(200);
}

const streak = (fields: Record<string, unknown>) => ({
  frequency: 'daily',
  started: null,
  expires: null,
  extended: false,
  ...fields,
});

beforeAll(async () => {
  t = await createTestServer();
});
afterAll(async () => t.close());

describe('streaks on events', () => {
  it('daily: the same instant falls on different local dates in Auckland and Los Angeles', async () => {
    const m = await metric('daily-tz');
    await configure({ conditions: [{ metricId: m.id, threshold: 1 }] });
    const nz = { id: uid(), tz: 'Pacific/Auckland' };
    const la = { id: uid(), tz: 'America/Los_Angeles' };
    const utc = uid();

    // 10:00Z = 23:00 on 10 March in Auckland (UTC+13), 03:00 on 10 March in Los Angeles (UTC-7).
    const day1 = {
      length: 1,
      started: '2025-03-10',
      periodStart: '2025-03-10',
      periodEnd: '2025-03-10',
      expires: '2025-03-11',
      extended: true,
    };
    expect(await at('2025-03-10T10:00:00Z', 'daily-tz', nz, 1)).toEqual(streak(day1));
    expect(await at('2025-03-10T10:00:00Z', 'daily-tz', la, 1)).toEqual(streak(day1));
    expect(await at('2025-03-10T10:00:00Z', 'daily-tz', utc, 1)).toEqual(streak(day1));

    // 11:30Z: already 11 March in Auckland, still 10 March in Los Angeles and UTC.
    expect(await at('2025-03-10T11:30:00Z', 'daily-tz', nz, 1)).toEqual(
      streak({
        length: 2,
        started: '2025-03-10',
        periodStart: '2025-03-11',
        periodEnd: '2025-03-11',
        expires: '2025-03-12',
        extended: true,
      }),
    );
    expect(await at('2025-03-10T11:30:00Z', 'daily-tz', la, 1)).toEqual(streak({ ...day1, extended: false }));
    expect(await at('2025-03-10T11:30:00Z', 'daily-tz', utc, 1)).toEqual(
      streak({ ...day1, extended: false }),
    );

    // 07:30Z on 11 March: 00:30 on 11 March in Los Angeles, 20:30 on 11 March in Auckland.
    expect(await at('2025-03-11T07:30:00Z', 'daily-tz', la, 1)).toEqual(
      streak({
        length: 2,
        started: '2025-03-10',
        periodStart: '2025-03-11',
        periodEnd: '2025-03-11',
        expires: '2025-03-12',
        extended: true,
      }),
    );
    expect(await at('2025-03-11T07:30:00Z', 'daily-tz', nz, 1)).toMatchObject({
      length: 2,
      periodStart: '2025-03-11',
      extended: false,
    });
    // The time zone stays stored: later requests without tz use it.
    expect(await at('2025-03-11T12:00:00Z', 'daily-tz', nz.id, 1)).toMatchObject({
      length: 3,
      periodStart: '2025-03-12',
      extended: true,
    });
  });

  it('a request that changes tz is evaluated in the new zone', async () => {
    const m = await metric('tz-change');
    await configure({ conditions: [{ metricId: m.id, threshold: 1 }] });
    const u = uid();
    expect(await at('2025-03-10T12:00:00Z', 'tz-change', u, 1)).toMatchObject({
      length: 1,
      periodStart: '2025-03-10',
    });
    // 12:30Z is 01:30 on 11 March in Auckland.
    expect(await at('2025-03-10T12:30:00Z', 'tz-change', { id: u, tz: 'Pacific/Auckland' }, 1)).toEqual(
      streak({
        length: 2,
        started: '2025-03-10',
        periodStart: '2025-03-11',
        periodEnd: '2025-03-11',
        expires: '2025-03-12',
        extended: true,
      }),
    );
  });

  it('moving west: an earlier local date is never met again and counts towards the latest met period', async () => {
    const m = await metric('west');
    await configure({ conditions: [{ metricId: m.id, threshold: 1 }] });
    const u = uid();
    // 12:00Z on 10 March = 01:00 on 11 March in Auckland.
    expect(await at('2025-03-10T12:00:00Z', 'west', { id: u, tz: 'Pacific/Auckland' }, 1)).toMatchObject({
      length: 1,
      started: '2025-03-11',
      periodStart: '2025-03-11',
    });
    // 13:00Z = 06:00 on 10 March in Los Angeles: back on an earlier date.
    expect(await at('2025-03-10T13:00:00Z', 'west', { id: u, tz: 'America/Los_Angeles' }, 1)).toEqual(
      streak({
        length: 1,
        started: '2025-03-11',
        periodStart: '2025-03-10',
        periodEnd: '2025-03-10',
        expires: '2025-03-12',
      }),
    );
    // 11 March in Los Angeles was already met in Auckland.
    expect(await at('2025-03-11T08:00:00Z', 'west', u, 1)).toMatchObject({
      length: 1,
      periodStart: '2025-03-11',
      extended: false,
    });
    expect(await at('2025-03-12T08:00:00Z', 'west', u, 1)).toMatchObject({
      length: 2,
      periodStart: '2025-03-12',
      extended: true,
    });
  });

  it('moving east: a local date skipped entirely by the change is neither met nor missed', async () => {
    const m = await metric('east');
    await configure({
      conditions: [{ metricId: m.id, threshold: 1 }],
      freezesEnabled: true,
      maxFreezes: 2,
      initialFreezes: 1,
    });
    const u = uid();
    // 12:00Z on 10 March = 01:00 on 10 March in Pago Pago (UTC-11).
    expect(await at('2025-03-10T12:00:00Z', 'east', { id: u, tz: 'Pacific/Pago_Pago' }, 1)).toMatchObject({
      length: 1,
      periodStart: '2025-03-10',
      freezes: 1,
    });
    // 10:30Z on 11 March = 23:30 on 10 March in Pago Pago = 00:30 on 12 March in Kiritimati (UTC+14):
    // 11 March is never lived. No break and no freeze used.
    expect(await at('2025-03-11T10:30:00Z', 'east', { id: u, tz: 'Pacific/Kiritimati' }, 0)).toEqual(
      streak({
        length: 1,
        started: '2025-03-10',
        periodStart: '2025-03-12',
        periodEnd: '2025-03-12',
        expires: '2025-03-12',
        freezes: 1,
        maxFreezes: 2,
      }),
    );
    expect(await at('2025-03-11T10:31:00Z', 'east', u, 1)).toMatchObject({
      length: 2,
      extended: true,
      freezes: 1,
      expires: '2025-03-13',
    });
    // A date that was lived (even partly) and not met is missed as usual.
    const v = uid();
    expect(await at('2025-03-10T12:00:00Z', 'east', { id: v, tz: 'Pacific/Pago_Pago' }, 1)).toMatchObject({
      length: 1,
      freezes: 1,
    });
    // 12:00Z on 11 March = 01:00 on 11 March in Pago Pago, 02:00 on 12 March in Kiritimati: 11 March was lived.
    expect(await at('2025-03-11T12:00:00Z', 'east', { id: v, tz: 'Pacific/Kiritimati' }, 1)).toMatchObject({
      length: 2,
      periodStart: '2025-03-12',
      freezes: 0,
    });
  });

  it('weekly: ISO weeks run Monday to Sunday', async () => {
    const m = await metric('weekly');
    await configure({ frequency: 'weekly', conditions: [{ metricId: m.id, threshold: 1 }] });
    const u = uid();
    const w = (f: Record<string, unknown>) => streak({ frequency: 'weekly', ...f });
    // Sunday 16 March 2025 closes the week of Monday 10 March.
    expect(await at('2025-03-16T23:30:00Z', 'weekly', u, 1)).toEqual(
      w({
        length: 1,
        started: '2025-03-16',
        periodStart: '2025-03-10',
        periodEnd: '2025-03-16',
        expires: '2025-03-23',
        extended: true,
      }),
    );
    // Monday 17 March starts a new week.
    expect(await at('2025-03-17T00:30:00Z', 'weekly', u, 1)).toEqual(
      w({
        length: 2,
        started: '2025-03-16',
        periodStart: '2025-03-17',
        periodEnd: '2025-03-23',
        expires: '2025-03-30',
        extended: true,
      }),
    );
    expect(await at('2025-03-23T23:59:00Z', 'weekly', u, 1)).toEqual(
      w({
        length: 2,
        started: '2025-03-16',
        periodStart: '2025-03-17',
        periodEnd: '2025-03-23',
        expires: '2025-03-30',
        extended: false,
      }),
    );
    // The week of 24 March is missed: on 31 March the streak has broken.
    expect(await at('2025-03-31T09:00:00Z', 'weekly', u, 1)).toEqual(
      w({
        length: 1,
        started: '2025-03-31',
        periodStart: '2025-03-31',
        periodEnd: '2025-04-06',
        expires: '2025-04-13',
        extended: true,
      }),
    );
    // Sunday 16 March 12:00Z is already Monday 17 March in Auckland.
    expect(
      await at('2025-03-16T12:00:00Z', 'weekly', { id: uid(), tz: 'Pacific/Auckland' }, 1),
    ).toMatchObject({
      periodStart: '2025-03-17',
      periodEnd: '2025-03-23',
      started: '2025-03-17',
    });
  });

  it('monthly: calendar months', async () => {
    const m = await metric('monthly');
    await configure({ frequency: 'monthly', conditions: [{ metricId: m.id, threshold: 1 }] });
    const u = uid();
    const mo = (f: Record<string, unknown>) => streak({ frequency: 'monthly', ...f });
    expect(await at('2025-03-31T12:00:00Z', 'monthly', u, 1)).toEqual(
      mo({
        length: 1,
        started: '2025-03-31',
        periodStart: '2025-03-01',
        periodEnd: '2025-03-31',
        expires: '2025-04-30',
        extended: true,
      }),
    );
    expect(await at('2025-04-01T00:00:00Z', 'monthly', u, 1)).toEqual(
      mo({
        length: 2,
        started: '2025-03-31',
        periodStart: '2025-04-01',
        periodEnd: '2025-04-30',
        expires: '2025-05-31',
        extended: true,
      }),
    );
    expect(await at('2025-05-15T00:00:00Z', 'monthly', u, 1)).toMatchObject({
      length: 3,
      periodEnd: '2025-05-31',
      expires: '2025-06-30',
    });
    // June missed.
    expect(await at('2025-07-02T00:00:00Z', 'monthly', u, 1)).toEqual(
      mo({
        length: 1,
        started: '2025-07-02',
        periodStart: '2025-07-01',
        periodEnd: '2025-07-31',
        expires: '2025-08-31',
        extended: true,
      }),
    );
    // February of a leap year.
    expect(await at('2028-02-10T00:00:00Z', 'monthly', uid(), 1)).toMatchObject({
      periodStart: '2028-02-01',
      periodEnd: '2028-02-29',
      expires: '2028-03-31',
    });
  });

  it('reports extended only on the event that met the period', async () => {
    const m = await metric('extended');
    await configure({ conditions: [{ metricId: m.id, threshold: 3 }] });
    const u = uid();
    const today = { periodStart: '2025-03-10', periodEnd: '2025-03-10' };
    expect(await at('2025-03-10T12:00:00Z', 'extended', u, 1)).toEqual(streak({ length: 0, ...today }));
    expect(await at('2025-03-10T12:01:00Z', 'extended', u, 1.5)).toEqual(streak({ length: 0, ...today }));
    expect(await at('2025-03-10T12:02:00Z', 'extended', u, 0.5)).toEqual(
      streak({ length: 1, started: '2025-03-10', expires: '2025-03-11', extended: true, ...today }),
    );
    expect(await at('2025-03-10T12:03:00Z', 'extended', u, 10)).toEqual(
      streak({ length: 1, started: '2025-03-10', expires: '2025-03-11', extended: false, ...today }),
    );
  });

  it('mode all: every condition metric must reach its threshold', async () => {
    const a = await metric('all-a');
    const b = await metric('all-b');
    await configure({
      mode: 'all',
      conditions: [
        { metricId: a.id, threshold: 2 },
        { metricId: b.id, threshold: 1.5 },
      ],
    });
    const u = uid();
    expect(await at('2025-03-10T12:00:00Z', 'all-a', u, 2)).toMatchObject({ length: 0, extended: false });
    expect(await at('2025-03-10T12:01:00Z', 'all-b', u, 1)).toMatchObject({ length: 0, extended: false });
    expect(await at('2025-03-10T12:02:00Z', 'all-b', u, 0.5)).toMatchObject({
      length: 1,
      extended: true,
      started: '2025-03-10',
    });
    // Next day: sums start again from 0.
    expect(await at('2025-03-11T12:00:00Z', 'all-b', u, 5)).toMatchObject({ length: 1, extended: false });
    expect(await at('2025-03-11T12:01:00Z', 'all-a', u, 1.999999)).toMatchObject({
      length: 1,
      extended: false,
    });
    expect(await at('2025-03-11T12:02:00Z', 'all-a', u, 0.000001)).toMatchObject({
      length: 2,
      extended: true,
    });
  });

  it('mode any: one condition metric reaching its threshold is enough', async () => {
    const a = await metric('any-a');
    const b = await metric('any-b');
    await metric('any-other');
    await configure({
      mode: 'any',
      conditions: [
        { metricId: a.id, threshold: 2 },
        { metricId: b.id, threshold: 1.5 },
      ],
    });
    const u = uid();
    expect(await at('2025-03-10T12:00:00Z', 'any-b', u, 1.5)).toMatchObject({ length: 1, extended: true });
    const v = uid();
    expect(await at('2025-03-10T12:00:00Z', 'any-a', v, 1)).toMatchObject({ length: 0 });
    expect(await at('2025-03-10T12:00:00Z', 'any-b', v, 1)).toMatchObject({ length: 0 });
    expect(await at('2025-03-10T12:00:00Z', 'any-a', v, 1)).toMatchObject({ length: 1, extended: true });
    // An event of a metric outside the conditions reports the streak unchanged.
    expect(await at('2025-03-10T13:00:00Z', 'any-other', v, 100)).toEqual(
      streak({
        length: 1,
        started: '2025-03-10',
        periodStart: '2025-03-10',
        periodEnd: '2025-03-10',
        expires: '2025-03-11',
      }),
    );
  });

  it('a missed day breaks the streak to 0; it restarts at 1 with a new started date', async () => {
    const m = await metric('break');
    await configure({ conditions: [{ metricId: m.id, threshold: 1 }] });
    const u = uid();
    expect(await at('2025-03-10T12:00:00Z', 'break', u, 1)).toMatchObject({
      length: 1,
      started: '2025-03-10',
    });
    expect(await at('2025-03-11T12:00:00Z', 'break', u, 1)).toMatchObject({
      length: 2,
      started: '2025-03-10',
      expires: '2025-03-12',
    });
    // Still alive on the 12th before meeting it.
    expect(await at('2025-03-12T12:00:00Z', 'break', u, 0.5)).toEqual(
      streak({
        length: 2,
        started: '2025-03-10',
        periodStart: '2025-03-12',
        periodEnd: '2025-03-12',
        expires: '2025-03-12',
      }),
    );
    // 12 March was not met: on the 13th the streak is broken.
    expect(await at('2025-03-13T12:00:00Z', 'break', u, 0.5)).toEqual(
      streak({ length: 0, periodStart: '2025-03-13', periodEnd: '2025-03-13' }),
    );
    expect(await at('2025-03-13T12:01:00Z', 'break', u, 0.5)).toEqual(
      streak({
        length: 1,
        started: '2025-03-13',
        periodStart: '2025-03-13',
        periodEnd: '2025-03-13',
        expires: '2025-03-14',
        extended: true,
      }),
    );
    expect(await at('2025-03-14T12:01:00Z', 'break', u, 3)).toMatchObject({
      length: 2,
      started: '2025-03-13',
      extended: true,
    });
  });

  it('freezes: initial grant, a missed day consumes one and keeps the length, the next missed day breaks', async () => {
    const m = await metric('freeze');
    await configure({
      conditions: [{ metricId: m.id, threshold: 1 }],
      freezesEnabled: true,
      maxFreezes: 3,
      initialFreezes: 1,
    });
    const u = uid();
    const f = (fields: Record<string, unknown>) => streak({ maxFreezes: 3, ...fields });
    // Created on the 10th with the initial freeze (shown even before any period is met).
    expect(await at('2025-03-10T12:00:00Z', 'freeze', u, 0.5)).toEqual(
      f({ length: 0, periodStart: '2025-03-10', periodEnd: '2025-03-10', freezes: 1 }),
    );
    expect(await at('2025-03-10T12:01:00Z', 'freeze', u, 0.5)).toEqual(
      f({
        length: 1,
        started: '2025-03-10',
        periodStart: '2025-03-10',
        periodEnd: '2025-03-10',
        expires: '2025-03-11',
        extended: true,
        freezes: 1,
      }),
    );
    // 11 March missed: on the 12th the freeze bridged it (length kept, not increased).
    expect(await at('2025-03-12T12:00:00Z', 'freeze', u, 0.5)).toEqual(
      f({
        length: 1,
        started: '2025-03-10',
        periodStart: '2025-03-12',
        periodEnd: '2025-03-12',
        expires: '2025-03-12',
        freezes: 0,
      }),
    );
    expect(await at('2025-03-12T12:01:00Z', 'freeze', u, 0.5)).toEqual(
      f({
        length: 2,
        started: '2025-03-10',
        periodStart: '2025-03-12',
        periodEnd: '2025-03-12',
        expires: '2025-03-13',
        extended: true,
        freezes: 0,
      }),
    );
    // 13 March missed with no freeze left: broken on the 14th.
    expect(await at('2025-03-14T12:00:00Z', 'freeze', u, 0.5)).toEqual(
      f({ length: 0, periodStart: '2025-03-14', periodEnd: '2025-03-14', freezes: 0 }),
    );
    expect(await at('2025-03-14T12:01:00Z', 'freeze', u, 1)).toMatchObject({
      length: 1,
      started: '2025-03-14',
      freezes: 0,
      extended: true,
    });
  });

  it('freezes: several missed days consume one freeze each, oldest first', async () => {
    const m = await metric('freeze-many');
    await configure({
      conditions: [{ metricId: m.id, threshold: 1 }],
      freezesEnabled: true,
      maxFreezes: 5,
      initialFreezes: 2,
      freezeAutoEarnAmount: 1,
      freezeAutoEarnInterval: 30,
    });
    const u = uid();
    expect(await at('2025-03-10T12:00:00Z', 'freeze-many', u, 1)).toEqual(
      streak({
        length: 1,
        started: '2025-03-10',
        periodStart: '2025-03-10',
        periodEnd: '2025-03-10',
        expires: '2025-03-11',
        extended: true,
        freezes: 2,
        maxFreezes: 5,
        freezeAutoEarnInterval: 30,
        freezeAutoEarnAmount: 1,
      }),
    );
    // 11 and 12 March missed: two freezes bridge them.
    expect(await at('2025-03-13T12:00:00Z', 'freeze-many', u, 1)).toMatchObject({
      length: 2,
      freezes: 0,
      started: '2025-03-10',
      extended: true,
    });
    // Three missed days with no freezes: broken.
    const v = uid();
    expect(await at('2025-03-10T12:00:00Z', 'freeze-many', v, 1)).toMatchObject({ length: 1, freezes: 2 });
    expect(await at('2025-03-14T12:00:00Z', 'freeze-many', v, 0)).toMatchObject({
      length: 0,
      freezes: 0,
      started: null,
      expires: null,
    });
  });

  it('initial freezes are granted once, when the user is created, capped at the maximum', async () => {
    const m = await metric('initial');
    await configure({
      conditions: [{ metricId: m.id, threshold: 1 }],
      freezesEnabled: true,
      maxFreezes: 4,
      initialFreezes: 4,
    });
    const u = uid();
    expect(await at('2025-03-10T12:00:00Z', 'initial', u, 1)).toMatchObject({ freezes: 4, maxFreezes: 4 });
    expect(await at('2025-03-10T12:01:00Z', 'initial', u, 1)).toMatchObject({ freezes: 4 });
    await configure({
      conditions: [{ metricId: m.id, threshold: 1 }],
      freezesEnabled: true,
      maxFreezes: 4,
      initialFreezes: 0,
    });
    expect(await at('2025-03-10T12:02:00Z', 'initial', uid(), 1)).toMatchObject({
      freezes: 0,
      maxFreezes: 4,
    });
    // The earlier user keeps the balance.
    expect(await at('2025-03-10T12:03:00Z', 'initial', u, 1)).toMatchObject({ freezes: 4 });
  });

  it('without freezes enabled no freeze fields are shown and no freeze is used', async () => {
    const m = await metric('nofreeze');
    await configure({
      conditions: [{ metricId: m.id, threshold: 1 }],
      freezesEnabled: false,
      maxFreezes: 3,
      initialFreezes: 3,
    });
    const u = uid();
    const first = await at('2025-03-10T12:00:00Z', 'nofreeze', u, 1);
    expect(first).not.toHaveProperty('freezes');
    expect(first).not.toHaveProperty('maxFreezes');
    expect(await at('2025-03-12T12:00:00Z', 'nofreeze', u, 0)).toMatchObject({ length: 0 });
  });

  it('a negative event after meeting the period keeps it met', async () => {
    const m = await metric('negative');
    await configure({ conditions: [{ metricId: m.id, threshold: 2 }] });
    const u = uid();
    expect(await at('2025-03-10T12:00:00Z', 'negative', u, 3)).toMatchObject({ length: 1, extended: true });
    expect(await at('2025-03-10T12:01:00Z', 'negative', u, -5)).toMatchObject({
      length: 1,
      extended: false,
      expires: '2025-03-11',
    });
    expect(await at('2025-03-10T12:02:00Z', 'negative', u, 3)).toMatchObject({ length: 1, extended: false });
    expect(await at('2025-03-11T12:00:00Z', 'negative', u, 2)).toMatchObject({ length: 2, extended: true });
    // Before meeting, negative values lower the period sum.
    const v = uid();
    expect(await at('2025-03-12T12:00:00Z', 'negative', v, -1)).toMatchObject({ length: 0 });
    expect(await at('2025-03-12T12:01:00Z', 'negative', v, 2)).toMatchObject({ length: 0 });
    expect(await at('2025-03-12T12:02:00Z', 'negative', v, 1)).toMatchObject({ length: 1, extended: true });
  });

  it('reports length 0 and no period while streaks are disabled', async () => {
    const m = await metric('disabled');
    await configure({ conditions: [{ metricId: m.id, threshold: 1 }] });
    const u = uid();
    expect(await at('2025-03-10T12:00:00Z', 'disabled', u, 1)).toMatchObject({ length: 1 });
    const off = await t.admin('PATCH', '/streaks/settings', { enabled: false });
    expect(off.status).toBe(200);
    expect(await at('2025-03-11T12:00:00Z', 'disabled', u, 1)).toEqual(
      streak({ length: 0, periodStart: null, periodEnd: null }),
    );
  });

  it('a pause bridges a missed period without using a freeze', async () => {
    const m = await metric('pause');
    await configure({
      conditions: [{ metricId: m.id, threshold: 1 }],
      freezesEnabled: true,
      maxFreezes: 2,
      initialFreezes: 1,
    });
    const u = uid();
    expect(await at('2025-03-10T12:00:00Z', 'pause', u, 1)).toMatchObject({ length: 1, freezes: 1 });
    const p = await t.admin('POST', '/streaks/pauses', {
      pauses: [{ userId: u, start: '2025-03-11', end: '2025-03-11' }],
    });
    expect(p.body.issues).toEqual([]);
    expect(await at('2025-03-12T12:00:00Z', 'pause', u, 0)).toMatchObject({
      length: 1,
      freezes: 1,
      expires: '2025-03-12',
    });
    expect(await at('2025-03-12T12:01:00Z', 'pause', u, 1)).toMatchObject({
      length: 2,
      freezes: 1,
      extended: true,
    });
  });

  it("keeps in the user's state only the pauses that can still bridge a period", async () => {
    const m = await metric('pause-prune');
    await configure({ conditions: [{ metricId: m.id, threshold: 1 }] });
    const u = uid();
    const pause = async (now: string, start: string, end: string) => {
      t.clock.set(now);
      const p = await t.admin('POST', '/streaks/pauses', { pauses: [{ userId: u, start, end }] });
      expect(p.body.issues).toEqual([]);
    };
    const stored = async () => {
      const raw = await t.deps.redis.hget(t.deps.keys.user(u).hash, userField('streak', 'pauses'));
      return (JSON.parse(raw ?? '[]') as Array<[number, number]>).map(([a, b]) => [
        dateOfDay(a),
        dateOfDay(b),
      ]);
    };
    expect(await at('2025-04-01T12:00:00Z', 'pause-prune', u, 1)).toMatchObject({ length: 1 });
    await pause('2025-04-01T13:00:00Z', '2025-04-02', '2025-04-02');
    expect(await at('2025-04-03T12:00:00Z', 'pause-prune', u, 1)).toMatchObject({ length: 2 });
    // The latest met day is 3 Apr: the pause of 2 Apr can bridge nothing any more.
    await pause('2025-04-03T13:00:00Z', '2025-04-04', '2025-04-05');
    expect(await stored()).toEqual([['2025-04-04', '2025-04-05']]);
    expect(await at('2025-04-06T12:00:00Z', 'pause-prune', u, 1)).toMatchObject({ length: 3 });
    await pause('2025-04-06T13:00:00Z', '2025-04-07', '2025-04-07');
    // 7 Apr is not resolved yet on 8 Apr (no event since 6 Apr): its pause stays; 4-5 Apr's goes.
    await pause('2025-04-08T06:00:00Z', '2025-04-09', '2025-04-09');
    expect(await stored()).toEqual([
      ['2025-04-07', '2025-04-07'],
      ['2025-04-09', '2025-04-09'],
    ]);
    expect(await at('2025-04-08T12:00:00Z', 'pause-prune', u, 1)).toMatchObject({ length: 4 });
    expect(await at('2025-04-10T12:00:00Z', 'pause-prune', u, 1)).toMatchObject({ length: 5 });
    // Postgres keeps every pause.
    const all = await t.deps.db.select().from(streakPauses).where(eq(streakPauses.userId, u));
    expect(all).toHaveLength(4);
  });
});
