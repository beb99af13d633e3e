import { describe, expect, it } from 'vitest';
import { matchesFilters } from '../../src/engine/filters';

describe('matchesFilters (semantics §5.2)', () => {
  it('matches without filters', () => {
    expect(matchesFilters(undefined, {})).toBe(true);
    expect(matchesFilters([], { plan: 'pro' })).toBe(true);
  });

  it('matches only when every pair equals the attribute, case and all', () => {
    const attrs = { plan: 'pro', region: 'eu' };
    expect(matchesFilters([['plan', 'pro']], attrs)).toBe(true);
    expect(
      matchesFilters(
        [
          ['plan', 'pro'],
          ['region', 'us'],
        ],
        attrs,
      ),
    ).toBe(false);
    expect(matchesFilters([['plan', 'Pro']], attrs)).toBe(false);
  });

  it('does not match a missing or null attribute, nor a prototype member of the same name', () => {
    expect(matchesFilters([['tier', '']], { plan: 'pro' })).toBe(false);
    expect(matchesFilters([['tier', 'gold']], { tier: null })).toBe(false);
    expect(matchesFilters([['constructor', 'x']], {})).toBe(false);
  });
});
