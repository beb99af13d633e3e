import { describe, expect, it } from 'vitest';
import type { Snapshot } from '../../src/catalog/snapshot';
import { streakExpiry } from '../../src/engine/streak-expiry';
import { expiryOf } from '../../src/rebuild/record';
import type { OutboxRecord } from '../../src/redis/user-script';

const snapshot = (frequency: 'daily' | 'weekly', freezesEnabled: boolean) =>
  ({ streak: { frequency, freezesEnabled } }) as unknown as Snapshot;
const record = (streak: Partial<OutboxRecord['streak']>, tz = 'UTC') =>
  ({ tz, streak: { length: 3, freezes: 0, extended: true, lastMet: 20_000, ...streak } }) as OutboxRecord;

describe('expiryOf (the history writer’s remembered streakExpiry)', () => {
  it('answers as streakExpiry for every state and zone, per configuration snapshot', () => {
    const snaps = [snapshot('daily', true), snapshot('weekly', true), snapshot('daily', false)];
    const records = [
      record({}),
      record({}, 'Asia/Tokyo'),
      record({ freezes: 2 }),
      record({ freezes: 2 }, 'America/Los_Angeles'),
      record({ pauses: [[20_001, 20_003]] }),
      record({ pauses: [[20_001, 20_005]], freezes: 1 }),
      record({ lastMet: 20_010 }),
      record({ length: 0 }),
      record({ lastMet: undefined }),
    ];
    // Twice over: the second round answers from memory and must not differ.
    for (let round = 0; round < 2; round++)
      for (const snap of snaps)
        for (const r of records) expect(expiryOf(snap, r)).toBe(streakExpiry(snap, r));
    expect(expiryOf(snaps[0]!, record({ freezes: 2 }))).not.toBe(expiryOf(snaps[2]!, record({ freezes: 2 })));
  });
});
