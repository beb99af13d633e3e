import type { Snapshot } from '../catalog/snapshot';
import type { Deps } from '../deps';
import { levelOf, levelResponse, systemBase } from '../engine/levels';
import type { UserOpResult } from '../services/user-op';
import { achievementResponse } from './achievements';
import { extend } from './common';
import { leaderboardBase } from './leaderboards';
import { awardResponse } from './points';

// The maps of an event or completion response (application-api §7): points, achievements and
// leaderboards changed by one user op.

/** Builds the `points` map of an event or completion response. */
export function pointsMap(snap: Snapshot, r: UserOpResult) {
  const out: Record<string, unknown> = {};
  for (const p of r.points) {
    const sys = snap.systemsById.get(p.sys);
    if (!sys) continue;
    // The levels at commit, from the script (semantics §5.11: a new user had none before).
    const before = p.lb !== undefined ? p.lb || null : levelOf(sys, p.total - p.added);
    const after = p.la !== undefined ? p.la || null : levelOf(sys, p.total);
    const entry: Record<string, unknown> = extend(systemBase(sys), {
      total: p.total,
      added: p.added,
      awards: [...p.awards].reverse().map((a) => awardResponse(snap, sys, a, r.localDate)),
    });
    if ((before?.id ?? null) !== (after?.id ?? null)) entry.level = after ? levelResponse(after) : null;
    else if (p.awards.length === 0) continue;
    out[sys.key] = entry;
  }
  return out;
}

/** Achievements completed by an op, in completion order. */
export function completedAchievements(snap: Snapshot, r: UserOpResult) {
  return r.completions
    .map((c) => {
      const a = snap.achievementsById.get(c.id);
      return a ? achievementResponse(snap, a, c.at) : null;
    })
    .filter((a) => a !== null);
}

/**
 * The `leaderboards` map of an event or completion response: the boards where the op changed the
 * user's rank or ranked value (semantics §6.8). runUserOp has applied the moves already.
 */
export function leaderboardEntries(deps: Deps, r: UserOpResult): Record<string, unknown> {
  const snap = deps.catalog.snapshot;
  const out: Record<string, unknown> = {};
  for (const m of r.boardMoves ?? []) {
    if (m.prevRank === m.rank && m.prevValue === m.value) continue;
    const entry: Record<string, unknown> = extend(leaderboardBase(snap, m.board), {
      start: m.run.start,
      end: m.run.end,
      threshold: m.threshold,
      previousRank: m.prevRank,
      rank: m.rank,
    });
    if (m.board.breakdownAttributes.length) {
      entry.breakdownAttributeValue = m.groupValues[0]?.value ?? '';
      entry.breakdownAttributeValues = m.groupValues;
    }
    out[m.board.key] = entry;
  }
  return out;
}
