import { setFlagsFromString } from 'node:v8';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runUserOp, type UserOpResult } from '../../src/services/user-op';
import { completedAchievements, leaderboardEntries, pointsMap } from '../../src/wire/event-response';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { createBoard } from '../helpers/leaderboards';

// An event's result and response objects must keep V8's hidden classes from one event to the next.
// In Node 20 an object spread with fields after it ({ ...base, more }) gets a map of its own on every
// call once the code is optimised, and each added field a new map and descriptor array: about 13 per
// event in finishOp alone, all old-generation garbage (src/wire/common.ts extend). Compared here with
// V8's %HaveSameMap, after enough calls for the builders to be optimised.

setFlagsFromString('--allow-natives-syntax');
// Compiled after the flag is set, so the natives syntax is allowed in it.
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

let t: TestServer;
let results: UserOpResult[];

beforeAll(async () => {
  t = await createTestServer();
  const [m] = await adminCreate(t, '/metrics', [{ key: 'hc-m', name: 'M' }]);
  await adminCreate(t, '/achievements', [
    { key: 'hc-first', name: 'First', trigger: 'metric', metricId: m.id, metricValue: 1, status: 'active' },
  ]);
  const [xp] = await adminCreate(t, '/points', [{ key: 'hc-xp', name: 'XP' }]);
  await adminCreate(t, `/points/${xp.id}/triggers`, [
    { type: 'metric', points: 10, metricId: m.id, metricThreshold: 1, status: 'active' },
  ]);
  await adminCreate(t, `/points/${xp.id}/levels`, [{ key: 'hc-bronze', name: 'Bronze', points: 5 }]);
  await createBoard(t, { rankBy: 'metric', metricId: m.id, maxParticipants: 100 });
  await t.deps.catalog.reload();
  results = [];
  for (let i = 0; i < 40; i++) {
    results.push(
      await runUserOp(t.deps, { kind: 'event', metricId: m.id, user: { id: `hc-u${i}` }, valueMicros: 1e6 }),
    );
  }
});
afterAll(async () => t.close());

/** The builder's output for every result, 50 rounds over them (optimised by the last rounds). */
function built<T>(build: (r: UserOpResult) => T): T[] {
  let out: T[] = [];
  for (let round = 0; round < 50; round++) out = results.map(build);
  return out;
}

describe('hidden classes of an event', () => {
  it('gives every new user event the same result shape', () => {
    const [first, last] = [results[0]!, results.at(-1)!];
    expect(first.created && last.created).toBe(true);
    expect(sameMap(first, last)).toBe(true);
    expect(sameMap(first.points[0]!, last.points[0]!)).toBe(true);
  });

  it('builds the response maps of every event with the same hidden classes', () => {
    const snap = t.deps.catalog.snapshot;
    const points = built((r) => pointsMap(snap, r)['hc-xp'] as object);
    const achievements = built((r) => completedAchievements(snap, r)[0] as object);
    const boards = built((r) => Object.values(leaderboardEntries(t.deps, r))[0] as object);
    for (const list of [points, achievements, boards]) {
      expect(list.every((o) => o !== undefined)).toBe(true);
      expect(list.every((o) => sameMap(o, list[0]!))).toBe(true);
    }
  });
});
