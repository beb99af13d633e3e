import type { LevelRow, PointsSystemConfig, PointsSystemRow } from '../catalog/snapshot';

// Levels (semantics §5.11) and the shapes of a level and of a system's base fields, shared by
// responses, webhooks and the user script's plan (which carries them so webhooks describe the
// configuration at commit).

/** PointsLevel. */
export function levelResponse(
  l: Pick<LevelRow, 'id' | 'key' | 'name' | 'description' | 'badgeUrl' | 'points'>,
) {
  return {
    id: l.id,
    key: l.key,
    name: l.name,
    description: l.description,
    badgeUrl: l.badgeUrl,
    points: l.points,
  };
}

export function systemBase(sys: PointsSystemRow) {
  return {
    id: sys.id,
    key: sys.key,
    name: sys.name,
    description: sys.description,
    badgeUrl: sys.badgeUrl,
    maxPoints: sys.maxPoints,
  };
}

/** The level a total reaches (highest threshold ≤ total), or null. */
export function levelOf(sys: PointsSystemConfig, total: number): LevelRow | null {
  let found: LevelRow | null = null;
  for (const l of sys.levels) if (l.points <= total) found = l;
  return found;
}
