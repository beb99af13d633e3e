import type { Deps } from '../../../deps';
import type { UserOpResult } from '../../../engine/user-op';
import { leaderboardBase } from './leaderboards';

/**
 * The `leaderboards` map of an event or completion response: the boards where the op changed the
 * user's rank or ranked value (semantics §6.8). runUserOp has applied the moves already.
 */
export function leaderboardEntries(deps: Deps, r: UserOpResult): Record<string, unknown> {
  const snap = deps.catalog.snapshot;
  const out: Record<string, unknown> = {};
  for (const m of r.boardMoves ?? []) {
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
