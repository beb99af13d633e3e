// The streak's scalar fields are stored packed in two fields of the user hash (src/redis/user-hash.ts
// STREAK_PACKS, lua/lib/streak.lua): splitUserHash shows them by name, joinUserHash packs them.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { joinUserHash, STREAK_PACKS, splitUserHash, storedStreak } from '../../src/redis/user-hash';

const stored = {
  id: 'u1',
  's:_': '1|3|0|5|20784|1||2026-11-25',
  's:~': '1795521600000|1795809605697|1795809605697',
  's:s:01a21e97-ee42-7263-8c91-8d236b5f4586': '1000000',
  's:pauses': '[[20790,20800]]',
};

describe('packed streak fields', () => {
  it('reads the packed fields by name; an empty value is a field not set', () => {
    expect(splitUserHash(stored).streak).toEqual({
      epoch: '1',
      length: '3',
      freezes: '0',
      longest: '5',
      curIdx: '20784',
      curMet: '1',
      started: '2026-11-25',
      longestAt: '1795521600000',
      lengthAt: '1795809605697',
      metAt: '1795809605697',
      's:01a21e97-ee42-7263-8c91-8d236b5f4586': '1000000',
      pauses: '[[20790,20800]]',
    });
  });

  it('writes what it read, packed again', () => {
    expect(joinUserHash(splitUserHash(stored))).toEqual(stored);
  });

  it("reads an earlier version's fields of their own as they are", () => {
    const earlier = { 's:epoch': '2', 's:length': '4', 's:started': '', 's:lastMet': '20784' };
    expect(splitUserHash(earlier).streak).toEqual({ epoch: '2', length: '4', started: '', lastMet: '20784' });
    // Stored again, packed: '' reads as not set, as it does for every reader of the streak.
    expect(joinUserHash(splitUserHash(earlier))).toEqual({ 's:_': '2|4|||||20784|' });
    expect(storedStreak(splitUserHash(earlier).streak)).toEqual({
      epoch: '2',
      length: '4',
      lastMet: '20784',
    });
  });

  it('reads the packed fields where the hash also holds fields of their own (the packed ones win)', () => {
    // What a process of the earlier version leaves when it writes to a packed hash.
    const both = {
      's:_': '5|0|2|0|20165|0||',
      's:started': '2025-03-15',
      's:lastMet': '20162',
      's:length': '1',
    };
    expect(splitUserHash(both).streak).toEqual({
      epoch: '5',
      length: '0',
      freezes: '2',
      longest: '0',
      curIdx: '20165',
      curMet: '0',
    });
  });

  it('reads nothing of a damaged packed value, as the Lua pattern matches nothing', () => {
    expect(splitUserHash({ 's:_': '5|0', 's:length': '3' }).streak).toEqual({});
  });

  it('leaves a pack out when none of its fields is set', () => {
    expect(joinUserHash({ streak: { pauses: '[]' } })).toEqual({ 's:pauses': '[]' });
  });

  it('keeps each packed value within the 64 bytes of the compact hash encoding', () => {
    // The widest values a field takes: 13-digit times, 6-digit period indexes, 5-digit lengths.
    const widest: Record<string, string> = {
      epoch: '99',
      length: '99999',
      freezes: '999',
      longest: '99999',
      curIdx: '-99999',
      curMet: '1',
      lastMet: '-99999',
      started: '2026-11-27',
      longestAt: '9999999999999',
      lengthAt: '9999999999999',
      metAt: '9999999999999',
    };
    const hash = joinUserHash({ streak: widest });
    for (const name of Object.keys(STREAK_PACKS)) expect(hash[`s:${name}`]!.length).toBeLessThanOrEqual(64);
  });

  it('round-trips any streak part', () => {
    const value = fc.oneof(fc.constant(''), fc.stringMatching(/^[0-9-]{1,13}$/));
    const names = Object.values(STREAK_PACKS).flat();
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...names), value), (streak) => {
        const once = storedStreak(streak);
        expect(splitUserHash(joinUserHash({ streak })).streak).toEqual(once);
        expect(storedStreak(once)).toEqual(once);
        for (const [f, v] of Object.entries(streak)) expect(once[f]).toBe(v === '' ? undefined : v);
      }),
    );
  });
});
