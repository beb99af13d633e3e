import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { csrfOf, dashboardBrowser } from '../helpers/dashboard';

let t: TestServer;
beforeAll(async () => {
  t = await createTestServer();
});
afterAll(async () => t.close());

const browser = () => dashboardBrowser(t);

async function signIn(b: ReturnType<typeof browser>, key = t.adminKey) {
  const page = await b.request('GET', '/dashboard/login');
  return b.request('POST', '/dashboard/login', { _csrf: csrfOf(page.text), key, next: '/dashboard' });
}

describe('dashboard sessions', () => {
  it('sends a visitor without a session to the sign-in page', async () => {
    const { res } = await browser().request('GET', '/dashboard/metrics');
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/dashboard/login?next=%2Fdashboard%2Fmetrics');
  });

  it('refuses an application key, an unknown key and a malformed key', async () => {
    for (const key of [t.appKey, 'abcdefgh.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'nonsense']) {
      const b = browser();
      const { res, text } = await signIn(b, key);
      expect(res.status).toBe(401);
      expect(text).toContain('That is not an active admin API key.');
      expect(b.jar.has('laurel_session')).toBe(false);
    }
  });

  it('signs in with an admin key and sets an HttpOnly, SameSite=Strict session cookie', async () => {
    const b = browser();
    const page = await b.request('GET', '/dashboard/login');
    const { res } = await b.request('POST', '/dashboard/login', {
      _csrf: csrfOf(page.text),
      key: t.adminKey,
      next: '/dashboard/metrics',
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/dashboard/metrics');
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('laurel_session='))!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    expect(cookie).toMatch(/Path=\/dashboard/i);
    const home = await b.request('GET', '/dashboard');
    expect(home.res.status).toBe(200);
    expect(home.text).toContain('Overview');
  });

  it('does not follow a sign-in redirect outside the dashboard', async () => {
    const b = browser();
    const page = await b.request('GET', '/dashboard/login');
    const { res } = await b.request('POST', '/dashboard/login', {
      _csrf: csrfOf(page.text),
      key: t.adminKey,
      next: 'https://evil.example/',
    });
    expect(res.headers.get('location')).toBe('/dashboard');
  });

  it('refuses a sign-in without the CSRF token', async () => {
    const b = browser();
    await b.request('GET', '/dashboard/login');
    const { res } = await b.request('POST', '/dashboard/login', { key: t.adminKey });
    expect(res.status).toBe(403);
    expect(b.jar.has('laurel_session')).toBe(false);
  });

  it('refuses a form without the CSRF token or with another session’s token (403) and changes nothing', async () => {
    const b = browser();
    await signIn(b);
    const other = browser();
    await signIn(other);
    const otherToken = csrfOf((await other.request('GET', '/dashboard/metrics')).text);
    const none = await b.request('POST', '/dashboard/metrics', { name: 'X', key: 'no-token' });
    expect(none.res.status).toBe(403);
    const wrong = await b.request('POST', '/dashboard/metrics', {
      name: 'X',
      key: 'no-token',
      _csrf: otherToken,
    });
    expect(wrong.res.status).toBe(403);
    const list = await t.admin('GET', '/metrics?limit=100');
    expect(list.body.map((m: { key: string }) => m.key)).not.toContain('no-token');
  });

  it('creates through the shared admin code and shows its validation errors next to the field', async () => {
    const b = browser();
    await signIn(b);
    const page = await b.request('GET', '/dashboard/metrics');
    const bad = await b.request('POST', '/dashboard/metrics', {
      _csrf: csrfOf(page.text),
      name: 'Bad',
      key: 'has space',
    });
    expect(bad.res.status).toBe(422);
    expect(bad.text).toMatch(/id="err-key"[^>]*>must match/);
    expect(bad.text).toContain('value="has space"');
    const ok = await b.request('POST', '/dashboard/metrics', {
      _csrf: csrfOf(page.text),
      name: 'Lessons',
      key: 'lessons',
    });
    expect(ok.res.status).toBe(303);
    const list = await t.admin('GET', '/metrics?limit=100');
    expect(list.body).toContainEqual(expect.objectContaining({ key: 'lessons', name: 'Lessons' }));
  });

  it('signs out: the cookie is cleared and the dashboard asks to sign in again', async () => {
    const b = browser();
    await signIn(b);
    const saved = b.jar.get('laurel_session')!;
    const page = await b.request('GET', '/dashboard');
    const { res } = await b.request('POST', '/dashboard/logout', { _csrf: csrfOf(page.text) });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/dashboard/login?out');
    expect(res.headers.getSetCookie().some((c) => /^laurel_session=;/.test(c) && /Max-Age=0/i.test(c))).toBe(
      true,
    );
    expect((await b.request('GET', '/dashboard')).res.status).toBe(303);
    expect(saved).toBeTruthy();
  });

  it('ends the session of a revoked key', async () => {
    const [key] = await adminCreate(t, '/api-keys', [{ name: 'second admin', kind: 'admin' }]);
    const b = browser();
    await signIn(b, key.key);
    expect((await b.request('GET', '/dashboard')).res.status).toBe(200);
    expect((await t.admin('DELETE', `/api-keys?ids=${key.id}`)).body.deleted).toHaveLength(1);
    const after = await b.request('GET', '/dashboard');
    expect(after.res.status).toBe(303);
    expect(after.res.headers.get('location')).toContain('/dashboard/login');
  });

  it('rejects a tampered session cookie', async () => {
    const b = browser();
    await signIn(b);
    const [body, sig] = b.jar.get('laurel_session')!.split('.');
    b.jar.set('laurel_session', `${body}x.${sig}`);
    expect((await b.request('GET', '/dashboard')).res.status).toBe(303);
  });
});
