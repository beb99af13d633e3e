// src/engine/evaluate-event.ts (the event op evaluated in TypeScript) against lua/applyUserOp.lua on
// the same ops: every single-op call of the user script is intercepted, the user's state is read
// before it, the TypeScript evaluation runs on that state, the script runs, and what the script wrote
// and answered must be what the evaluation said, field for field (the user hash, the period history,
// the recent-awards lists, the user index, the idempotency bucket, the record and the outbox entry's
// x and w). Random event sequences over the mixed configuration (test/helpers/rebuild.ts): two
// metrics, filters, a capped points system with every event trigger kind, levels, a boost, composite
// achievements, a daily streak with freezes, four boards.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { evaluateEvent, type EventState } from '../../src/engine/evaluate-event';
import type { Plan } from '../../src/engine/plan';
import type { UserScriptContext, UserScriptInput } from '../../src/redis/user-script';
import { EVENT_ZONES, eventFields, flatPairs, normalizeRecord } from '../helpers/records';
import { mixedSetup } from '../helpers/rebuild';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

/**
 * A second configuration, for what the mixed one leaves out: a weekly streak met by any of two
 * conditions, no freezes, levels at 0 points (a new user's first level, with and without an award),
 * an uncapped system with a user-filtered trigger, a capped one, 'nearest' and mixed roundings (two boosts), a daily-run points board.
 */
async function otherSetup(t: TestServer): Promise<void> {
  const [region, kind] = await adminCreate(t, '/attributes', [
    { key: 'region', name: 'Region', type: 'user' },
    { key: 'kind', name: 'Kind', type: 'event' },
  ]);
  const [lessons, minutes] = await adminCreate(t, '/metrics', [
    { key: 'lessons', name: 'Lessons' },
    { key: 'minutes', name: 'Minutes' },
  ]);
  const [two, streak2] = await adminCreate(t, '/achievements', [
    { key: 'two', name: 'Two', trigger: 'metric', metricId: lessons.id, metricValue: 2, status: 'active' },
    { key: 'weeks', name: 'Weeks', trigger: 'streak', streakLength: 2, status: 'active' },
    {
      key: 'eu-five',
      name: 'EU five',
      trigger: 'metric',
      metricId: minutes.id,
      metricValue: 5,
      userAttributes: [{ attributeId: region.id, attributeValue: 'eu' }],
      status: 'active',
    },
  ]);
  await adminCreate(t, '/achievements', [
    {
      key: 'both',
      name: 'Both',
      trigger: 'achievement',
      achievementIds: [two.id, streak2.id],
      status: 'active',
    },
  ]);
  const [gems] = await adminCreate(t, '/points', [{ key: 'gems', name: 'Gems' }]);
  await adminCreate(t, `/points/${gems.id}/triggers`, [
    { type: 'metric', points: 3, metricId: lessons.id, metricThreshold: 1, status: 'active' },
    {
      type: 'metric',
      points: 5,
      metricId: minutes.id,
      metricThreshold: 1.5,
      userAttributes: [{ attributeId: region.id, attributeValue: 'us' }],
      eventAttributes: [{ attributeId: kind.id, attributeValue: 'quiz' }],
      status: 'active',
    },
    { type: 'user_creation', points: 1, status: 'active' },
    { type: 'streak', points: 9, streakLength: 1, status: 'active' },
    { type: 'achievement', points: -2, achievementId: two.id, status: 'active' },
  ]);
  await adminCreate(t, `/points/${gems.id}/levels`, [
    { key: 'start', name: 'Start', points: 0 },
    { key: 'ten', name: 'Ten', points: 10 },
    { key: 'forty', name: 'Forty', points: 40 },
  ]);
  await adminCreate(t, `/points/${gems.id}/boosts`, [
    { name: 'Half more', start: '2025-03-01', multiplier: 1.5, rounding: 'nearest' },
    {
      name: 'US quarter',
      start: '2025-03-01',
      multiplier: 1.25,
      rounding: 'up',
      userAttributes: [{ attributeId: region.id, attributeValue: 'us' }],
    },
  ]);
  // A system a new user reaches the first level of without an award (semantics §5.11).
  const [stars] = await adminCreate(t, '/points', [{ key: 'stars', name: 'Stars', maxPoints: 12 }]);
  await adminCreate(t, `/points/${stars.id}/triggers`, [
    { type: 'metric', points: 5, metricId: minutes.id, metricThreshold: 4, status: 'active' },
  ]);
  await adminCreate(t, `/points/${stars.id}/levels`, [{ key: 'zero', name: 'Zero', points: 0 }]);
  const s = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    frequency: 'weekly',
    mode: 'any',
    conditions: [
      { metricId: lessons.id, threshold: 2 },
      { metricId: minutes.id, threshold: 3 },
    ],
  });
  expect(s.status).toBe(200);
  await adminCreate(t, '/leaderboards', [
    {
      key: 'daily-gems',
      name: 'Daily gems',
      rankBy: 'points',
      pointsSystemId: gems.id,
      start: '2025-03-01',
      runUnit: 'day',
      runInterval: 1,
      maxParticipants: 2,
      status: 'active',
    },
    { key: 'weeks', name: 'Weeks', rankBy: 'streak', start: '2025-03-01', status: 'active' },
    {
      key: 'lessons',
      name: 'Lessons',
      rankBy: 'metric',
      metricId: lessons.id,
      start: '2025-03-01',
      status: 'active',
    },
  ]);
}

