import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { generateApiKey } from '../../src/api-keys';
import { freePort } from '../helpers/redis-cluster';
import { createTestDatabase, removeKeysUnder } from '../helpers/server';

const children: Array<ReturnType<typeof spawn>> = [];
const prefix = `ap${randomBytes(4).toString('hex')}`;
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await removeKeysUnder(prefix);
});

async function until(fn: () => Promise<boolean>, ms = 30_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('timed out');
}

describe('API_PROCESSES', () => {
  it('serves one port from several API processes, with exact totals, and stops them all on SIGTERM', async () => {
    const { redisUrl, clusterNodes } = inject('services');
    const admin = generateApiKey();
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const p = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: {
        ...process.env,
        API_PROCESSES: '2',
        PORT: String(port),
        HOST: '127.0.0.1',
        REDIS_URL: redisUrl,
        ...(clusterNodes ? { REDIS_CLUSTER_NODES: clusterNodes } : {}),
        DATABASE_URL: await createTestDatabase(),
        REDIS_KEY_PREFIX: prefix,
        ADMIN_API_KEY: admin.key,
        // Info: each API process logs 'laurel listening' once it serves.
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(p);
    // Warnings and errors of every process (pino writes to stdout), shown when an assertion fails.
    let logs = '';
    const collect = (d: Buffer) => {
      logs += d.toString();
    };
    p.stdout?.on('data', collect);
    p.stderr?.on('data', collect);
    // /readyz answers as soon as one API process listens; the test needs both.
    await until(async () => (logs.match(/laurel listening/g) ?? []).length >= 2);
    await until(async () => (await fetch(`${origin}/readyz`)).ok);
    // The primary runs the workers and has one child per API process.
    const kids = execFileSync('pgrep', ['-x', 'node', '-P', String(p.pid)])
      .toString()
      .trim()
      .split('\n');
    expect(kids.length).toBe(2);

    const call = async (key: string, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${origin}${path}`, {
        method,
        headers: { 'X-API-KEY': key, 'Content-Type': 'application/json', Connection: 'close' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    await call(admin.key, 'POST', '/admin/v1/metrics', [{ key: 'm', name: 'M' }]);
    const k = await call(admin.key, 'POST', '/admin/v1/api-keys', [{ name: 'app', kind: 'application' }]);
    const appKey = k.body.created[0].key as string;
    // Both API processes must know the new key before the load (configuration change channel).
    await until(async () => {
      const rs = await Promise.all(Array.from({ length: 6 }, () => call(appKey, 'GET', '/v1/leaderboards')));
      return rs.every((r) => r.status === 200);
    });
    const statuses = await Promise.all(
      Array.from({ length: 60 }, () =>
        call(appKey, 'POST', '/v1/metrics/m/event', { user: { id: 'shared' }, value: 1 }),
      ),
    );
    expect({ failed: statuses.filter((s) => s.status !== 201), logs: logs.slice(-4000) }).toEqual({
      failed: [],
      logs: expect.any(String),
    });
    expect(Math.max(...statuses.map((s) => s.body.total))).toBe(60);

    p.kill('SIGTERM');
    const code = await new Promise((r) => p.once('exit', r));
    expect(code).toBe(0);
    for (const pid of kids) expect(() => process.kill(Number(pid), 0)).toThrow();
  }, 60_000);
});
