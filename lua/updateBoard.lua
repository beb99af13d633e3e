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

Several moves on one board in one call (src/redis/board-moves.ts gathers the moves a process has
for a board within one turn of its event loop): ARGV holds 8 values per move, in order; the first move
takes KEYS[1..2] as above, move i > 1 takes KEYS[3 + 2(i - 1)] (members) and KEYS[4 + 2(i - 1)]
(ranking), and every move shares KEYS[3] and KEYS[4], which are then both required. The moves are
applied one after the other, each exactly as a call of its own would (a later move sees the earlier
ones). Reply: a list of the moves' JSON replies, in order; a move that failed answers "!<error>" in
its place (the moves before and after it are still applied, as separate calls would be).
]]

--!include lib/board.lua

local n = #ARGV / 8
if n <= 1 then return cjson.encode(updateBoard(KEYS, ARGV)) end
local out = {}
local K = { '', '', KEYS[3], KEYS[4] }
local A = {}
for i = 1, n do
  local k = i == 1 and 1 or 3 + 2 * (i - 1)
  K[1], K[2] = KEYS[k], KEYS[k + 1]
  local base = 8 * (i - 1)
  for j = 1, 8 do A[j] = ARGV[base + j] end
  local ok, reply = pcall(updateBoard, K, A)
  out[i] = ok and cjson.encode(reply) or '!' .. errorText(reply)
end
return out
