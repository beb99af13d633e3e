// What the scheduler's jobs share: the due indexes' members, claiming due members, the once-markers,
// and the rules that say when a per-user schedule is next due.
import type { Snapshot } from '../../catalog/snapshot';
import { userField } from '../../redis/user-hash';
import type { Deps } from '../../deps';

const HOUR = 3_600_000;
export const DAY = 86_400_000;

export interface SchedulerOptions {
  /** How long a claimed member stays invisible to other copies (default 5 minutes). */
  leaseMs?: number;
  /** Members claimed per pass and set. */
  batchSize?: number;
  /** Most slots granted for one member in one pass (the rest follow in the next pass). */
  maxSlotsPerMember?: number;
}

/** What every job gets: the dependencies and the scheduler's options. */
export interface JobContext {
  deps: Deps;
  opts: SchedulerOptions;
}

export const triggerIntervalMs = (t: { timeUnit: 'hours' | 'days' | null; timeInterval: number | null }) =>
  (t.timeInterval ?? 0) * (t.timeUnit === 'hours' ? HOUR : DAY);

export const ms = (d: Date | null | undefined) => (d ? d.getTime() : 0);

/** Time triggers that fire now: active, with a positive interval. */
export function activeTimeTriggers(snap: Snapshot) {
  return snap.systems.flatMap((s) =>
    s.triggers.filter((t) => t.type === 'time' && t.status === 'active' && triggerIntervalMs(t) > 0),
  );
}

/** Streak freeze auto-earn as configured, or null when it is off. */
export function autoEarn(snap: Snapshot) {
  const s = snap.streak;
  if (!s.freezesEnabled || !s.freezeAutoEarnAmount || !s.freezeAutoEarnInterval) return null;
  return {
    amount: s.freezeAutoEarnAmount,
    intervalMs: s.freezeAutoEarnInterval * DAY,
    since: ms(s.autoEarnEnabledAt),
  };
}

/** Claims the due members of one index (lua/claimDue.lua leases them), with their due times. */
export async function claimDue({ deps, opts }: JobContext, key: string): Promise<Array<[string, number]>> {
  const now = deps.clock.now();
  const flat = await deps.redis.claimDue(
    1,
    key,
    String(now),
    String(now + (opts.leaseMs ?? 5 * 60_000)),
    String(opts.batchSize ?? 500),
  );
  const out: Array<[string, number]> = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, Number(flat[i + 1])]);
  return out;
}

/** Markers of lifecycle work already done (an optimisation: the work itself is idempotent). */
export async function doneMarkers(deps: Deps, fields: string[]): Promise<Map<string, string | null>> {
  const out = new Map<string, string | null>();
  if (!fields.length) return out;
  const vals = await deps.redis.hmget(deps.keys.sched.done, ...fields);
  for (const [i, f] of fields.entries()) out.set(f, vals[i] ?? null);
  return out;
}

/**
 * The next slot of a per-user schedule anchored at max(user creation, since), from the user's own
 * record of the last slot granted (so a claim's lease never shifts a slot); null for an unknown user.
 */
export async function nextSlot(
  deps: Deps,
  userId: string,
  field: string,
  since: number,
  every: number,
): Promise<number | null> {
  const uk = deps.keys.user(userId);
  const [created, last] = await deps.redis.hmget(uk.hash, 'created', userField('counters', field));
  if (created === null) return null;
  const anchor = Math.max(Number(created), since);
  const lastSlot = last === null ? 0 : Number(last);
  if (lastSlot < anchor) return anchor + every;
  return lastSlot + every;
}

/** Splits a member on its first n - 1 bars (user ids may contain bars). */
export function splitMember(member: string, n: number): [string, string, string] {
  const out: string[] = [];
  let rest = member;
  for (let i = 0; i < n - 1; i++) {
    const at = rest.indexOf('|');
    out.push(rest.slice(0, at));
    rest = rest.slice(at + 1);
  }
  out.push(rest);
  return out as [string, string, string];
}
