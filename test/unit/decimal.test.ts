import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromMicros, multiplierFraction, toMicros } from '../../src/engine/decimal';

describe('toMicros', () => {
  it.each([
    [0, 0],
    [1, 1_000_000],
    [0.1, 100_000],
    [0.1 + 0.2, 300_000],
    [-2.5, -2_500_000],
    [0.0000005, 1],
    [-0.0000005, -1],
    [0.0000004999, 0],
    [2.5e-7, 0],
    [1e-7, 0],
    [1e-6, 1],
    [1.0000005, 1_000_001],
    [-1.0000005, -1_000_001],
    [0.1234565, 123_457],
    [Number('123456789.123456789'), 123_456_789_123_457],
    [1e9, 1e15],
    [9007199254.74099, 9_007_199_254_740_990],
    [-9007199254.74099, -9_007_199_254_740_990],
    [5e-324, 0],
  ])('rounds %s to %s millionths', (value, micros) => {
    expect(toMicros(value)).toBe(micros);
  });

  it('returns positive zero for negative zero and tiny negatives', () => {
    expect(Object.is(toMicros(-0), 0)).toBe(true);
    expect(Object.is(toMicros(-1e-9), 0)).toBe(true);
  });

  it.each([
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    1.5e21,
    -1.5e21,
    1e10,
    9007199254.740992,
    Number.MAX_VALUE,
  ])('throws RangeError for %s', (value) => {
    expect(() => toMicros(value)).toThrow(RangeError);
  });

  it('rounds a 7th decimal digit half away from zero', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -(1e14 - 1), max: 1e14 - 1 }),
        fc.integer({ min: 0, max: 9 }),
        (m, digit) => {
          // At most 15 significant digits, so the number's shortest text is exactly this decimal.
          const abs = BigInt(Math.abs(m));
          const text = `${m < 0 ? '-' : ''}${abs / 1_000_000n}.${String(abs % 1_000_000n).padStart(6, '0')}${digit}`;
          const expected = (Math.abs(m) + (digit >= 5 ? 1 : 0)) * (m < 0 ? -1 : 1);
          expect(toMicros(Number(text))).toBe(expected === 0 ? 0 : expected);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('fromMicros', () => {
  it.each([
    [0, 0],
    [100_000, 0.1],
    [300_000, 0.3],
    [-1, -0.000001],
    [123_456_789, 123.456789],
  ])('converts %s millionths to %s', (micros, value) => {
    expect(fromMicros(micros)).toBe(value);
  });

  it('round-trips every integer count of millionths below 10^15 (15 significant digits)', () => {
    fc.assert(
      fc.property(fc.integer({ min: -(1e15 - 1), max: 1e15 - 1 }), (m) => {
        expect(toMicros(fromMicros(m))).toBe(m);
      }),
      { numRuns: 2000 },
    );
  });

  it('never prints more than 6 decimals for safe counts', () => {
    fc.assert(
      fc.property(fc.maxSafeInteger(), (m) => {
        const decimals = String(fromMicros(m)).split('.')[1] ?? '';
        expect(decimals.length).toBeLessThanOrEqual(6);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('multiplierFraction', () => {
  it.each([
    [1.1, 11, 10],
    [1.25, 5, 4],
    [2, 2, 1],
    [0.5, 1, 2],
    [1.5, 3, 2],
    [0.333333, 333_333, 1_000_000],
    [1.0000004, 1, 1],
    [1.23456789, 154_321, 125_000],
    [-1.5, -3, 2],
    [0, 0, 1],
  ])('reduces %s to %s/%s', (m, num, den) => {
    expect(multiplierFraction(m)).toEqual({ num, den });
  });
});
