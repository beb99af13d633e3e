import { describe, expect, it } from 'vitest';
import {
  crossedMultiples,
  floorDiv,
  nextTriggerCounters,
  type TriggerCounters,
} from '../../src/engine/trigger-counters';

/** Multiples crossed by each event of a sequence, from fresh counters. */
function crossings(values: number[], threshold: number): number[] {
  let c: TriggerCounters = { total: 0, high: 0 };
  return values.map((v) => {
    const k = crossedMultiples(c, c.total + v, threshold);
    c = nextTriggerCounters(c, v);
    return k;
  });
}

describe('metric-trigger counters (semantics §5.3)', () => {
  it('awards on the event that reaches the threshold: values 1, 1, 1 with N = 3', () => {
    expect(crossings([1, 1, 1], 3)).toEqual([0, 0, 1]);
  });

  it('counts every multiple one event crosses: 7 from 0 with N = 3 crosses two', () => {
    expect(crossings([7], 3)).toEqual([2]);
  });

  it('never counts a decrease, nor a multiple re-crossed after one', () => {
    expect(crossings([4, -3, 3, 2], 3)).toEqual([1, 0, 0, 1]);
  });

  it('keeps the highest total as the high-water mark, never lowering it', () => {
    expect(nextTriggerCounters({ total: 5, high: 5 }, -2)).toEqual({ total: 3, high: 5 });
    expect(nextTriggerCounters({ total: 0, high: 0 }, -2)).toEqual({ total: -2, high: 0 });
  });

  it('floors negative quotients towards minus infinity', () => {
    expect([floorDiv(-1, 3), floorDiv(-3, 3), floorDiv(-4, 3), floorDiv(4, 3)]).toEqual([-1, -1, -2, 1]);
  });
});
