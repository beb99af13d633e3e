import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { laurelProcesses, until } from '../helpers/processes';

const laurel = laurelProcesses('ap');
afterAll(() => laurel.stop());

describe('API_PROCESSES', () => {
  it('serves one port from several API processes, with exact totals, and stops them all on SIGTERM', async () => {
    // Info: each API process logs 'laurel listening' once it serves.
    const { proc: p, origin, adminKey, logs: logText } = await laurel.start({ API_PROCESSES: '2' });
    const admin = { key: adminKey };
    const logs = { slice: (n: number) => logText().slice(n) };
    // /readyz answers as soon as one API process listens; the test needs both.
    await until(async () => (logText().match(/laurel listening/g) ?? []).length >= 2);
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
