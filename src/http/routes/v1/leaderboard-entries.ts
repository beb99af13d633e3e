import type { Deps } from '../../../deps';
import { applyBoardUpdates } from '../../../engine/leaderboards';
import type { UserOpResult } from '../../../engine/user-op';
import { leaderboardBase } from './leaderboards';

/**
 * The `leaderboards` map of an event or completion response: applies every board value the op
 * moved and reports the boards where the user's rank or ranked value changed (semantics §6.8).
 */
export async function leaderboardEntries(deps: Deps, r: UserOpResult): Promise<Record<string, unknown>> {
  if (r.boards.length === 0) return {};
  const snap = deps.catalog.snapshot;
  const out: Record<string, unknown> = {};
  for (const m of await applyBoardUpdates(deps, r)) {
    if (m.prevRank === m.rank && m.prevValue === m.value) continue;
    const entry: Record<string, unknown> = {
      ...leaderboardBase(snap, m.board),
      start: m.run.start,
      end: m.run.end,
      threshold: m.threshold,
      previousRank: m.prevRank,
      rank: m.rank,
    };
    if (m.board.breakdownAttributes.length) {
      entry.breakdownAttributeValue = m.groupValues[0]?.value ?? '';
      entry.breakdownAttributeValues = m.groupValues;
    }
    out[m.board.key] = entry;
  }
  return out;
}
