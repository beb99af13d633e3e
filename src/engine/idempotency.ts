// Idempotency keys are remembered for a window after their first use (application-api §4,
// IDEMPOTENCY_WINDOW_DAYS; 0 = forever). With a window W, a key first used at t lives in the hash of
// bucket floor(t / W), which expires at the end of the next bucket: every entry is kept at least W
// and at most 2W, so a user's keys never outgrow two windows of keyed events. A look-up reads the
// current and the previous bucket and treats an entry whose first use is W or more ago as forgotten.
//
// An entry is compact (a veteran keeps up to two windows of them): its field is idempotencyField (16
// hex characters of a hash of metric and key, not the key itself), and its value the first use's ms.
// The event id is then keyedEventId(user, metric, key, first use), derived again on a replay; an event
// whose id was given (a batch item, whose id follows from its batch) stores "<event id>|<ms>".
import * as crypto from 'node:crypto';
import type { UserKeys } from '../redis/keys';

export const DAY_MS = 86_400_000;

export interface IdempotencyKeys {
  /** The hash new keys are written to. */
  current: string;
  /** The hash of the previous bucket (undefined when keys are kept forever). */
  previous: string | undefined;
  /** The hash of the bucket before the previous one: past the window, deleted when `current` starts. */
  old: string | undefined;
  /** When `current` expires (ms since the epoch); undefined when keys are kept forever. */
  expireAt: number | undefined;
  /** The window in ms (0 = forever). */
  windowMs: number;
}

export function idempotencyKeys(keys: UserKeys, windowMs: number, now: number): IdempotencyKeys {
  if (windowMs <= 0)
    return {
      current: keys.idempotency,
      previous: undefined,
      old: undefined,
      expireAt: undefined,
      windowMs: 0,
    };
  const bucket = Math.floor(now / windowMs);
  return {
    current: keys.idemBucket(bucket),
    previous: keys.idemBucket(bucket - 1),
    old: keys.idemBucket(bucket - 2),
    expireAt: (bucket + 2) * windowMs,
    windowMs,
  };
}

/** A UUID (version 4 layout) made of the first 32 hex digits of a digest. */
export function uuidFromHex(h: string): string {
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((Number.parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The hash field of an idempotency key in its scope (user, metric): lua/migrateIdem.lua computes the same. */
export function idempotencyField(metricId: string, key: string): string {
  return crypto.createHash('sha1').update(`${metricId}|${key}`).digest('hex').slice(0, 16);
}

/**
 * The id of the event that first used an idempotency key at `at` (ms): unique, since a key is used
 * for a first time again only after its window, at another time.
 */
export function keyedEventId(userId: string, metricId: string, key: string, at: number): string {
  return uuidFromHex(sha256Hex(JSON.stringify([userId, metricId, key, at])));
}

/**
 * SHA-256 of a string in hex: crypto.hash's one call where Node has it (20.12+), else a Hash object
 * (read off the namespace: a named import of a missing export would fail to load on older Nodes).
 */
const oneShotHash = (crypto as { hash?: typeof crypto.hash }).hash;
export const sha256Hex: (s: string) => string = oneShotHash
  ? (s) => oneShotHash('sha256', s, 'hex')
  : (s) => crypto.createHash('sha256').update(s).digest('hex');

/**
 * The stored value of a key first used at `at` by event `eventId` (lua/lib/idempotency.lua writes the
 * same): the ms alone when the id is the derived one, else "<event id>|<ms>".
 */
export function idempotencyValue(eventId: string, at: number, derived: boolean): string {
  return derived ? String(at) : `${eventId}|${at}`;
}

/** The first use (ms) a stored value records: "<ms>" or "<event id>|<ms>"; null for a bare event id. */
export function idempotencyAt(value: string): number | null {
  const at = value.includes('|') ? value.slice(value.lastIndexOf('|') + 1) : value;
  return /^\d+$/.test(at) ? Number(at) : null;
}
