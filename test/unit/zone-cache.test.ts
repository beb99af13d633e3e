import { describe, expect, it } from 'vitest';
import { TwoGenerationCache } from '../../src/services/zone-cache';

describe('TwoGenerationCache', () => {
  it('answers what was set, and undefined for what was not', () => {
    const c = new TwoGenerationCache<string>(3);
    c.set('a', 'UTC');
    c.set('b', 'Asia/Tokyo');
    c.set('a', 'Europe/Paris');
    expect([c.get('a'), c.get('b'), c.get('c')]).toEqual(['Europe/Paris', 'Asia/Tokyo', undefined]);
  });

  it('stays within two generations however many keys are set', () => {
    const c = new TwoGenerationCache<number>(100);
    for (let i = 0; i < 10_000; i++) c.set(`k${i}`, i);
    expect(c.size).toBeLessThanOrEqual(200);
    expect(c.get('k9999')).toBe(9999);
    expect(c.get('k0')).toBeUndefined();
  });

  it('keeps an entry read within the last generation, and drops one left unread for two', () => {
    const c = new TwoGenerationCache<number>(10);
    c.set('kept', 1);
    c.set('dropped', 2);
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 8; i++) c.set(`r${round}-${i}`, i);
      expect(c.get('kept')).toBe(1); // read once per 8 other writes: moved up before it could go
    }
    expect(c.get('dropped')).toBeUndefined();
  });
});
