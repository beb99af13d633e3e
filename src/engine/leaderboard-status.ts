// Leaderboard status as shown by both APIs (semantics §6.2): the stored status moves on with the
// UTC clock, so reads compute it instead of waiting for the scheduler.

export type LeaderboardStatus = 'inactive' | 'scheduled' | 'active' | 'finished';

const DAY_MS = 86_400_000;
const HALF_DAY_MS = 43_200_000;

/** The UTC calendar date ('YYYY-MM-DD') of an instant. */
export const utcDate = (nowMs: number): string => new Date(nowMs).toISOString().slice(0, 10);

/** When a run or board ending on `end` is finalised: 12:00 UTC on the following day. */
export const finalisationMs = (end: string): number => Date.parse(`${end}T00:00:00Z`) + DAY_MS + HALF_DAY_MS;

/**
 * The status of a board at `nowMs`: a stored `scheduled` board is `active` from 00:00 UTC on its
 * start, and an `active` board with an `end` is `finished` once its last run is finalised. O(1).
 */
export function leaderboardStatus(
  row: { status: LeaderboardStatus; start: string; end: string | null },
  nowMs: number,
): LeaderboardStatus {
  let status = row.status;
  if (status === 'scheduled' && row.start <= utcDate(nowMs)) status = 'active';
  if (status === 'active' && row.end !== null && nowMs >= finalisationMs(row.end)) status = 'finished';
  return status;
}
