import type { AchievementRow, Snapshot } from '../catalog/snapshot';
import { attributeFilters, extend, isoMs, memo } from './common';

/** AchievementResponse (+ achievedAt when given). */
export function achievementResponse(snap: Snapshot, a: AchievementRow, achievedAt?: number | null) {
  const base = memo(snap, `a:${a.id}`, () => achievementBase(snap, a));
  if (achievedAt === undefined) return base;
  // Not a spread: see extend (./common).
  return extend(base, { achievedAt: achievedAt === null ? null : isoMs(achievedAt) });
}

function achievementBase(snap: Snapshot, a: AchievementRow): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: a.id,
    name: a.name,
    trigger: a.trigger,
    key: a.key,
    description: a.description,
    badgeUrl: a.badgeUrl,
    userAttributes: attributeFilters(snap, a.userAttributes),
  };
  if (a.trigger === 'metric') {
    const m = a.metricId ? snap.metricsById.get(a.metricId) : undefined;
    out.metricId = a.metricId;
    out.metricName = m?.name ?? '';
    out.metricValue = a.metricValue;
    const ef = attributeFilters(snap, a.eventAttributes);
    out.eventAttributes = ef;
    if (ef.length) out.eventAttribute = ef[0];
  }
  if (a.trigger === 'streak') out.streakLength = a.streakLength;
  if (a.trigger === 'achievement') out.achievementIds = a.achievementIds;
  return out;
}
