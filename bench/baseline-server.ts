/**
 * The floor the event endpoint is compared against: the least an HTTP service can do per event
 * on this stack — Hono on @hono/node-server, one ioredis client, one script call (EVALSHA) that
 * adds to a user total, updates a ranking and reads the rank back. No auth, no validation
 * library, no configuration lookup. Started by bench/run.ts as a child process.
 *
 * `POST /baseline/layout` is the second floor, issue 16's own ("Evidence that the Redis target is
 * reachable"): a new user's event on the consolidated layout that issue measured at 40 µs a call
 * under `redis-benchmark -c 50`, here behind the same HTTP stack and measured in the same run as the
 * event endpoint, so that figure 1's bar can be read against what that layout costs on this machine at
 * this moment. It evaluates nothing: it decodes a plan and the input, runs the commands and
 * encodes a record.
 *
 * Env: PORT, REDIS_URL, BENCH_PREFIX (every key lives under `<BENCH_PREFIX>:bl:`).
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { type ClientContext, Redis, type Result } from 'ioredis';

declare module 'ioredis' {
  interface RedisCommander<Context extends ClientContext> {
    baselineEvent(
      totalKey: string,
      boardKey: string,
      userId: string,
      value: string,
    ): Result<[string, number], Context>;
    layoutEvent(
      userKey: string,
      idemKey: string,
      boardA: string,
      boardB: string,
      awardsKey: string,
      streamKey: string,
      plan: string,
      input: string,
    ): Result<string, Context>;
  }
}

// KEYS[1] the user's totals hash, KEYS[2] ranking sorted set; ARGV[1] user id, ARGV[2] value to add.
// Reply: {new total as a string, zero-based rank from the top}.
const BASELINE_LUA = `
local totals, board = KEYS[1], KEYS[2]
local userId, value = ARGV[1], ARGV[2]
local total = redis.call('HINCRBYFLOAT', totals, 'total', value)
redis.call('ZADD', board, total, userId)
return {total, redis.call('ZREVRANK', board, userId)}
`;

// Issue 16's consolidated layout, command for command: one HGETALL of the user hash, an idempotency
// ZSCORE, one HSET of about 25 fields, ZADD + ZREVRANK + ZCARD on two boards, an idempotency ZADD,
// LPUSH + LTRIM of awards, one XADD, two cjson.decodes (the plan, about 630 bytes, and the input, about
// 250) and one encode. KEYS: user hash, idempotency zset, two boards, awards list, stream.
// ARGV[1] the plan (JSON), ARGV[2] the input (JSON). Reply: the record (JSON).
const LAYOUT_LUA = `
local plan = cjson.decode(ARGV[1])
local input = cjson.decode(ARGV[2])
local state = redis.call('HGETALL', KEYS[1])
if redis.call('ZSCORE', KEYS[2], input.key) then return '{"replay":true}' end
local h = {}
for i = 1, #state, 2 do h[state[i]] = state[i + 1] end
local total = (tonumber(h.total) or 0) + input.value
local points = (tonumber(h.points) or 0) + input.value * plan.points.perUnit
local fields = { 'total', total, 'points', points, 'seq', (tonumber(h.seq) or 0) + 1, 'tz', input.user.tz,
  'updated', input.now, 'created', h.created or input.now, 'streak', 1, 'streakStart', input.date,
  'streakEnd', input.date, 'streakExpires', input.date, 'longest', 1, 'freezes', 0, 'lastMet', input.date,
  'level', points >= 100 and 2 or 1, 'levelAt', input.now, 'pointsAt', input.now, 'metricAt', input.now,
  'lengthAt', input.now, 'epoch', 1, 'c:' .. plan.points.triggers[1].id, total }
for i = 1, #plan.achievements do
  local a = plan.achievements[i]
  fields[#fields + 1] = 'a:' .. a.id
  fields[#fields + 1] = total >= a.threshold and input.now or ''
end
for i = 1, #plan.boards do
  fields[#fields + 1] = 'b:' .. plan.boards[i].id
  fields[#fields + 1] = total
end
redis.call('HSET', KEYS[1], unpack(fields))
local ranks = {}
for i = 1, 2 do
  local board = KEYS[2 + i]
  redis.call('ZADD', board, total, input.user.id)
  ranks[i] = { rank = redis.call('ZREVRANK', board, input.user.id) + 1, size = redis.call('ZCARD', board) }
end
redis.call('ZADD', KEYS[2], input.now, input.key)
local award = cjson.encode({ id = input.id, awarded = input.value * plan.points.perUnit, total = points })
redis.call('LPUSH', KEYS[5], award)
redis.call('LTRIM', KEYS[5], 0, 9)
local record = cjson.encode({ id = input.id, user = input.user.id, total = total, points = points,
  ranks = ranks, plan = plan.version })
redis.call('XADD', KEYS[6], 'MAXLEN', '~', '10000', '*', 'r', record)
return record
`;

/** A plan of the size issue 16 measured with (about 630 bytes of JSON). */
const uuid = () => crypto.randomUUID();
const LAYOUT_PLAN = JSON.stringify({
  version: 1,
  metric: uuid(),
  points: {
    system: uuid(),
    perUnit: 10,
    triggers: [{ id: uuid(), threshold: 1 }],
    boosts: [{ id: uuid(), x: 1.5 }],
  },
  achievements: [
    { id: uuid(), threshold: 1 },
    { id: uuid(), threshold: 10 },
  ],
  boards: [
    { id: uuid(), rankBy: 'metric', max: 1000 },
    { id: uuid(), rankBy: 'points', max: 1000 },
  ],
  streak: { frequency: 'daily', metric: uuid() },
  levels: [0, 100, 500, 1000, 5000],
});

