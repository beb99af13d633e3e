import type { Snapshot } from '../catalog/snapshot';
import { addDays, type Frequency, instantOfLocalMidnight, periodBounds } from './periods';
import type { UserOpResult } from './user-op';

/** When a streak stops counting without activity: the end of the period after the freezes run out. */
export function streakExpiry(snap: Snapshot, r: Pick<UserOpResult, 'streak' | 'tz'>): number {
  if (r.streak.length <= 0 || r.streak.lastMet === undefined) return 0;
  const freezes = snap.streak.freezesEnabled ? r.streak.freezes : 0;
  return periodExpiry(snap.streak.frequency, r.streak.lastMet + 1 + freezes, r.tz);
}

/** The instant a streak whose last covered period is `idx` stops counting: the next local midnight. */
export function periodExpiry(freq: Frequency, idx: number, tz: string): number {
  return instantOfLocalMidnight(addDays(periodBounds(freq, idx).end, 1), tz);
}