let t: TestServer;

interface Checked {
  writes: number;
  script: number;
  errors: number;
}

/** Wraps the client's applyUserOp so that each single-op call is checked against the evaluation. */
function checkEveryCall(counts: Checked, failures: unknown[]) {
  const redis = t.deps.redis;
  const original = redis.applyUserOp.bind(redis) as (...args: unknown[]) => Promise<unknown>;
  return vi.spyOn(redis, 'applyUserOp').mockImplementation((async (...args: unknown[]) => {
    const n = Number(args[0]);
    const keys = args.slice(1, 1 + n) as string[];
    const [planJson, inputJson, , ctxJson] = args.slice(1 + n) as string[];
    if (planJson === undefined || planJson.startsWith('__')) return original(...args);
    const plan = JSON.parse(planJson) as Plan;
    const input = JSON.parse(inputJson!) as UserScriptInput;
    const ctx = JSON.parse(ctxJson!) as UserScriptContext;
    if (input.op !== 'event') return original(...args);
    const [kUser, kIdem, kOutbox, , kUsers, kHist] = keys as [string, string, string, string, string, string];
    const awardKeys = plan.systems.map((_, i) => keys[6 + i]!);
    const idemHit = async () => {
      if (!input.idem) return false;
      const at = async (key: string | undefined) => {
        if (!key) return false;
        const v = await redis.hget(key, input.idem!.f);
        if (v === null) return false;
        const ms = /\|(\d+)$/.exec(v)?.[1] ?? (/^\d+$/.test(v) ? v : '0');
        return input.idem!.win === 0 || input.now - Number(ms) < input.idem!.win;
      };
      return (await at(kIdem)) || (await at(input.idem.prevKi ? keys[input.idem.prevKi - 1] : undefined));
    };
    const state: EventState = {
      hash: await redis.hgetall(kUser),
      hist: await redis.get(kHist),
      idemRemembered: await idemHit(),
    };
    const before = {
      hash: { ...state.hash },
      awards: await Promise.all(awardKeys.map((k) => redis.lrange(k, 0, -1))),
      outbox: await redis.xlen(kOutbox),
    };
    const ev = evaluateEvent(plan, input, ctx, structuredClone(state));
    const reply = await original(...args);
    const raw = String(Array.isArray(reply) ? reply[0] : reply);
    try {
      if (ev.kind === 'script') {
        counts.script++;
        if (state.idemRemembered) expect(JSON.parse(raw)).toHaveProperty('replay');
        return reply;
      }
      if (ev.kind === 'error') {
        counts.errors++;
        expect(JSON.parse(raw)).toEqual({ err: ev.err });
        return reply;
      }
      counts.writes++;
      // The user hash.
      const expected: Record<string, string> = { ...before.hash };
      for (const f of [...(ev.premoved ?? []), ...(ev.streakLegacy ?? [])]) delete expected[f];
      if (ev.streakStaleHist) delete expected['s:hist'];
      for (const [f, v] of ev.puts) expected[f] = v;
      expect(await redis.hgetall(kUser)).toEqual(expected);
      // The period history.
      const hist = ev.hist === null ? state.hist : ev.hist === false ? null : ev.hist;
      expect(await redis.get(kHist)).toBe(hist);
      // The recent-awards lists: each award pushed at the head, the newest 10 kept.
      for (const [i, key] of awardKeys.entries()) {
        const pushed = ev.awardLists.find((l) => l.system === i)?.entries ?? [];
        const want = [...[...pushed].reverse(), ...before.awards[i]!];
        expect(await redis.lrange(key, 0, -1)).toEqual(
          pushed.length > 0 && want.length > 10 ? want.slice(0, 10) : want,
        );
      }
      if (ev.created) expect(Number(await redis.zscore(kUsers, input.user.id))).toBe(input.now);
      if (ev.idem) expect(await redis.hget(kIdem, ev.idem.field)).toBe(ev.idem.value);
      // The record (without what the fused board moves add: moves, boards[].ap).
      const record = JSON.parse(raw) as Record<string, unknown>;
      delete record.moves;
      for (const b of (Array.isArray(record.boards) ? record.boards : []) as Array<Record<string, unknown>>)
        delete b.ap;
      expect(normalizeRecord(record)).toEqual(normalizeRecord(ev.record));
      // The board values the script stored (the user hash above) and put in the record match; the
      // evaluation's per-board map says the same.
      expect([...ev.boardValues.keys()].map((i) => ctx.boards[i]!.id)).toEqual(
        (ev.record.boards as Array<{ id: string }>).map((b) => b.id),
      );
      // The outbox entry: x without ts, and w exactly when there is level news.
      expect(await redis.xlen(kOutbox)).toBe(before.outbox + 1);
      const [[, fields]] = (await redis.xrevrange(kOutbox, '+', '-', 'COUNT', 1)) as [[string, string[]]];
      const entry = flatPairs(fields);
      expect(entry.r).toBe(raw);
      const x = JSON.parse(entry.x!) as Record<string, unknown>;
      expect(x.ts).toMatch(/^\d+$/);
      delete x.ts;
      const { cw: xcw, ...xrest } = x;
      const { cw: ecw, ...erest } = ev.extra;
      expect(flatPairs(xcw)).toEqual(flatPairs(ecw));
      expect(normalizeRecord(xrest)).toEqual(normalizeRecord(erest));
      expect('w' in entry).toBe(ev.levelNews);
    } catch (err) {
      failures.push({ input, state, err });
    }
    return reply;
  }) as never);
}

