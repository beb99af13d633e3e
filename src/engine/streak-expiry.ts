import type { Snapshot } from '../catalog/snapshot';
import { addDays, instantOfLocalMidnight, periodBounds } from './periods';
import type { UserOpResult } from './user-op';

/** When a streak stops counting without activity: the end of the period after the freezes run out. */
export function streakExpiry(snap: Snapshot, r: Pick<UserOpResult, 'streak' | 'tz'>): number {
  if (r.streak.length <= 0 || r.streak.lastMet === undefined) return 0;
  const freezes = snap.streak.freezesEnabled ? r.streak.freezes : 0;
  const lastCovered = periodBounds(snap.streak.frequency, r.streak.lastMet + 1 + freezes).end;
  return instantOfLocalMidnight(addDays(lastCovered, 1), r.tz);
}
