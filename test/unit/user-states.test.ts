import { describe, expect, it } from 'vitest';
import { foldStates, type StateChange } from '../../src/rebuild/user-states';

const change = (seq: number, c: { s?: string[]; c?: string[]; a?: string } | null): StateChange => ({
  userId: 'u',
  seq,
  state: c === null ? null : JSON.stringify(c),
});

describe('stored user states (each op kept with its changes, folded in op order)', () => {
  it('applies the changes in op order whatever order they are stored in, later fields winning', () => {
    const folded = foldStates(
      [],
      [
        change(3, { c: ['x', '3'], a: '' }),
        change(1, { s: ['length', '1', 'lastMet', '10'], c: ['x', '1', 'y', '1'], a: '1|100|200' }),
        change(2, null),
        change(4, { s: ['length', '2'] }),
      ],
    ).get('u');
    expect(folded).toEqual({
      userId: 'u',
      seq: 4,
      streak: { length: '2', lastMet: '10' },
      counters: { x: '3', y: '1' },
      indexes: { active: '' },
    });
  });

  it('records the last op of a user whose ops changed no field', () => {
    expect(foldStates([], [change(1, null), change(7, null)]).get('u')).toMatchObject({ seq: 7, streak: {} });
    // A row without a seq (an event written before ops had one) changes nothing.
    expect(foldStates([], [{ userId: 'u', seq: null, state: '{"c":["x","1"]}' }]).has('u')).toBe(false);
  });

  it("folds later ops over an earlier version's user_states row; earlier ops add only what it lacks", () => {
    const base = {
      userId: 'u',
      seq: 5,
      streak: { length: '4' },
      counters: { x: '5' },
      indexes: { active: '4|1|2' },
    };
    const folded = foldStates(
      [base],
      [
        // Written after the row by a newer version, though older: the row's fields win.
        change(4, { s: ['length', '3', 'freezes', '1'], c: ['x', '4', 'z', '4'], a: '3|1|2' }),
        change(3, { c: ['z', '3', 'w', '3'] }),
        change(6, { c: ['x', '6'] }),
      ],
    ).get('u');
    expect(folded).toEqual({
      userId: 'u',
      seq: 6,
      streak: { length: '4', freezes: '1' },
      // z: the newest of the older ops (4) wins over the oldest (3); x: the op after the row.
      counters: { x: '6', z: '4', w: '3' },
      indexes: { active: '4|1|2' },
    });
    // The row is copied, never changed.
    expect(base.counters).toEqual({ x: '5' });
    expect(foldStates([base], []).get('u')).toEqual(base);
  });
});
