import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KEY_RE = /[a-z0-9]{8}\.[A-Za-z0-9_-]{43}/g;

const { redisUrl, databaseUrl, runId } = inject('services');
const dbName = `laurel_t_${runId}_start_${randomBytes(3).toString('hex')}`;
const dbUrl = new URL(databaseUrl);
dbUrl.pathname = `/${dbName}`;
const prefix = `ts${randomBytes(5).toString('hex')}`;

interface Proc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Runs the real entry point, as a container or `npm start` would, with its own environment. */
function start(env: Record<string, string>): Proc {
  const { ADMIN_API_KEY: _ignored, ...inherited } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      ...inherited,
      REDIS_URL: redisUrl,
      DATABASE_URL: dbUrl.toString(),
      REDIS_KEY_PREFIX: prefix,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      USER_SHARDS: '16',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  child.stderr!.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/**
 * How long a start may take before the test calls it hung. A start takes 3-6 s here, but up to 15 s
 * while other files start several servers of their own on the same two cores (multi-process).
 */
const START_MS = 40_000;

async function listening(p: Proc): Promise<void> {
  const deadline = Date.now() + START_MS;
  let code: number | null | undefined;
  void p.exited.then((c) => {
    code = c;
  });
  while (!p.stdout().includes('"msg":"laurel listening"')) {
    if (code !== undefined) throw new Error(`exited ${code}: ${p.stderr()}`);
    if (Date.now() > deadline)
      throw new Error(`not listening after ${START_MS / 1000} s: ${p.stdout()} ${p.stderr()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const running: Proc[] = [];
afterAll(async () => {
  for (const p of running) {
    if (p.child.exitCode === null && p.child.signalCode === null) {
      p.child.kill('SIGKILL');
      await p.exited;
    }
  }
  const redis = new Redis(redisUrl);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  const admin = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`drop database if exists "${dbName}" with (force)`);
  } finally {
    await admin.end({ timeout: 2 });
  }
});

describe('starting the real server', { timeout: START_MS + 20_000 }, () => {
  let adminKey = '';

  it('creates the database, prints an admin key once, serves /readyz 200 and stops on SIGTERM', async () => {
    const port = await freePort();
    const p = start({ PORT: String(port) });
    running.push(p);
    await listening(p);
    const origin = `http://127.0.0.1:${port}`;

    const keys = p.stdout().match(KEY_RE) ?? [];
    expect(keys).toHaveLength(1);
    adminKey = keys[0]!;

    const ready = await fetch(`${origin}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ok' });
    const list = await fetch(`${origin}/admin/v1/metrics`, { headers: { 'X-API-KEY': adminKey } });
    expect(list.status).toBe(200);
    expect(await list.json()).toEqual([]);

    // Logs are JSON lines; only the key banner is plain text.
    const lines = p
      .stdout()
      .split('\n')
      .filter((l) => l.trim() && !l.includes(adminKey) && !l.includes('Laurel admin'));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines)
      expect(JSON.parse(line)).toMatchObject({ level: expect.any(Number), msg: expect.any(String) });

    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('does not print a new key on the next start, and finishes an in-flight request on SIGTERM', async () => {
    expect(adminKey).not.toBe('');
    const port = await freePort();
    const p = start({ PORT: String(port) });
    running.push(p);
    await listening(p);
    expect(p.stdout().match(KEY_RE)).toBeNull();

    // A request whose body arrives slowly is in flight while the signal lands.
    const body = JSON.stringify([{ name: 'Sent during shutdown', key: 'during_shutdown' }]);
    const agent = new http.Agent({ keepAlive: true });
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/admin/v1/metrics',
          agent,
          headers: {
            'X-API-KEY': adminKey,
            'Content-Type': 'application/json',
            'Content-Length': Buffer.byteLength(body),
          },
        },
        (res) => {
          let text = '';
          res.on('data', (d) => {
            text += d;
          });
          res.on('end', () => resolve({ status: res.statusCode!, body: text }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, 10));
      setTimeout(() => {
        p.child.kill('SIGTERM');
        setTimeout(() => req.end(body.slice(10)), 400);
      }, 300);
    });

    // Once the signal has landed, new connections are refused.
    await new Promise((r) => setTimeout(r, 500));
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();

    const res = await response;
    const answered = Date.now();
    expect(res.status).toBe(201);
    expect(JSON.parse(res.body).created[0]).toMatchObject({ key: 'during_shutdown' });
    expect(await p.exited).toBe(0);
    // The kept-alive connection is dropped once idle, not left to its 5 s keep-alive timeout.
    expect(Date.now() - answered).toBeLessThan(2500);
    expect(p.stdout()).toContain('"msg":"shutting down"');
    agent.destroy();
  });

  it('exits non-zero with a one-line message naming a bad variable', async () => {
    const p = start({ PORT: 'abc' });
    running.push(p);
    expect(await p.exited).not.toBe(0);
    const message = p.stderr().trim();
    expect(message.split('\n')).toHaveLength(1);
    expect(message).toMatch(/\bPORT\b/);
    expect(p.stdout()).toBe('');
  });
});
