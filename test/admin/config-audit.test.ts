import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { csrfOf, dashboardBrowser } from '../helpers/dashboard';

const run = promisify(execFile);
let t: TestServer;
beforeAll(async () => {
  t = await createTestServer();
});
afterAll(async () => t.close());

const changes = async (limit = 100) => (await t.admin('GET', `/config/changes?limit=${limit}`)).body as any[];

const browser = () => dashboardBrowser(t);

describe('audit log of configuration changes', () => {
  it('records resource endpoint writes item by item with the admin key’s name, before and after', async () => {
    const [m] = await adminCreate(t, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
    await t.admin('PATCH', '/metrics', [{ id: m.id, name: 'Lessons done' }]);
    const [update, create] = await changes(2);
    expect(create).toMatchObject({
      keyName: 'test admin',
      source: 'api',
      resource: 'metric',
      item: 'lessons',
      action: 'create',
      before: null,
      after: { key: 'lessons', name: 'Lessons' },
    });
    expect(update).toMatchObject({
      keyName: 'test admin',
      action: 'update',
      before: { name: 'Lessons' },
      after: { name: 'Lessons done' },
    });
    expect(update.id).toBeGreaterThan(create.id);
  });

  it('records nothing for a write that changes nothing', async () => {
    const before = await changes();
    const [m] = (await t.admin('GET', '/metrics')).body;
    await t.admin('PATCH', '/metrics', [{ id: m.id, name: m.name }]);
    await t.admin('POST', '/metrics', [{ key: 'has space', name: 'x' }]);
    expect(await changes()).toEqual(before);
  });

  it('names the key that made the change: another admin key, streak settings, deletes', async () => {
    const [key] = await adminCreate(t, '/api-keys', [{ name: 'ci pipeline', kind: 'admin' }]);
    const [keyChange] = await changes(1);
    expect(keyChange).toMatchObject({
      resource: 'api key',
      action: 'create',
      after: { name: 'ci pipeline' },
    });
    expect(JSON.stringify(keyChange)).not.toContain(key.key.split('.')[1]);
    const as = async (method: string, path: string, body?: unknown) =>
      t.app.request(`/admin/v1${path}`, {
        method,
        headers: { 'X-API-KEY': key.key, 'Content-Type': 'application/json' },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    const [metric] = (await t.admin('GET', '/metrics')).body;
    expect(
      (
        await as('PATCH', '/streaks/settings', {
          enabled: true,
          conditions: [{ metricId: metric.id, threshold: 1 }],
        })
      ).status,
    ).toBe(200);
    const [streak] = await changes(1);
    expect(streak).toMatchObject({
      keyName: 'ci pipeline',
      resource: 'streak settings',
      action: 'update',
      before: { enabled: false, conditions: [] },
      after: { enabled: true, conditions: [{ metric: 'lessons', threshold: 1 }] },
    });
    const [attr] = await adminCreate(t, '/attributes', [{ key: 'plan', name: 'Plan', type: 'user' }]);
    expect((await as('DELETE', `/attributes?ids=${attr.id}`)).status).toBe(200);
    const [deleted] = await changes(1);
    expect(deleted).toMatchObject({
      keyName: 'ci pipeline',
      resource: 'attribute',
      item: 'user:plan',
      action: 'delete',
      after: null,
    });
  });

  it('records dashboard writes with the signed-in key and source dashboard', async () => {
    const b = browser();
    const login = await b.request('GET', '/dashboard/login');
    await b.request('POST', '/dashboard/login', {
      _csrf: csrfOf(login.text),
      key: t.adminKey,
      next: '/dashboard',
    });
    const page = await b.request('GET', '/dashboard/metrics');
    const res = await b.request('POST', '/dashboard/metrics', {
      _csrf: csrfOf(page.text),
      name: 'Quizzes',
      key: 'quizzes',
    });
    expect(res.res.status).toBe(303);
    const [change] = await changes(1);
    expect(change).toMatchObject({
      keyName: 'test admin',
      source: 'dashboard',
      resource: 'metric',
      item: 'quizzes',
      action: 'create',
    });
    const audit = await b.request('GET', '/dashboard/config-code');
    expect(audit.res.status).toBe(200);
    expect(audit.text).toContain('quizzes');
  });

  it('imports on the dashboard: shows the plan first, applies on confirmation', async () => {
    const b = browser();
    const login = await b.request('GET', '/dashboard/login');
    await b.request('POST', '/dashboard/login', {
      _csrf: csrfOf(login.text),
      key: t.adminKey,
      next: '/dashboard',
    });
    const page = await b.request('GET', '/dashboard/config-code');
    const exported = await b.request('GET', '/dashboard/config-code/export?format=yaml');
    expect(exported.res.headers.get('content-disposition')).toContain('laurel-config.yaml');
    const text = exported.text.replace(/^version: .*\n/m, '').replace('name: Quizzes', 'name: Quizzes!');
    const plan = await b.request('POST', '/dashboard/config-code/plan', {
      _csrf: csrfOf(page.text),
      document: text,
    });
    expect(plan.res.status).toBe(200);
    expect(plan.text).toContain('~ metric quizzes');
    expect(plan.text).toContain('Apply this plan');
    expect((await t.admin('GET', '/metrics?limit=100')).body.map((m: any) => m.name)).not.toContain(
      'Quizzes!',
    );
    const applied = await b.request('POST', '/dashboard/config-code/apply', {
      _csrf: csrfOf(page.text),
      document: text,
    });
    expect(applied.res.status).toBe(303);
    expect((await t.admin('GET', '/metrics?limit=100')).body.map((m: any) => m.name)).toContain('Quizzes!');
    const bad = await b.request('POST', '/dashboard/config-code/plan', {
      _csrf: csrfOf(page.text),
      document: '{"format": 1',
    });
    expect(bad.res.status).toBe(422);
  });

  it('records an apply as one batch with source config, and pages newest first', async () => {
    const doc = (await t.admin('GET', '/config')).body;
    doc.metrics.push({ key: 'a1', name: 'A1' }, { key: 'a2', name: 'A2' });
    expect((await t.admin('POST', '/config/apply', doc)).status).toBe(200);
    const [second, first] = await changes(2);
    expect([first.item, second.item]).toEqual(['a1', 'a2']);
    expect(first.batch).toBe(second.batch);
    expect(first).toMatchObject({ source: 'config', keyName: 'test admin' });
    const page2 = (await t.admin('GET', '/config/changes?limit=1&skip=1')).body;
    expect(page2).toEqual([first]);
  });
});

describe('config CLI', () => {
  it('exports, plans with a readable diff and applies; exits non-zero on issues', async () => {
    const origin = await t.listen();
    const dir = await mkdtemp(join(tmpdir(), 'laurel-config-'));
    const env = { ...process.env, LAUREL_URL: origin, LAUREL_ADMIN_KEY: t.adminKey, NO_COLOR: '1' };
    const cli = (...args: string[]) =>
      run(process.execPath, ['--import', 'tsx', 'src/config-as-code/cli.ts', ...args], { env }).then(
        (r) => ({ code: 0, ...r }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
    try {
      const file = join(dir, 'laurel.yaml');
      const exported = await cli('export', file, '--no-version');
      expect(exported.code).toBe(0);
      let text = await readFile(file, 'utf8');
      expect(text).toContain('format: laurel.config/v1');
      expect(text).not.toContain('version:');
      text = text.replace('name: Quizzes!', 'name: Quiz count');
      await writeFile(file, text);
      const plan = await cli('plan', file);
      expect(plan.code).toBe(0);
      expect(plan.stdout).toContain('~ metric quizzes');
      expect(plan.stdout).toContain('name: "Quizzes!" → "Quiz count"');
      const applied = await cli('apply', file);
      expect(applied.code).toBe(0);
      expect((await t.admin('GET', '/metrics?limit=100')).body.map((m: any) => m.name)).toContain(
        'Quiz count',
      );

      const bad = join(dir, 'bad.json');
      await writeFile(
        bad,
        JSON.stringify({
          format: 'laurel.config/v1',
          metrics: [{ key: 'money', name: 'Money', unitType: 'currency' }],
        }),
      );
      const failed = await cli('plan', bad);
      expect(failed.code).toBe(1);
      expect(failed.stdout).toMatch(/error: metric money: units must be/);
      expect((await cli('apply', bad)).code).toBe(1);
      expect((await cli('nonsense')).code).toBe(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
