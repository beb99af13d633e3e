import { readFileSync } from 'node:fs';
import { type Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { deleteCookie, getCookie } from 'hono/cookie';
import { verifyApiKey } from '../api-keys';
import type { Deps } from '../deps';
import { AppError } from '../errors';
import { formOf, str } from './forms';
import { mountAchievementPages } from './pages/achievements';
import { mountAttributePages } from './pages/attributes';
import { mountMetricPages } from './pages/metrics';
import { mountStreakPages } from './pages/streaks';
import { mountConfigCodePages } from './pages/config-code';
import { mountImportPages } from './pages/import';
import { mountConnectPages } from './pages/connect';
import { mountLeaderboardPages } from './pages/leaderboards';
import { mountOverview } from './pages/overview';
import { mountPointsPages } from './pages/points';
import { mountSimulationPages } from './pages/simulations';
import { mountUserPages } from './pages/users';
import {
  clearSessionCookie,
  type DashEnv,
  LOGIN_COOKIE,
  loginNonce,
  requireSession,
  SessionSigner,
  SESSION_COOKIE,
  setSessionCookie,
} from './session';
import { Csrf, Logo } from './ui';

const CSS = readFileSync(new URL('./style.css', import.meta.url), 'utf8');

const LoginPage = (p: { csrf: string; next: string; error?: string; status?: string }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>Sign in · Laurel</title>
      <link rel="stylesheet" href="/dashboard/assets/style.css" />
    </head>
    <body>
      <div class="login">
        <div class="card">
          <div class="brand">
            <Logo /> Laurel
          </div>
          <h2>Sign in to the dashboard</h2>
          <p class="sub" style="margin-bottom:16px">
            Use an admin API key. Application keys cannot sign in.
          </p>
          {p.status ? <div class="flash ok">{p.status}</div> : null}
          <form method="post" action="/dashboard/login" class="stack">
            <Csrf token={p.csrf} />
            <input type="hidden" name="next" value={p.next} />
            <div class={`field${p.error ? ' bad' : ''}`} data-field="key">
              <label for="f-key">Admin API key</label>
              <input id="f-key" name="key" type="password" autocomplete="off" placeholder="prefix.secret" />
              {p.error ? (
                <div class="err" role="alert">
                  {p.error}
                </div>
              ) : null}
            </div>
            <button type="submit">Sign in</button>
          </form>
        </div>
      </div>
    </body>
  </html>
);

const Problem = (p: { title: string; text: string }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <title>{`${p.title} · Laurel`}</title>
      <link rel="stylesheet" href="/dashboard/assets/style.css" />
    </head>
    <body>
      <div class="login">
        <div class="card">
          <h2>{p.title}</h2>
          <p>{p.text}</p>
          <p>
            <a href="/dashboard">Back to the dashboard</a>
          </p>
        </div>
      </div>
    </body>
  </html>
);

const Refused = () => (
  <Problem
    title="Request refused"
    text="This form did not carry a valid security token, so nothing was changed."
  />
);

const safeNext = (n: string | undefined) =>
  n && /^\/dashboard(\/[A-Za-z0-9/_\-?=&%.]*)?$/.test(n) && !n.startsWith('//') ? n : '/dashboard';

/** The operator dashboard, mounted at /dashboard: server-rendered pages over the admin code paths. */
export function dashboardRoutes(deps: Deps) {
  const app = new Hono<DashEnv>();
  const signer = new SessionSigner(deps.config.DASHBOARD_SESSION_SECRET);
  const refused = (c: Context<DashEnv>) => c.html(<Refused />, 403);

  app.use('*', async (c, next) => {
    await next();
    c.header('Cache-Control', 'no-store');
    c.header('X-Frame-Options', 'DENY');
    c.header('Referrer-Policy', 'same-origin');
    c.header('X-Content-Type-Options', 'nosniff');
  });
  // Forms are small; an events file may be as large as an admin request body.
  const formLimit = bodyLimit({ maxSize: 256 * 1024, onError: (c) => c.text('Form too large', 413) });
  const fileLimit = bodyLimit({
    maxSize: deps.config.ADMIN_BODY_LIMIT_BYTES,
    onError: (c) => c.text('File too large', 413),
  });
  app.use('*', (c, next) => (c.req.path === '/dashboard/import' ? fileLimit : formLimit)(c, next));

  app.get('/assets/style.css', (c) => {
    c.header('Content-Type', 'text/css; charset=utf-8');
    return c.body(CSS);
  });

  app.get('/login', (c) => {
    const status = c.req.query('out') !== undefined ? 'You are signed out.' : undefined;
    return c.html(
      <LoginPage csrf={signer.csrfFor(loginNonce(c))} next={safeNext(c.req.query('next'))} status={status} />,
    );
  });

  app.post('/login', async (c) => {
    const nonce = getCookie(c, LOGIN_COOKIE);
    const v = await formOf(c);
    const body = await c.req.parseBody();
    if (!nonce || !signer.checkCsrf(nonce, body._csrf)) return refused(c);
    const next = safeNext(str(v.next));
    const key = verifyApiKey(str(v.key), 'admin', (p) => deps.catalog.snapshot.apiKeysByPrefix.get(p));
    if (!key) {
      deps.logger.info({ requestId: c.get('requestId') }, 'dashboard sign-in refused');
      return c.html(
        <LoginPage csrf={signer.csrfFor(nonce)} next={next} error="That is not an active admin API key." />,
        401,
      );
    }
    deleteCookie(c, LOGIN_COOKIE, { path: '/dashboard' });
    setSessionCookie(c, signer.issue(key, deps.clock.now()));
    return c.redirect(next, 303);
  });

  app.use('*', requireSession(deps, signer, refused));

  app.post('/logout', (c) => {
    clearSessionCookie(c);
    return c.redirect('/dashboard/login?out', 303);
  });

  mountOverview(app, deps);
  mountUserPages(app, deps);
  mountMetricPages(app, deps);
  mountAttributePages(app, deps);
  mountAchievementPages(app, deps);
  mountStreakPages(app, deps);
  mountPointsPages(app, deps);
  mountLeaderboardPages(app, deps);
  mountConnectPages(app, deps);
  mountConfigCodePages(app, deps);
  mountSimulationPages(app, deps);
  mountImportPages(app, deps);
  app.onError((err, c) => {
    if (err instanceof AppError && err.status < 500) {
      return c.html(<Problem title="Not available" text={err.message} />, err.status);
    }
    deps.logger.error({ err, requestId: c.get('requestId'), path: c.req.path }, 'dashboard error');
    return c.html(
      <Problem title="Something went wrong" text="The page could not be shown. Try again." />,
      500,
    );
  });
  return app;
}

export { SESSION_COOKIE };
