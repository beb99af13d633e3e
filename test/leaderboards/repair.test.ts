import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runUserOp } from '../../src/services/user-op';
import { HistoryWriter } from '../../src/workers/history-writer';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { spyOwnCalls } from '../helpers/spy';
import { createBoard, standings } from '../helpers/leaderboards';

// The history writer repairs the board moves of an op whose API process died after the user script
// (src/workers/history-writer.ts reapplyBoards): an open run gets the move, a run finalised in the
// meantime does not (its rankings are its snapshot, and its Redis keys are removed once taken).

let t: TestServer;
let m: { id: string; key: string };
let daily: any;

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-10T12:00:00Z' });
  [m] = await adminCreate(t, '/metrics', [{ key: 'rp-m', name: 'M' }]);
  daily = await createBoard(t, {
    key: 'rp-daily',
    rankBy: 'metric',
    metricId: m.id,
    runUnit: 'day',
    runInterval: 1,
  });
});
afterAll(async () => t.close());

/** An event whose process makes no board move (rankings: false): as if it died after the script. */
const eventWithoutMoves = (user: string, value: number) =>
  runUserOp(
    { ...t.deps, rankings: false },
    { kind: 'event', metricId: m.id, user: { id: user }, valueMicros: value * 1_000_000 },
  );

async function drainCountingRepairs(): Promise<number> {
  const repairs = spyOwnCalls(t.deps.redis, 'updateBoard');
  try {
    const writer = new HistoryWriter(t.deps, { consumer: 'rp-writer' });
    while ((await writer.drainOnce()) > 0) {}
    return repairs.calls().length;
  } finally {
    repairs.restore();
  }
}

describe('the history writer repairs missing board moves', () => {
  it('applies a missing move to an open run', async () => {
    await eventWithoutMoves('rp-1', 3);
    expect(await standings(t, daily.key)).toEqual([]);
    expect(await drainCountingRepairs()).toBe(1);
    expect(await standings(t, daily.key)).toEqual([['rp-1', 3]]);
  });

  it('leaves a missing move alone once its run is finalised, and writes none of its keys back', async () => {
    await eventWithoutMoves('rp-2', 5);
    // 12:00 the day after the run's end finalises it (src/engine/runs.ts runFinalizationMs).
    t.clock.set('2025-03-11T12:00:01Z');
    const bk = t.deps.keys.board(daily.id);
    await t.deps.redis.unlink(bk.members('2025-03-10'), bk.ranking('2025-03-10', ''));
    expect(await drainCountingRepairs()).toBe(0);
    expect(await t.deps.redis.exists(bk.members('2025-03-10'), bk.ranking('2025-03-10', ''))).toBe(0);
  });
});
