-- Numbers, inlined by `--!include lib/numbers.lua` (src/redis/scripts.ts).
-- Lua numbers are doubles, exact for integers below 2^53; big integers travel as strings
-- because cjson prints only 14 significant digits.

-- Largest magnitude of any total in millionths (semantics §2.1: totals stay within 9,007,199,254,
-- which keeps every sum of two totals below 2^53 and so exact in a double).
local MAX_SAFE = 9007199254000000
-- Largest points total (README Limits): the same bound as metric totals, so totals, their sums on
-- points leaderboards and any award stay exact integers in a double.
local MAX_POINTS = 9007199254

-- An integer as its decimal digits ('%d' for the integers a double holds exactly, which formats about
-- twice as fast as '%.0f'; '%.0f' rounds anything else, as it always did). The texts are remembered
-- (an op formats its time, seq and values several times, and small values recur across ops; the user
-- script's table outlives the call as a Redis Function), up to 512 of them.
local FMT, FMT_COUNT = {}, 0
local function fmt(n)
  if n ~= n then return string.format('%.0f', n) end -- NaN is no table key
  local s = FMT[n]
  if s then return s end
  if n == math.floor(n) and n >= -9007199254740992 and n <= 9007199254740992 then
    s = string.format('%d', n)
  else
    s = string.format('%.0f', n)
  end
  if FMT_COUNT >= 512 then FMT, FMT_COUNT = {}, 0 end
  FMT[n] = s
  FMT_COUNT = FMT_COUNT + 1
  return s
end

-- Digits s left-padded with zeros to `width` (no printf: string.format costs more per call).
local function zeroPad(s, width)
  if #s < width then return string.rep('0', width - #s) .. s end
  return s
end

-- A stored number (our own digits, or a number) or `default` when absent. Arithmetic coercion converts
-- a string once, where tonumber converts it twice (lua_isnumber, then lua_tonumber: about 900
-- instructions a string); a string that is not a number raises an error instead of reading as nil.
local function num(s, default)
  if s == nil or s == false then return default end
  return s + 0
end

-- Exact floor division of integers a / b (b > 0): returns quotient and non-negative remainder.
local function floordiv(a, b)
  local q = math.floor(a / b)
  local r = a - q * b
  if r < 0 then
    q = q - 1
    r = r + b
  elseif r >= b then
    q = q + 1
    r = r - b
  end
  return q, r
end

-- The text of an error caught by pcall: a message, or the table a failed redis.call raises ({err}).
local function errorText(e)
  if type(e) == 'table' then return tostring(e.err or e) end
  return tostring(e)
end
