import type { Context } from 'hono';
import type { Snapshot } from '../catalog/snapshot';
import { badRequest, invalidAttributeKeys, unprocessable } from '../errors';
import { readBody } from './middleware/body-limit';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Reads the JSON body: empty, invalid UTF-8 or invalid JSON → 400. */
export async function readJson(c: Context): Promise<unknown> {
  const buf = await readBody(c);
  if (buf.byteLength === 0) throw badRequest('Request body is required');
  let text: string;
  try {
    text = utf8.decode(buf);
  } catch {
    throw badRequest('Request body is not valid UTF-8');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw badRequest('Request body is not valid JSON');
  }
  // Postgres text cannot hold U+0000: refuse it up front rather than fail when history is written.
  if (ESCAPED_NUL.test(text)) throw unprocessable('Strings must not contain the NUL character (\\u0000)');
  // Lone UTF-16 surrogates can only arrive escaped (the decoder above is strict); neither Postgres
  // nor UTF-8 can hold them, so a body that has any is refused.
  if (ESCAPED_SURROGATE.test(text) && !wellFormed(parsed)) {
    throw unprocessable('Strings must be valid Unicode (no lone surrogates)');
  }
  return parsed;
}

/** A `\u0000` escape in JSON text (preceded by an even number of backslashes, so not `\\u0000`). */
const ESCAPED_SURROGATE = /\\u[dD][89a-fA-F]/;

/** Whether every string (keys too) in a parsed JSON value is well-formed UTF-16; iterative (any depth). */
function wellFormed(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (!v.isWellFormed()) return false;
    } else if (Array.isArray(v)) {
      for (const x of v) stack.push(x);
    } else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (!k.isWellFormed()) return false;
        stack.push(x);
      }
    }
  }
  return true;
}

const ESCAPED_NUL = /(?<!\\)(?:\\\\)*\\u0000/;

/** Every query parameter of a request, parsed once (Hono parses the whole URL on each look-up). */
const parsedQueries = new WeakMap<Context, Record<string, string[]>>();

/** Query parameters as the SDK sends them: every value of a key, decoded. */
export function queryAll(c: Context, name: string): string[] {
  let parsed = parsedQueries.get(c);
  if (!parsed) {
    parsed = c.req.queries();
    parsedQueries.set(c, parsed);
  }
  const all = parsed[name] ?? [];
  if (all.some((v) => v.includes('\0'))) throw unprocessable(`${name} must not contain the NUL character`);
  return all;
}

/** A scalar query parameter: given more than once → 422. */
export function queryOne(c: Context, name: string): string | undefined {
  const all = queryAll(c, name);
  if (all.length > 1) throw unprocessable(`${name} must be given once`);
  return all[0];
}

/** Integer query parameter per contract §6.1 (`^-?[0-9]+$`, bounds inclusive). */
export function queryInt(c: Context, name: string, def: number, min: number, max: number): number {
  const raw = queryOne(c, name);
  if (raw === undefined) return def;
  if (!/^-?[0-9]+$/.test(raw)) throw unprocessable(`${name} must be an integer`);
  const n = Number(raw);
  if (n < min || n > max) throw unprocessable(`${name} must be between ${min} and ${max}`);
  return n;
}

/** Splits repeated and comma-joined values; drops empty items. */
export function queryList(c: Context, name: string): string[] {
  return queryAll(c, name)
    .flatMap((v) => v.split(','))
    .filter((v) => v !== '');
}

/**
 * `userAttributes` filter (application-api §6.1): key:value pairs, comma-separated, repeated
 * parameters concatenated; each pair splits at its first ':'. Syntax only; keys are checked later.
 */
export function queryAttributeFilter(c: Context): Array<[string, string]> | undefined {
  const raw = queryAll(c, 'userAttributes');
  if (raw.length === 0) return undefined;
  const pairs = raw.flatMap((v) => v.split(','));
  return pairs.map((p) => {
    const i = p.indexOf(':');
    const key = i < 0 ? p : p.slice(0, i);
    const value = i < 0 ? '' : p.slice(i + 1);
    if (!key || !value) throw unprocessable('userAttributes must be key:value pairs');
    return [key, value];
  });
}

/** A userAttributes filter may only name user attributes that exist: else 422 naming the others. */
export function requireKnownUserAttributes(snap: Snapshot, pairs: Array<[string, string]>): void {
  const unknown = pairs.map(([k]) => k).filter((k) => !snap.userAttributesByKey.has(k));
  if (unknown.length) throw invalidAttributeKeys(unknown);
}

/** A date query parameter (YYYY-MM-DD, a real calendar date) or undefined. */
export function queryDate(c: Context, name: string): string | undefined {
  const raw = queryOne(c, name);
  if (raw === undefined) return undefined;
  const t = /^\d{4}-\d{2}-\d{2}$/.test(raw) ? Date.parse(`${raw}T00:00:00Z`) : Number.NaN;
  if (Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== raw)
    throw unprocessable(`${name} must be a date YYYY-MM-DD`);
  return raw;
}

/** The `{id}` path segment naming a user: 1–255 characters after decoding, else 422 (application-api §6.4). */
export function userIdParam(c: Context): string {
  const id = c.req.param('id') ?? '';
  if (id.length < 1 || id.length > 255) throw unprocessable('User id must be 1 to 255 characters');
  if (id.includes('\0')) throw unprocessable('User id must not contain the NUL character');
  return id;
}

/** A boolean query parameter (`true` / `false`, else 422) or its default. */
export function queryBool(c: Context, name: string, def: boolean): boolean {
  const raw = queryOne(c, name);
  if (raw === undefined) return def;
  if (raw !== 'true' && raw !== 'false') throw unprocessable(`${name} must be true or false`);
  return raw === 'true';
}
