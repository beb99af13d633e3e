import { describe, expect, it } from 'vitest';
import { histogramRanges, rarity } from '../../src/engine/stats';

describe('rarity', () => {
  it('is 100 × completions / users rounded to 2 decimals, halves away from zero', () => {
    expect(rarity(1, 3)).toBe(33.33);
    expect(rarity(2, 3)).toBe(66.67);
    expect(rarity(1, 8)).toBe(12.5);
    expect(rarity(1, 80_000)).toBe(0); // 0.00125 → 0.00
    expect(rarity(1, 20_000)).toBe(0.01); // 0.005 → 0.01 (half away from zero)
    expect(rarity(1, 40_000)).toBe(0); // 0.0025 → 0.00
    expect(rarity(5, 5)).toBe(100);
  });

  it('is 0 without users or completions', () => {
    expect(rarity(0, 0)).toBe(0);
    expect(rarity(0, 10)).toBe(0);
  });
});

describe('histogramRanges', () => {
  it('uses 10 as the upper bound up to a highest total of 10', () => {
    for (const top of [0, 1, 10]) {
      expect(histogramRanges(top)).toEqual([
        { from: 0, to: 0 },
        ...Array.from({ length: 10 }, (_, i) => ({ from: i + 1, to: i + 1 })),
      ]);
    }
  });

  it('uses the smallest power of 10 at or above the highest total', () => {
    const r = histogramRanges(734);
    expect(r).toHaveLength(11);
    expect(r[1]).toEqual({ from: 1, to: 100 });
    expect(r[10]).toEqual({ from: 901, to: 1000 });
    expect(histogramRanges(1000)[10]).toEqual({ from: 901, to: 1000 });
    expect(histogramRanges(1001)[10]).toEqual({ from: 9001, to: 10000 });
    expect(histogramRanges(11)[1]).toEqual({ from: 1, to: 10 });
  });
});
