import type { Snapshot } from '../catalog/snapshot';
import { periodBounds } from '../engine/periods';
import type { LuaStreak } from '../services/user-op';

/** BaseStreakResponse for a streak state seen on the period `periodIdx` (the user's today). */
export function streakResponse(
  snap: Snapshot,
  s: Pick<LuaStreak, 'length' | 'started' | 'lastMet' | 'freezes'>,
  periodIdx: number,
) {
  const cfg = snap.streak;
  const freq = cfg.frequency;
  const enabled = cfg.enabled && cfg.conditions.length > 0;
  const current = periodBounds(freq, periodIdx);
  const length = enabled ? s.length : 0;
  const out: Record<string, unknown> = {
    length,
    frequency: freq,
    started: length > 0 ? (s.started ?? null) : null,
    periodStart: enabled ? current.start : null,
    periodEnd: enabled ? current.end : null,
    expires: length > 0 && s.lastMet !== undefined ? periodBounds(freq, s.lastMet + 1).end : null,
  };
  if (cfg.freezesEnabled) {
    out.freezes = s.freezes ?? 0;
    out.maxFreezes = cfg.maxFreezes;
  }
  if (cfg.freezeAutoEarnAmount !== null && cfg.freezeAutoEarnInterval !== null) {
    out.freezeAutoEarnInterval = cfg.freezeAutoEarnInterval;
    out.freezeAutoEarnAmount = cfg.freezeAutoEarnAmount;
  }
  return out;
}
