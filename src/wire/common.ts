import type { Snapshot } from '../catalog/snapshot';

// Response and webhook shapes of the application API (application-api.md §7), built from
// configuration rows: one module per resource, shared by http, the dashboard and the webhooks.
// Helpers every shape uses.

export const isoMs = (ms: number) => new Date(ms).toISOString();

const memos = new WeakMap<Snapshot, Map<string, unknown>>();

/**
 * A copy of `base` with `extra`'s fields after its own: what `{ ...base, ...extra }` builds, without
 * the spread. In Node 20 an object spread with fields added after it gets hidden classes of its own
 * on every call (V8's clone of the source's map is detached from the transition tree, so each added
 * field makes a new map and descriptor array): about 13 maps an event, old-generation garbage
 * (measured with `node --log-maps`). Object.assign into a new object reuses them.
 */
export function extend<B extends object, E extends object>(base: B, extra: E): B & E {
  return Object.assign({}, base, extra);
}

/**
 * A response fragment derived only from configuration, built once per snapshot (the hot path sends
 * the same trigger, achievement and board objects over and over). Callers must not mutate it.
 */
export function memo<T>(snap: Snapshot, key: string, build: () => T): T {
  let m = memos.get(snap);
  if (!m) {
    m = new Map();
    memos.set(snap, m);
  }
  let v = m.get(key) as T | undefined;
  if (v === undefined) {
    v = build();
    m.set(key, v);
  }
  return v;
}

// Built in the engine too: the user script's wire side channel carries trigger objects (plan.ts).
export { attributeFilters } from '../engine/points-shapes';
