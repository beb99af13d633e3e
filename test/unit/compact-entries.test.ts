// The compact Redis entries of a user (src/redis/user-hash.ts decodeAward, src/engine/idempotency.ts):
// both the current form and the one written before it are read.
import { describe, expect, it } from 'vitest';
import {
  idempotencyAt,
  idempotencyField,
  idempotencyValue,
  keyedEventId,
} from '../../src/engine/idempotency';
import { decodeAward } from '../../src/redis/user-hash';

const award = {
  id: '0e7f5c4a-1b2c-4d3e-8f4a-5b6c7d8e9f00',
  awarded: 15,
  total: 3655,
  trigger: '01a21180-7c8f-718f-9e2a-7f3a6efece52',
  boosts: ['01a21180-7cdb-7346-9fc6-70e3281a1914', '01a21180-7cdb-7346-9fc6-70e3281a1915'],
  date: 1795521600000,
};

describe('recent-award entries', () => {
  it('reads the compact entry the user script writes', () => {
    const raw = `3655|15|${award.id}|1795521600000|${award.trigger}|${award.boosts.join(',')}`;
    expect(decodeAward(raw)).toEqual(award);
    expect(decodeAward(`3655|15|${award.id}|1795521600000|${award.trigger}|`)).toEqual({
      ...award,
      boosts: [],
    });
  });

  it('reads the JSON object of lists written before, an empty boost list encoded as {} included', () => {
    expect(decodeAward(JSON.stringify(award))).toEqual(award);
    expect(decodeAward(JSON.stringify({ ...award, boosts: {} }))).toEqual({ ...award, boosts: [] });
  });
});

describe('idempotency entries', () => {
  it('names a key by 16 hex digits of its scope, and keeps the first use alone when the id is derived', () => {
    expect(idempotencyField('m1', 'order-1')).toMatch(/^[0-9a-f]{16}$/);
    expect(idempotencyField('m1', 'order-1')).not.toBe(idempotencyField('m2', 'order-1'));
    expect(idempotencyValue('e1', 1700000000000, true)).toBe('1700000000000');
    expect(idempotencyValue('e1', 1700000000000, false)).toBe('e1|1700000000000');
  });

  it('derives a UUID per user, metric, key and first use', () => {
    const id = keyedEventId('u1', 'm1', 'k', 1700000000000);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(keyedEventId('u1', 'm1', 'k', 1700000000000)).toBe(id);
    for (const other of [
      keyedEventId('u2', 'm1', 'k', 1700000000000),
      keyedEventId('u1', 'm2', 'k', 1700000000000),
      keyedEventId('u1', 'm1', 'k2', 1700000000000),
      keyedEventId('u1', 'm1', 'k', 1700000000001),
      // The parts cannot run into each other.
      keyedEventId('u1|m1', '', 'k', 1700000000000),
    ])
      expect(other).not.toBe(id);
  });

  it('reads the first use of every stored form', () => {
    expect(idempotencyAt('1700000000000')).toBe(1700000000000);
    expect(idempotencyAt('e1|1700000000000')).toBe(1700000000000);
    expect(idempotencyAt('5f0c6c1e-8d1a-4c53-9a51-5b8e2c7d9a10')).toBeNull();
  });
});
