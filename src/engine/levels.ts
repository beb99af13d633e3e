import type { LevelRow, PointsSystemRow } from '../catalog/snapshot';

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

/**
 * The level a total reaches (highest threshold ≤ total, levels ascending), or null: levelAt() in
 * lua/applyUserOp.lua is the script's copy (test/lua/rules.property.test.ts compares them).
 */
export function levelOf<L extends Pick<LevelRow, 'points'> = LevelRow>(
  sys: { levels: readonly L[] },
  total: number,
): L | null {
  let found: L | null = null;
  for (const l of sys.levels) if (l.points <= total) found = l;
  return found;
}

/**
 * Whether a request or grant changed the level (semantics §5.11): levels compared by id, none being
 * null (the script reports none as false). Decides `level` in responses and `points.level_changed`.
 */
export function levelChanged(
  before: { id: string } | null | undefined | false,
  after: { id: string } | null | undefined | false,
): boolean {
  return (before ? before.id : null) !== (after ? after.id : null);
}
