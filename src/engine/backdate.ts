import type { Deps } from '../deps';

/**
 * Completes an active achievement for every existing user who already satisfies it
 * (semantics §3.4). Called after an achievement becomes active or its requirement changes.
 * Filled in by the event engine; until then it records nothing.
 */
export async function backdateAchievement(deps: Deps, achievementId: string): Promise<void> {
  void deps;
  void achievementId;
}
