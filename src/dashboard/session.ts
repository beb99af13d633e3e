import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { ApiKeyRow } from '../catalog/snapshot';
import type { Deps } from '../deps';
import type { AppEnv } from '../app-env';

/** Variables of a dashboard request: the signed-in admin key and the session's CSRF token. */
export type DashEnv = { Variables: AppEnv['Variables'] & { csrf: string } };

export const SESSION_COOKIE = 'laurel_session';
/** Pre-session nonce that binds the sign-in form's CSRF token to this browser. */
export const LOGIN_COOKIE = 'laurel_login';
export const CSRF_FIELD = '_csrf';
const SESSION_TTL_MS = 12 * 3_600_000;

interface SessionPayload {
  /** Admin key id and prefix: checked against the catalog on every request. */
  k: string;
  p: string;
  /** Random per-session nonce; the CSRF token is derived from it. */
  n: string;
  /** Issued at (clock ms). */
  t: number;
}

const b64 = (s: string) => Buffer.from(s).toString('base64url');
const unb64 = (s: string) => Buffer.from(s, 'base64url').toString();

/** Signs and verifies session cookies and derives CSRF tokens with one server secret. */
export class SessionSigner {
  private readonly secret: Buffer;

  constructor(secret: string | undefined) {
    // Without a configured secret, sessions live as long as this process (and only on it).
    this.secret = secret ? Buffer.from(secret) : randomBytes(32);
  }

  private mac(purpose: string, data: string): string {
    return createHmac('sha256', this.secret).update(`${purpose}:${data}`).digest('base64url');
  }

  private same(a: string, b: string): boolean {
    const x = Buffer.from(a);
    const y = Buffer.from(b);
    return x.length === y.length && timingSafeEqual(x, y);
  }

  issue(key: ApiKeyRow, nowMs: number): string {
    const payload: SessionPayload = {
      k: key.id,
      p: key.prefix,
      n: randomBytes(16).toString('base64url'),
      t: nowMs,
    };
    const body = b64(JSON.stringify(payload));
    return `${body}.${this.mac('session', body)}`;
  }

  read(cookie: string | undefined, nowMs: number): SessionPayload | null {
    if (!cookie) return null;
    const [body, sig] = cookie.split('.');
    if (!body || !sig || !this.same(sig, this.mac('session', body))) return null;
    try {
      const p = JSON.parse(unb64(body)) as SessionPayload;
      if (typeof p.k !== 'string' || typeof p.p !== 'string' || typeof p.n !== 'string') return null;
      if (typeof p.t !== 'number' || nowMs - p.t > SESSION_TTL_MS || p.t - nowMs > SESSION_TTL_MS)
        return null;
      return p;
    } catch {
      return null;
    }
  }

  csrfFor(nonce: string): string {
    return this.mac('csrf', nonce);
  }

  checkCsrf(nonce: string, presented: unknown): boolean {
    return typeof presented === 'string' && this.same(presented, this.csrfFor(nonce));
  }
}

const cookieOptions = (c: Context) => ({
  path: '/dashboard',
  httpOnly: true,
  sameSite: 'Strict' as const,
  secure: new URL(c.req.url).protocol === 'https:',
});

export function setSessionCookie(c: Context, value: string): void {
  setCookie(c, SESSION_COOKIE, value, { ...cookieOptions(c), maxAge: SESSION_TTL_MS / 1000 });
}

export function clearSessionCookie(c: Context): void {
  deleteCookie(c, SESSION_COOKIE, cookieOptions(c));
}

/** The sign-in form's nonce: reused when the browser has one, else created and set. */
export function loginNonce(c: Context): string {
  const existing = getCookie(c, LOGIN_COOKIE);
  if (existing && /^[A-Za-z0-9_-]{22}$/.test(existing)) return existing;
  const nonce = randomBytes(16).toString('base64url');
  setCookie(c, LOGIN_COOKIE, nonce, { ...cookieOptions(c), maxAge: 3600 });
  return nonce;
}

/** The active admin key a session names, or null (unknown, revoked, or no longer admin). */
function sessionKey(deps: Deps, s: SessionPayload): ApiKeyRow | null {
  const row = deps.catalog.snapshot.apiKeysByPrefix.get(s.p);
  if (!row || row.id !== s.k || row.status !== 'active' || row.kind !== 'admin') return null;
  return row;
}

/**
 * Requires a valid session for every dashboard page: the cookie's signature, its age, and the admin
 * key it names (a revoked key signs the session out). Every POST must carry the session's CSRF token.
 */
export function requireSession(
  deps: Deps,
  signer: SessionSigner,
  onCsrfFailure: (c: Context<DashEnv>) => Response | Promise<Response>,
): MiddlewareHandler<DashEnv> {
  return async (c, next) => {
    const s = signer.read(getCookie(c, SESSION_COOKIE), deps.clock.now());
    const key = s ? sessionKey(deps, s) : null;
    if (!s || !key) {
      if (getCookie(c, SESSION_COOKIE)) clearSessionCookie(c);
      if (c.req.method === 'GET') {
        const next = c.req.path + (new URL(c.req.url).search || '');
        return c.redirect(`/dashboard/login?next=${encodeURIComponent(next)}`, 303);
      }
      return c.redirect('/dashboard/login', 303);
    }
    c.set('apiKey', key);
    c.set('csrf', signer.csrfFor(s.n));
    if (c.req.method === 'POST') {
      const body = await c.req.parseBody({ all: true });
      if (!signer.checkCsrf(s.n, body[CSRF_FIELD])) return onCsrfFailure(c);
    }
    await next();
  };
}
