import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ApiKeyRow } from './catalog/snapshot';

export type ApiKeyKind = 'admin' | 'application';

const KEY_RE = /^([a-z0-9]{8})\.([A-Za-z0-9_-]{43})$/;
const PREFIX_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** SHA-256 of the secret, hex. Secrets carry 256 random bits, so a fast hash is enough. */
export const hashSecret = (secret: string) => createHash('sha256').update(secret).digest('hex');

/** A new `{prefix}.{secret}` key with 8 random prefix characters and 43 base64url characters. */
export function generateApiKey(): { key: string; prefix: string; secretHash: string } {
  const bytes = randomBytes(8);
  let prefix = '';
  for (const b of bytes) prefix += PREFIX_ALPHABET[b % PREFIX_ALPHABET.length];
  const secret = randomBytes(32).toString('base64url');
  return { key: `${prefix}.${secret}`, prefix, secretHash: hashSecret(secret) };
}

export function parseApiKey(key: string): { prefix: string; secret: string } | null {
  const m = KEY_RE.exec(key);
  return m ? { prefix: m[1]!, secret: m[2]! } : null;
}

/**
 * Secrets this process has already verified, per configuration snapshot (a new snapshot, e.g. after a
 * key was revoked, starts empty): prefix -> the row and the secret that hashed to its hash. A request
 * presenting the same key again is checked with a constant-time comparison instead of a SHA-256.
 */
const verified = new WeakMap<object, Map<string, { row: ApiKeyRow; secret: Buffer }>>();

/**
 * Like verifyApiKey, remembering successful verifications for as long as `snapshot` is current.
 * Only keys that verified are remembered, so unknown or wrong keys cannot grow the cache.
 */
export function verifyApiKeyCached(
  presented: string | undefined,
  kind: ApiKeyKind,
  snapshot: { apiKeysByPrefix: Map<string, ApiKeyRow> },
): ApiKeyRow | null {
  if (!presented) return null;
  const parsed = parseApiKey(presented.trim());
  if (!parsed) return null;
  let known = verified.get(snapshot);
  if (!known) {
    known = new Map();
    verified.set(snapshot, known);
  }
  const hit = known.get(parsed.prefix);
  if (hit) {
    const secret = Buffer.from(parsed.secret);
    if (secret.length === hit.secret.length && timingSafeEqual(secret, hit.secret)) {
      return hit.row.kind === kind ? hit.row : null;
    }
  }
  const row = verifyApiKey(presented, kind, (p) => snapshot.apiKeysByPrefix.get(p));
  if (row) known.set(parsed.prefix, { row, secret: Buffer.from(parsed.secret) });
  return row;
}

/** Returns the key row when `presented` is a valid, active key of `kind`; compares hashes in constant time. */
export function verifyApiKey(
  presented: string | undefined,
  kind: ApiKeyKind,
  lookup: (prefix: string) => ApiKeyRow | undefined,
): ApiKeyRow | null {
  if (!presented) return null;
  const parsed = parseApiKey(presented.trim());
  if (!parsed) return null;
  const row = lookup(parsed.prefix);
  // Hash even when the prefix is unknown so timing does not reveal which prefixes exist.
  const actual = Buffer.from(hashSecret(parsed.secret), 'hex');
  const expected = Buffer.from(row?.secretHash ?? '0'.repeat(64), 'hex');
  const match = expected.length === actual.length && timingSafeEqual(actual, expected);
  if (!row || !match || row.status !== 'active' || row.kind !== kind) return null;
  return row;
}

/**
 * Why `presented` was refused on an API that takes keys of `kind`, for the 401 message. Only a key
 * whose secret matches is described further (revoked, wrong kind): anyone else learns nothing.
 */
export function refusalReason(
  presented: string,
  kind: ApiKeyKind,
  lookup: (prefix: string) => ApiKeyRow | undefined,
): string {
  const parsed = parseApiKey(presented.trim());
  if (!parsed) return 'Invalid API key: expected the form {prefix}.{secret}';
  const row = lookup(parsed.prefix);
  const actual = Buffer.from(hashSecret(parsed.secret), 'hex');
  const expected = Buffer.from(row?.secretHash ?? '0'.repeat(64), 'hex');
  if (!row || !timingSafeEqual(actual, expected)) return 'Invalid API key';
  if (row.status !== 'active') return 'This API key was revoked';
  if (row.kind === kind) return 'Invalid API key';
  return row.kind === 'admin'
    ? 'This is an admin key; the application API (/v1, /api) needs an application key'
    : 'This is an application key; the admin API (/admin/v1) needs an admin key';
}
