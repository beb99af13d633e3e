/**
 * The floor the event endpoint is compared against: the least an HTTP service can do per event
 * on this stack — Hono on @hono/node-server, one ioredis client, one script call (EVALSHA) that
 * adds to a user total, updates a ranking and reads the rank back. No auth, no validation
 * library, no configuration lookup. Started by bench/run.ts as a child process.
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

const port = Number(process.env.PORT ?? 3100);
const prefix = process.env.BENCH_PREFIX ?? 'bench';
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
redis.defineCommand('baselineEvent', { numberOfKeys: 2, lua: BASELINE_LUA });

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

const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' });
const stop = () => {
  server.close();
  redis.disconnect();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
