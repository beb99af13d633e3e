// Reading user script records (lua/applyUserOp.lua, lua/commitUserOp.lua) in tests that compare them,
// and the random events they are made from.
import fc from 'fast-check';

/** cjson encodes an empty Lua table as {}: the lists of a record, read as lists. */
const LISTS = new Set(['completions', 'points', 'boards', 'periods', 'awards', 'boosts', 'moves']);

/** A record (or part of one) with its empty lists as [], whichever encoder wrote it. */
export function normalizeRecord(v: unknown, key = ''): unknown {
  if (Array.isArray(v)) return v.map((x) => normalizeRecord(x));
  if (v && typeof v === 'object') {
    const entries = Object.entries(v);
    if (entries.length === 0 && LISTS.has(key)) return [];
    return Object.fromEntries(entries.map(([k, x]) => [k, normalizeRecord(x, k)]));
  }
  return v;
}

/** A flat [field, value, ...] list (hash fields, a stream entry, counters) as a map. */
export function flatPairs(flat: unknown): Record<string, string> {
  const list = Array.isArray(flat) ? (flat as string[]) : [];
  const out: Record<string, string> = {};
  for (let i = 0; i < list.length; i += 2) out[list[i]!] = list[i + 1]!;
  return out;
}

/**
 * The fields of a random event for the mixed configuration (test/helpers/rebuild.ts mixedSetup) and
 * alike: metric, value (decimal, zero, negative), event attribute, user attribute, and the users'
 * zones by index.
 */
export const EVENT_ZONES = ['UTC', 'America/Los_Angeles', 'Pacific/Auckland'];
export const eventFields = {
  metric: fc.constantFrom('lessons', 'lessons', 'minutes'),
  value: fc.constantFrom(0, 0.5, 1, 1, 2, 3.25, -0.4),
  kind: fc.constantFrom(undefined, 'quiz', 'video'),
  region: fc.constantFrom(undefined, undefined, 'eu', 'us'),
};
