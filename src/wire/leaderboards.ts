import type { LeaderboardRow, Snapshot } from '../catalog/snapshot';
import { breakdownKeys } from '../services/leaderboards';
import { memo } from './common';

/** LeaderboardResponse fields (application-api §7.9). */
export function leaderboardBase(snap: Snapshot, b: LeaderboardRow) {
  return memo(snap, `lb:${b.id}`, () => buildLeaderboardBase(snap, b));
}

function buildLeaderboardBase(snap: Snapshot, b: LeaderboardRow) {
  const keys = breakdownKeys(snap, b);
  const metric = b.metricId ? snap.metricsById.get(b.metricId) : undefined;
  const system = b.pointsSystemId ? snap.systemsById.get(b.pointsSystemId) : undefined;
  return {
    id: b.id,
    name: b.name,
    key: b.key,
    rankBy: b.rankBy,
    description: b.description,
    breakdownAttribute: keys[0] ?? null,
    breakdownAttributes: keys,
    metricKey: b.rankBy === 'metric' ? (metric?.key ?? null) : null,
    metricName: b.rankBy === 'metric' ? (metric?.name ?? null) : null,
    pointsSystemKey: b.rankBy === 'points' ? (system?.key ?? null) : null,
    pointsSystemName: b.rankBy === 'points' ? (system?.name ?? null) : null,
    start: b.start,
    end: b.end,
    maxParticipants: b.maxParticipants,
    runUnit: b.runUnit,
    runInterval: b.runInterval,
  };
}
