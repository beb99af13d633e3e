// Idempotency keys are remembered for a window after their first use (application-api §4,
// IDEMPOTENCY_WINDOW_DAYS; 0 = forever). With a window W, a key first used at t lives in the hash of
// bucket floor(t / W), which expires at the end of the next bucket: every entry is kept at least W
// and at most 2W, so a user's keys never outgrow two windows of keyed events. A look-up reads the
// current and the previous bucket and treats an entry whose first use is W or more ago as forgotten.
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

/** The stored value of a key first used at `at` by event `eventId` (the script writes the same). */
export function idempotencyValue(eventId: string, at: number, windowMs: number): string {
  return windowMs > 0 ? `${eventId}|${at}` : eventId;
}
