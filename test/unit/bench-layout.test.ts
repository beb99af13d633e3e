import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../bench/lib/processes';

/** One MONITOR line's arguments, unescaped as Redis escapes them (\\, \", \n, \r, \t, \xHH). */
function monitorArgs(line: string): string[] {
  const escapes: Record<string, string> = { n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b' };
  return [...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) =>
    m[1]!.replace(/\\(x[0-9a-fA-F]{2}|.)/g, (_, e: string) =>
      e.length === 3 ? String.fromCharCode(Number.parseInt(e.slice(1), 16)) : (escapes[e] ?? e),
    ),
  );
}

/**
 * The commands touching `prefix` that Redis runs while this watches, from a MONITOR connection of its
 * own on a plain socket: ioredis's monitor() throws ("Command queue state error") when a busy server's
 * first monitor lines arrive in the same read as MONITOR's OK, as other test files' traffic can make
 * them do.
 */
async function watchCommands(url: string, prefix: string) {
  const u = new URL(url);
  const socket = connect(Number(u.port || 6379), u.hostname);
  socket.setEncoding('utf8');
  const seen: string[][] = [];
  let buffered = '';
  let ready: () => void;
  const monitoring = new Promise<void>((resolve) => {
    ready = resolve;
  });
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    for (let end = buffered.indexOf('\r\n'); end >= 0; end = buffered.indexOf('\r\n')) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      if (line === '+OK') ready();
      else if (line.startsWith('+')) {
        const args = monitorArgs(line);
        if (args.some((a) => a.startsWith(`${prefix}:`))) seen.push(args);
      } else if (line.startsWith('-')) throw new Error(`MONITOR: ${line}`);
    }
  });
  if (u.password)
    socket.write(`AUTH ${decodeURIComponent(u.username || 'default')} ${decodeURIComponent(u.password)}\r\n`);
  socket.write('MONITOR\r\n');
  await monitoring;
  return { seen, stop: () => socket.destroy() };
}

/**
 * bench/baseline-server.ts POST /baseline/layout stands for issue 16's consolidated layout: the bench
 * reads figure 1's bar against it, so it must run that layout's commands, no fewer and no more.
 */
describe("the bench's consolidated-layout floor", () => {
  const prefix = `bl${randomBytes(4).toString('hex')}`;
  let server: ChildProcess;
  let origin: string;
  let redis: Redis;

  beforeAll(async () => {
    const url = inject('services').redisUrl;
    redis = new Redis(url);
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    server = spawn(process.execPath, ['--import', 'tsx', 'bench/baseline-server.ts'], {
      env: { ...process.env, PORT: String(port), REDIS_URL: url, BENCH_PREFIX: prefix },
      stdio: 'ignore',
    });
    for (let i = 0; ; i++) {
      const up = await fetch(`${origin}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (up) break;
      if (i > 150) throw new Error('baseline server did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 30_000);

  afterAll(async () => {
    server?.kill('SIGTERM');
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.unlink(...keys);
    redis.disconnect();
  });

  const send = (body: unknown) =>
    fetch(`${origin}/baseline/layout`, { method: 'POST', body: JSON.stringify(body) });

  it("runs the issue's commands for a new user's event, on one user hash of about 25 fields", async () => {
    const { seen, stop } = await watchCommands(inject('services').redisUrl, prefix);
    const id = '6f1c2d3e-0000-4000-8000-00000000abcd';
    const res = await send({ user: { id, tz: 'Europe/Paris' }, value: 1 });
    expect(res.status).toBe(201);
    const record = (await res.json()) as { total: number; points: number; ranks: unknown[] };
    expect(record).toMatchObject({
      total: 1,
      points: 10,
      ranks: [
        { rank: 1, size: 1 },
        { rank: 1, size: 1 },
      ],
    });
    await new Promise((r) => setTimeout(r, 200));
    stop();

    const script = seen.find((a) => a[0]?.toLowerCase() === 'evalsha' || a[0]?.toLowerCase() === 'eval');
    expect(script).toBeDefined();
    // The plan and the input the script decodes: about 630 and 250 bytes.
    const [plan, input] = script!.slice(-2);
    expect(plan!.length).toBeGreaterThan(550);
    expect(plan!.length).toBeLessThan(750);
    expect(input!.length).toBeGreaterThan(180);
    expect(input!.length).toBeLessThan(300);
    const commands = seen.filter((a) => a !== script).map((a) => a[0]!.toLowerCase());
    const count = (c: string) => commands.filter((x) => x === c).length;
    expect(commands.length).toBe(13);
    expect([count('hgetall'), count('zscore'), count('hset'), count('zadd')]).toEqual([1, 1, 1, 3]);
    expect([count('zrevrank'), count('zcard'), count('lpush'), count('ltrim'), count('xadd')]).toEqual([
      2, 2, 1, 1, 1,
    ]);
    const fields = await redis.hlen(`${prefix}:bl:layout:${id}`);
    expect(fields).toBeGreaterThanOrEqual(20);
    expect(fields).toBeLessThanOrEqual(30);
  });

  it('answers a second event of the user from the state it kept', async () => {
    const id = '6f1c2d3e-0000-4000-8000-00000000abce';
    await send({ user: { id }, value: 2 });
    const res = await send({ user: { id }, value: 3 });
    expect(await res.json()).toMatchObject({ total: 5, points: 50 });
  });

  it('refuses a body without a user id or a numeric value', async () => {
    for (const body of [{}, { user: {} }, { user: { id: 'u' }, value: '1' }]) {
      const res = await send(body);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: 'bad request' });
    }
  });
});
