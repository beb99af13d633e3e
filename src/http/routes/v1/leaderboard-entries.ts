import type { Deps } from '../../../deps';
import type { UserOpResult } from '../../../engine/user-op';

/**
 * The `leaderboards` map of an event response: ranks every board value the op moved.
 * Filled in by the leaderboard engine; until then no board is reported.
 */
export async function leaderboardEntries(deps: Deps, r: UserOpResult): Promise<Record<string, unknown>> {
  void deps;
  void r;
  return {};
}
