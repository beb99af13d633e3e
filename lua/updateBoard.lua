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
KEYS[5] (KEYS[4] without a change stream) on streak boards, the last key: the ranking's expiry index,
        its members by when their streak breaks (score = expires, +inf for never), read instead of the
        whole ranking to drop the lapsed ones

ARGV[1] userId      ARGV[2] value (integer string)   ARGV[3] seq of the user's op
ARGV[4] nowMs       ARGV[5] group                    ARGV[6] maxParticipants
ARGV[7] expires (ms, 0 = never; streak boards: when the streak breaks without activity)
ARGV[8] '1' on streak boards: entries whose streak has broken (expires <= nowMs) are dropped first

Reply: JSON {prevRank, rank, prevValue, value, threshold, stale, evicted}
  or {"err":"GROUP","group":"<g>"} when the user entered this run in another group: call again with it.

Several moves on one board in one call (src/redis/board-moves.ts gathers the moves a process has
for a board within one turn of its event loop), marked by ARGV[1] = '' (a user id is never empty):
KEYS[1] the board's ranking version and KEYS[2] its change stream (KEYS[3] and KEYS[4] above), then
the moves' members hashes and rankings, each key once; ARGV[2..] one move each, packed in one string
(one argument per move instead of ten: the API builds, and Redis parses, a tenth of the strings):
  "<members KEYS index>,<ranking KEYS index>,<value>,<seq>,<nowMs>,<expires>,<maxParticipants>,<x>|<group>|<userId>"
with x 0 on a board not ranked by streak, else the KEYS index of the ranking's expiry index
(the user id last: it may hold any character; a group holds no '|', src/services/leaderboards.ts
groupKey). The moves are applied one after the other, each exactly as a call of its own would (a later
move sees the earlier ones). Reply: one JSON array of the moves' replies, in order; a move that failed
answers {"fail": "<error>"} in its place (the moves before and after it are still applied, as
separate calls would be).
]]

--!include lib/board.lua

local MOVE = '^(%d+),(%d+),(%-?%d+),(%d+),(%d+),(%d+),(%d+),(%d+)|([^|]*)|(.*)$'

if ARGV[1] ~= '' then
  if ARGV[8] ~= '1' then return cjson.encode(updateBoard(KEYS, ARGV)) end
  local n = #KEYS
  return cjson.encode(updateBoard({ KEYS[1], KEYS[2], KEYS[3], n >= 5 and KEYS[4] or nil, n >= 4 and KEYS[n] or nil }, ARGV))
end
local out = {}
local K = { '', '', KEYS[1], KEYS[2] }
local A = {}
for i = 2, #ARGV do
  local mi, ri, value, seq, now, expires, max, x, group, user = string.match(ARGV[i], MOVE)
  if not mi then
    out[i - 1] = { fail = 'a move is not "<members>,<ranking>,<value>,<seq>,<now>,<expires>,<max>,<x>|<group>|<user>"' }
  else
    K[1], K[2], K[5] = KEYS[tonumber(mi)], KEYS[tonumber(ri)], x ~= '0' and KEYS[tonumber(x)] or nil
    A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8] = user, value, seq, now, group, max, expires, x ~= '0' and '1' or '0'
    local ok, reply = pcall(updateBoard, K, A)
    out[i - 1] = ok and reply or { fail = errorText(reply) }
  end
end
return cjson.encode(out)