const opArb = fc.record({
  ...eventFields,
  user: fc.integer({ min: 0, max: 3 }),
  hours: fc.constantFrom(0, 0, 1, 5, 20, 26, 50, 75),
  key: fc.constantFrom(undefined, undefined, undefined, 'a', 'b'),
});

describe.each([
  ['the mixed configuration', mixedSetup],
  ['a weekly any-condition streak, a 0-point level and mixed roundings', otherSetup],
])('the event op in TypeScript (src/engine/evaluate-event.ts) and lua/applyUserOp.lua, %s', (_, setup) => {
  beforeAll(async () => {
    // EVALUATE_EVENTS off, whatever the suite runs with: every event reaches the user script.
    t = await createTestServer({ env: { EVALUATE_EVENTS: '0' } });
    await setup(t);
  });
  afterAll(async () => t.close());

  it('write and answer the same for random event sequences', async () => {
    const counts: Checked = { writes: 0, script: 0, errors: 0 };
    const failures: unknown[] = [];
    const spy = checkEveryCall(counts, failures);
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 25 }), async (ops) => {
          run++;
          for (const op of ops) {
            t.clock.advance(op.hours * 3600_000);
            const id = `ev${run}-${op.user}`;
            const user: Record<string, unknown> = { id, tz: EVENT_ZONES[op.user % EVENT_ZONES.length] };
            if (op.region) user.attributes = { region: op.region };
            const res = await t.api(
              'POST',
              `/v1/metrics/${op.metric}/event`,
              { user, value: op.value, ...(op.kind ? { attributes: { kind: op.kind } } : {}) },
              op.key ? { 'Idempotency-Key': `${id}-${op.key}` } : {},
            );
            expect([201, 202]).toContain(res.status);
          }
          expect(failures).toEqual([]);
        }),
        { numRuns: 12 },
      );
    } finally {
      spy.mockRestore();
    }
    expect(failures).toEqual([]);
    // The sequences reach every kind of outcome the evaluation has: every sequence's first event creates
    // a user, so each compares writes at least once (a fixed count over random lengths of 5-25 events
    // failed once in about 20 runs: 99 against more than 100).
    expect(counts.writes).toBeGreaterThanOrEqual(run);
    expect(counts.script).toBeGreaterThan(0);
  });
});
