import type { Snapshot } from '../catalog/snapshot';
import { addDays, dayIndex, type Frequency, instantOfLocalMidnight, periodBounds } from './periods';
import type { StreakState } from './user-op-result';

/**
 * When a streak stops counting without activity: the end of the first period after the latest met
 * one that neither a pause covers nor a freeze bridges (semantics §4.5: pauses first, then freezes).
 */
export function streakExpiry(snap: Snapshot, r: { tz: string; streak: StreakState }): number {
  if (r.streak.length <= 0 || r.streak.lastMet === undefined) return 0;
  const freq = snap.streak.frequency;
  let freezes = snap.streak.freezesEnabled ? r.streak.freezes : 0;
  const pauses = r.streak.pauses ?? [];
  let p = r.streak.lastMet + 1;
  // Pauses are finite (start..end), so this ends; 10,000 periods is a guard, not a rule.
  for (let guard = 0; guard < 10_000; guard++) {
    const { start, end } = periodBounds(freq, p);
    const first = dayIndex(start);
    const last = dayIndex(end);
    if (pauses.some(([a, b]) => a <= last && b >= first)) p++;
    else if (freezes > 0) {
      freezes--;
      p++;
    } else break;
  }
  return periodExpiry(freq, p, r.tz);
}

/** The instant a streak whose last covered period is `idx` stops counting: the next local midnight. */
export function periodExpiry(freq: Frequency, idx: number, tz: string): number {
  return instantOfLocalMidnight(addDays(periodBounds(freq, idx).end, 1), tz);
}