const port = Number(process.env.PORT ?? 3100);
const prefix = process.env.BENCH_PREFIX ?? 'bench';
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
redis.defineCommand('baselineEvent', { numberOfKeys: 2, lua: BASELINE_LUA });
redis.defineCommand('layoutEvent', { numberOfKeys: 6, lua: LAYOUT_LUA });

// A hash per user (like Laurel's per-user metric totals) and one ranking shared by every user.
const boardKey = `${prefix}:bl:board`;

const app = new Hono();
app.get('/healthz', (c) => c.json({ status: 'ok' }));
app.post('/baseline', async (c) => {
  const body = (await c.req.json()) as { user?: { id?: unknown }; value?: unknown };
  const id = body.user?.id;
  if (typeof id !== 'string' || typeof body.value !== 'number') return c.json({ error: 'bad request' }, 400);
  const [total, rank] = await redis.baselineEvent(
    `${prefix}:bl:user:${id}`,
    boardKey,
    id,
    String(body.value),
  );
  return c.json({ userId: id, total: Number(total), rank: rank + 1 }, 201);
});

app.post('/baseline/layout', async (c) => {
  const body = (await c.req.json()) as { user?: { id?: unknown; tz?: unknown }; value?: unknown };
  const id = body.user?.id;
  if (typeof id !== 'string' || typeof body.value !== 'number') return c.json({ error: 'bad request' }, 400);
  const now = Date.now();
  const input = JSON.stringify({
    id: uuid(),
    key: uuid(),
    user: { id, tz: typeof body.user?.tz === 'string' ? body.user.tz : 'UTC' },
    value: body.value,
    now,
    date: new Date(now).toISOString().slice(0, 10),
    metric: 'lessons',
  });
  const u = `${prefix}:bl:layout:${id}`;
  const record = await redis.layoutEvent(
    u,
    `${u}:idem`,
    `${prefix}:bl:layout-board-a`,
    `${prefix}:bl:layout-board-b`,
    `${u}:awards`,
    `${prefix}:bl:layout-stream`,
    LAYOUT_PLAN,
    input,
  );
  return c.json(JSON.parse(record), 201);
});

const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' });
const stop = () => {
  server.close();
  redis.disconnect();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
