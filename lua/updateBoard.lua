--[[
updateBoard: moves one user on one leaderboard run (semantics §6.4, §6.5, §6.7), atomically in the
board's slot.

Ordering without losing precision: a ranking is a sorted set with score = -value (values are integers:
points, streak lengths, or metric millionths, all below 2^53) and member = "<changedAt, 15 digits>|<userId>".
Ascending order is then value descending, earliest change first, then user id in byte order.

KEYS[1] members hash of the run: userId -> "value|changedAt|group|seq|expires"
KEYS[2] ranking sorted set of the user's breakdown group (as the caller computed it)
KEYS[3] the board's ranking version: changes whenever any ranking of the board changes (readers
        validate cached rankings with it). Seeded from the server clock when the key is new, so a
        board whose keys were deleted and rebuilt never repeats an earlier version
KEYS[4] the board's change stream: one entry per rank/value change of §6.7 (the acting user's and an
        evicted user's), read by the scheduler into the users' rank history (leaderboard_rank_changes)
        and leaderboard webhooks (src/workers/board-changes.ts). Left out by rebuild's replay, which
        must not record the history again

ARGV[1] userId      ARGV[2] value (integer string)   ARGV[3] seq of the user's op
ARGV[4] nowMs       ARGV[5] group                    ARGV[6] maxParticipants
ARGV[7] expires (ms, 0 = never; streak boards: when the streak breaks without activity)
ARGV[8] '1' on streak boards: entries whose streak has broken (expires <= nowMs) are dropped first

Reply: JSON {prevRank, rank, prevValue, value, threshold, stale, evicted}
  or {"err":"GROUP","group":"<g>"} when the user entered this run in another group: call again with it.
]]

--!include lib/board.lua

return cjson.encode(updateBoard(KEYS, ARGV))
