// Metric-trigger counters (semantics §5.3). lua/applyUserOp.lua applies this rule atomically with the
// award; rebuild (src/rebuild/state.ts) replays it from recorded events. test/lua/rules.property.test.ts
// runs both on the same events.

/** A (user, metric trigger) pair's running total T of matching events and its high-water mark H (millionths). */
export interface TriggerCounters {
  total: number;
  high: number;
}

/** The counters after one matching event of `value` millionths: T moves, H keeps the highest T (initially 0). */
export function nextTriggerCounters(c: TriggerCounters, value: number): TriggerCounters {
  const total = c.total + value;
  return { total, high: Math.max(c.high, total) };
}

/**
 * Multiples of `threshold` (> 0) an event newly crossed: max(0, ⌊T1 / N⌋ − ⌊H / N⌋), with `before`
 * the counters before the event and `total` (T1) the running total after it. Decreases never count
 * and a multiple already crossed is not crossed again. Exact for |T1|, |H| ≤ 2^53.
 */
export function crossedMultiples(before: TriggerCounters, total: number, threshold: number): number {
  return Math.max(0, floorDiv(total, threshold) - floorDiv(before.high, threshold));
}

/** ⌊a / b⌋ for integers, b > 0, corrected where the double quotient rounds onto the next integer. */
export function floorDiv(a: number, b: number): number {
  let q = Math.floor(a / b);
  const r = a - q * b;
  if (r < 0) q -= 1;
  else if (r >= b) q += 1;
  return q;
}
