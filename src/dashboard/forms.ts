import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { ItemIssue, pgCode } from '../admin/common';
import { recordAdminWrite } from '../config-as-code/audit';
import type { Deps } from '../deps';
import { AppError } from '../errors';
import { CSRF_FIELD, type DashEnv } from './session';
import type { PageCtx } from './ui';
import type { FormState } from './components/fields';

export type Values = Record<string, string | string[]>;

/** The submitted form without the CSRF token; file fields are ignored. */
export async function formOf(c: Context): Promise<Values> {
  const body = await c.req.parseBody({ all: true });
  const out: Values = {};
  for (const [k, v] of Object.entries(body)) {
    if (k === CSRF_FIELD) continue;
    if (Array.isArray(v)) out[k] = v.filter((x): x is string => typeof x === 'string');
    else if (typeof v === 'string') out[k] = v;
  }
  return out;
}

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

/** A text field: trimmed, absent when empty. */
export const str = (v: string | string[] | undefined): string | undefined => {
  const s = one(v)?.trim();
  return s ? s : undefined;
};

/** A nullable text field: empty means null. */
export const strOrNull = (v: string | string[] | undefined): string | null => str(v) ?? null;

/**
 * A number field: absent when empty; a value that is not a number is passed on as typed so the
 * shared validation reports it in its own words.
 */
export const num = (v: string | string[] | undefined): number | string | undefined => {
  const s = str(v);
  if (s === undefined) return undefined;
  const n = Number(s);
  return s !== '' && Number.isFinite(n) ? n : s;
};

export const list = (v: string | string[] | undefined): string[] =>
  (Array.isArray(v) ? v : v ? [v] : []).map((x) => x.trim()).filter(Boolean);

export const checked = (v: string | string[] | undefined) => one(v) === 'on';

/**
 * Which field a validation message is about. Messages of the admin code name the field first
 * ("key: …", "metricId is required …", "conditions.0.threshold must …"); anything else is a form error.
 */
export function fieldOf(message: string, fields: readonly string[]): string | undefined {
  const m = /^([A-Za-z]+)(\.(\d+)\.([A-Za-z]+))?/.exec(message);
  if (m) {
    const nested = m[2] ? `${m[1]}.${m[3]}.${m[4]}` : undefined;
    if (nested && fields.includes(nested)) return nested;
    if (fields.includes(m[1]!)) return m[1];
  }
  if (/with this key already exists/.test(message) && fields.includes('key')) return 'key';
  return undefined;
}

/** Turns a validation failure into a form state that keeps the input; other errors propagate. */
export function failedForm(err: unknown, fields: readonly string[], values: Values): FormState {
  const isValidation =
    err instanceof ItemIssue || (err instanceof AppError && [400, 404, 422].includes(err.status));
  // An id in the URL that is not a UUID: Postgres refuses it before any row is touched.
  if (pgCode(err) === '22P02') return { values, errors: {}, formError: 'Not found' };
  if (!isValidation) throw err;
  const message = (err as Error).message;
  const field = fieldOf(message, fields);
  return field
    ? { values, errors: { [field]: message.replace(/^[A-Za-z.0-9]+:\s*/, '') } }
    : { values, errors: {}, formError: message };
}

export type Attempt<T> = { ok: true; value: T } | { ok: false; form: FormState };

/**
 * Runs one admin operation (the same functions the admin API calls) and publishes the
 * configuration change, like the admin routes do after a successful write.
 */
export async function attempt<T>(
  deps: Deps,
  run: () => Promise<T>,
  fields: readonly string[],
  values: Values,
  publish = true,
): Promise<Attempt<T>> {
  try {
    const value = await recordAdminWrite(deps, async () => {
      const v = await run();
      if (publish) await deps.catalog.changed();
      return v;
    });
    return { ok: true, value };
  } catch (err) {
    return { ok: false, form: failedForm(err, fields, values) };
  }
}

const FLASH_COOKIE = 'laurel_flash';

/** Post/redirect/get with a one-time message. */
export function done(c: Context<DashEnv>, to: string, text: string, kind: 'ok' | 'warn' | 'error' = 'ok') {
  setCookie(c, FLASH_COOKIE, encodeURIComponent(`${kind}|${text}`), {
    path: '/dashboard',
    httpOnly: true,
    sameSite: 'Strict',
    maxAge: 60,
  });
  return c.redirect(to, 303);
}

/** Context every page gets: CSRF token, who is signed in, and the pending one-time message. */
export function pageCtx(c: Context<DashEnv>): PageCtx {
  const raw = getCookie(c, FLASH_COOKIE);
  let flash: PageCtx['flash'];
  if (raw) {
    deleteCookie(c, FLASH_COOKIE, { path: '/dashboard' });
    const [kind, ...rest] = decodeURIComponent(raw).split('|');
    if (kind === 'ok' || kind === 'warn' || kind === 'error') flash = { kind, text: rest.join('|') };
  }
  return { csrf: c.get('csrf'), keyName: c.get('apiKey').name, flash };
}
