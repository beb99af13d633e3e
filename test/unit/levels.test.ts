import { describe, expect, it } from 'vitest';
import { levelChanged, levelOf } from '../../src/engine/levels';

const sys = {
  levels: [
    { id: 'bronze', points: 0 },
    { id: 'silver', points: 100 },
    { id: 'gold', points: 500 },
  ],
};

describe('levelOf (semantics §5.11)', () => {
  it('is the level with the highest threshold the total reaches', () => {
    expect([0, 99, 100, 499, 500, 10_000].map((t) => levelOf(sys, t)?.id)).toEqual([
      'bronze',
      'bronze',
      'silver',
      'silver',
      'gold',
      'gold',
    ]);
  });

  it('is null below the lowest threshold and for a system without levels', () => {
    expect(levelOf({ levels: [{ id: 'x', points: 10 }] }, 9)).toBeNull();
    expect(levelOf({ levels: [] }, 50)).toBeNull();
  });
});

describe('levelChanged', () => {
  it("compares levels by id, with null, undefined and the script's false all meaning none", () => {
    expect(levelChanged({ id: 'a' }, { id: 'a' })).toBe(false);
    expect(levelChanged({ id: 'a' }, { id: 'b' })).toBe(true);
    expect(levelChanged(null, false)).toBe(false);
    expect(levelChanged(undefined, { id: 'a' })).toBe(true);
    expect(levelChanged({ id: 'a' }, null)).toBe(true);
  });
});
