// Attribute filters (semantics §5.2): lua/lib/filters.lua's matches() is the copy the user script
// applies; reads and rebuild use this one. test/lua/rules.property.test.ts runs both on the same inputs.

/** An attribute filter resolved to keys, as the user script sees it: [attribute key, value]. */
export type AttributeFilter = readonly [key: string, value: string];

/** Whether every [key, value] pair equals the attribute of that key (no filters: true). O(filters). */
export function matchesFilters(
  filters: readonly AttributeFilter[] | undefined,
  attrs: Readonly<Record<string, string | null | undefined>>,
): boolean {
  if (!filters) return true;
  // Own keys only: an attribute named like an Object.prototype member ('constructor') is absent unless set.
  return filters.every(([key, value]) => Object.hasOwn(attrs, key) && attrs[key] === value);
}
