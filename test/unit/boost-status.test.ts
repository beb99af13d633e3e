import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyMultipliers, type BoostRounding, boostStatus } from '../../src/engine/boost-status';

describe('boostStatus', () => {
  it.each([
    ['2024-03-01', '2024-03-10', '2024-02-29', 'scheduled'],
    ['2024-03-01', '2024-03-10', '2024-03-01', 'active'],
    ['2024-03-01', '2024-03-10', '2024-03-10', 'active'],
    ['2024-03-01', '2024-03-10', '2024-03-11', 'finished'],
    ['2024-03-01', null, '2099-01-01', 'active'],
    ['2024-03-01', null, '2024-02-01', 'scheduled'],
  ] as const)('a boost %s..%s on %s is %s', (start, end, today, status) => {
    expect(boostStatus(start, end, today)).toBe(status);
  });
});

const boost = (multiplier: number, rounding: BoostRounding = 'down') => ({ multiplier, rounding });

describe('applyMultipliers', () => {
  it.each([
    [10, [boost(1.1, 'up')], 11],
    [10, [boost(1.1, 'down')], 11],
    [10, [boost(1.1, 'nearest')], 11],
    [7, [boost(1.1, 'down')], 7],
    [7, [boost(1.1, 'up')], 8],
    [7, [boost(1.1, 'nearest')], 8],
    [6, [boost(1.2, 'nearest')], 7],
    [4, [boost(1.3, 'nearest')], 5],
    [10, [boost(1.15, 'nearest')], 12],
    [-10, [boost(1.15, 'nearest')], -11],
    [-10, [boost(1.15, 'down')], -12],
    [-10, [boost(1.15, 'up')], -11],
    [3, [boost(0.5, 'nearest')], 2],
    [-3, [boost(0.5, 'nearest')], -1],
    [1, [boost(2), boost(1.5), boost(3)], 9],
    [3, [boost(0.333333, 'down')], 0],
    [3, [boost(0.333333, 'up')], 1],
    [100, [boost(1.1, 'up'), boost(1.1, 'up'), boost(1.1, 'up')], 134],
    [7, [boost(1.1, 'up'), boost(1.1, 'nearest')], 8],
    [7, [boost(1.5, 'up'), boost(1.5, 'nearest')], 15],
    [9, [boost(1.5, 'nearest'), boost(1.1, 'nearest')], 15],
    [0, [boost(3, 'up')], 0],
  ])('%s × %o = %s', (base, boosts, expected) => {
    expect(applyMultipliers(base, boosts)).toBe(expected);
  });

  it('rounds down when the boosts do not share one rounding mode', () => {
    expect(applyMultipliers(7, [boost(1.1, 'up'), boost(1, 'nearest')])).toBe(7);
    expect(applyMultipliers(-7, [boost(1.1, 'up'), boost(1, 'up')])).toBe(-7);
    expect(applyMultipliers(-7, [boost(1.1, 'up'), boost(1, 'down')])).toBe(-8);
  });

  it('returns the base unchanged without boosts', () => {
    expect(applyMultipliers(42, [])).toBe(42);
    expect(applyMultipliers(-5, [])).toBe(-5);
  });

  it('orders down ≤ nearest ≤ up within one unit and is exact for integer multipliers', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -1_000_000, max: 1_000_000 }),
        fc.array(fc.integer({ min: 0, max: 5_000_000 }), { minLength: 1, maxLength: 3 }),
        (base, microsList) => {
          const multipliers = microsList.map((m) => m / 1e6);
          const with_ = (rounding: BoostRounding) =>
            applyMultipliers(
              base,
              multipliers.map((multiplier) => ({ multiplier, rounding })),
            );
          const down = with_('down');
          const nearest = with_('nearest');
          const up = with_('up');
          expect(down <= nearest && nearest <= up).toBe(true);
          expect(up - down).toBeLessThanOrEqual(1);
          const exact = microsList.reduce((acc, m) => acc * BigInt(m), BigInt(base));
          const scale = 1_000_000n ** BigInt(microsList.length);
          if (exact % scale === 0n) {
            expect(down).toBe(Number(exact / scale));
            expect(up).toBe(down);
          } else {
            expect(up).toBe(down + 1);
          }
        },
      ),
    );
  });
});
