import { describe, expect, it } from 'vitest';
import {
  oneReply,
  parseRecord,
  parseReply,
  parseWire,
  quietOutcome,
  replyList,
  resolveLevels,
  validatedRecord,
  validatedReply,
} from '../../src/redis/user-script';

const level = (n: number) => ({
  id: `lv${n}`,
  key: `level-${n}`,
  name: `Level ${n}`,
  description: null,
  badgeUrl: null,
  points: n * 10,
});
const system = { id: 'sys', key: 'xp', name: 'XP', description: null, badgeUrl: null, maxPoints: null };

/** A record as lua/applyUserOp.lua writes it (cjson: empty tables are {}). */
const record = {
  op: 'event',
  id: 'e1',
  user: 'u1',
  now: 1_795_561_686_470,
  tz: 'UTC',
  date: '2026-11-25',
  seq: 1,
  created: true,
  metric: 'm1',
  value: '1000000',
  total: '1000000',
  completions: [{ id: 'a1', cid: 'c1', at: 1_795_561_686_470 }],
  points: [
    {
      sys: 'sys',
      total: 15,
      added: 15,
      awards: [{ id: 'aw1', awarded: 15, total: 15, trigger: 't1', boosts: {}, date: 1_795_561_686_470 }],
      lb: false,
      la: 2,
    },
  ],
  streak: {
    length: 1,
    freezes: 0,
    extended: true,
    periods: [{ idx: 1, length: 1, freeze: false, pause: false }],
  },
  boards: {},
  battrs: {},
  freq: 'daily',
};
/**
 * The same record as the user script now writes it: its integers as digits (lua/applyUserOp.lua; cjson
 * would print each number through snprintf). Records written before carry numbers.
 */
const digits = {
  ...record,
  now: '1795561686470',
  seq: '1',
  completions: [{ id: 'a1', cid: 'c1', at: '1795561686470' }],
  points: [
    {
      ...record.points[0]!,
      total: '15',
      added: '15',
      awards: [{ ...record.points[0]!.awards[0]!, awarded: '15', total: '15', date: '1795561686470' }],
    },
  ],
  streak: {
    ...record.streak,
    length: '1',
    freezes: '0',
    lost: '0',
    lastMet: '1',
    periods: [{ idx: '1', length: '1', freeze: false, pause: false }],
  },
};
const extra = {
  ts: '1795561686470123',
  epoch: 1,
  sh: ['length', '1'],
  profile: { id: 'u1', created: '1795561686470' },
};
const wire = { sys: { sb: system, lv: [level(1), level(2)] } };

describe('user script contract (src/redis/user-script.ts)', () => {
  it('resolves an outbox entry: awards per system, levels from the wire objects at commit, field x merged', () => {
    const r = parseRecord(['r', JSON.stringify(record), 'x', JSON.stringify(extra), 'w', 'wSomeId'])!;
    // Field w names the wire snapshot; its levels wait for the objects it names.
    expect(r.wire).toBe('wSomeId');
    expect(r.levels).toBeUndefined();
    resolveLevels(r, parseWire(JSON.stringify(wire)));
    expect(r.points).toBeUndefined();
    expect(r.awards).toEqual([{ sys: 'sys', awards: [{ ...record.points[0]!.awards[0], boosts: [] }] }]);
    expect(r.levels).toEqual([{ sys: 'sys', b: false, a: level(2), sb: system }]);
    expect(r.boards).toEqual([]);
    expect(r.battrs).toEqual({});
    expect(r.ts).toBe('1795561686470123');
    expect(r.sh).toEqual(['length', '1']);
    expect(r.profile).toEqual(extra.profile);
  });

  it('keeps only a changed profile for the users table (an unchanged one is the reply’s)', () => {
    const upsert = { ...record, op: 'upsert', points: {}, profile: { id: 'u1' } };
    const r = parseRecord(['r', JSON.stringify(upsert), 'x', JSON.stringify({ ts: '1', epoch: 1 })])!;
    expect(r.profile).toBeUndefined();
  });

  it('reads records written before the record was the reply (awards, levels and x fields inside r)', () => {
    const { points: _, ...rest } = record;
    const legacy = {
      ...rest,
      awards: [{ sys: 'sys', awards: record.points[0]!.awards }],
      levels: [{ sys: 'sys', b: false, a: level(1), sb: system }],
      ts: '5',
      epoch: 2,
    };
    const r = parseRecord(['r', JSON.stringify(legacy)])!;
    expect(r.levels).toEqual(legacy.levels);
    expect(r.awards[0]!.awards[0]!.boosts).toEqual([]);
    expect(r.ts).toBe('5');
    expect(r.epoch).toBe(2);
  });

  it('reads lua/recomputeStreak.lua records (periods without freeze and pause flags)', () => {
    const recompute = {
      ...record,
      op: 'recompute',
      points: undefined,
      awards: {},
      streak: { length: 3, freezes: 0, extended: false, changed: true, periods: [{ idx: 7, length: 3 }] },
    };
    const r = parseRecord(['r', JSON.stringify(recompute)])!;
    expect(r.op).toBe('recompute');
    expect(r.streak.periods).toEqual([{ idx: 7, length: 3, freeze: false, pause: false }]);
  });

  it('reads an outbox entry as the zod schemas do, without them (the writer’s trusted reading)', () => {
    const { points: _, ...noPoints } = record;
    const variants: unknown[] = [
      record,
      digits,
      { ...record, eattrs: {}, idem: 'm1|k', moves: {}, streak: { ...record.streak, pauses: {} } },
      { ...record, boards: [{ id: 'b1', run: '2026-11-01', value: '15', ap: true }], battrs: [] },
      { ...noPoints, op: 'upsert', completions: {}, awards: {}, profile: { id: 'u1', 'a:plan': 'pro' } },
      {
        ...noPoints,
        op: 'recompute',
        streak: { length: 2, freezes: 0, extended: false, periods: [{ idx: 7, length: 2 }] },
      },
      {
        ...noPoints,
        awards: [{ sys: 'sys', awards: [{ ...record.points[0]!.awards[0], boosts: ['bo1'] }] }],
        ts: '5',
        epoch: 2,
      },
    ];
    const extras = [undefined, extra, { ts: '1', epoch: 1, sh: {}, cw: ['c', '1'], profile: {} }];
    for (const v of variants)
      for (const x of extras) {
        const fields = ['r', JSON.stringify(v), ...(x ? ['x', JSON.stringify(x)] : []), 'w', 'wId'];
        expect(parseRecord(fields)).toEqual(validatedRecord(fields));
      }
    // Both refuse what the writer could not key rows on.
    for (const bad of [
      { ...record, user: 7 },
      { ...record, now: 'soon' },
      { ...record, now: '1.5' },
      { ...digits, seq: '' },
      { ...record, streak: {} },
    ]) {
      expect(() => validatedRecord(['r', JSON.stringify(bad)])).toThrow();
      expect(() => parseRecord(['r', JSON.stringify(bad)])).toThrow();
    }
    expect(() => parseRecord(['r', JSON.stringify(record), 'x', '{"epoch":1}'])).toThrow();
  });

  it('reads a reply’s record as its zod schema does, without it (the API’s trusted reading)', () => {
    const moves = [
      { id: 'b1', prevRank: 3, rank: 2, prevValue: '5', value: '6', threshold: '1', evicted: 'u9' },
      { id: 'b2', err: 'GROUP', group: 'pro' },
      { id: 'b3', rank: 1, value: '6', threshold: '0', stale: true },
    ];
    for (const v of [
      record,
      digits,
      { ...record, moves, boards: [{ id: 'b1', run: '2026-11-01', value: '6', ap: true }] },
      { ...record, moves: {}, eattrs: {}, battrs: [], completions: {} },
      { ...record, op: 'upsert', points: undefined, profile: { id: 'u1', tz: 'UTC' } },
      { ...record, op: 'restore', restore: { from: 1, to: 4 }, granted: 0 },
    ]) {
      const raw = JSON.stringify(v);
      expect(parseReply(raw)).toEqual(validatedReply(raw));
    }
    for (const bad of [
      { ...record, user: 7 },
      { ...record, streak: {} },
      { ...record, seq: 'one' },
    ]) {
      expect(() => parseReply(JSON.stringify(bad))).toThrow();
      expect(() => validatedReply(JSON.stringify(bad))).toThrow();
    }
  });

  it('tells a batch item whose reply needs no handling from one that does (quietOutcome)', () => {
    const board = { id: 'b1', value: 1 };
    expect(quietOutcome(JSON.stringify({ ...record, boards: [] }))).toBe('done');
    expect(quietOutcome(JSON.stringify({ ...record, boards: [{ ...board, ap: true }] }))).toBe('done');
    // A board the script did not move (another slot, a breakdown, a group it left) is the caller's.
    expect(quietOutcome(JSON.stringify({ ...record, boards: [{ ...board, ap: true }, board] }))).toBe('full');
    expect(quietOutcome(JSON.stringify({ err: 'TZ', tz: 'Europe/Paris' }))).toBe('full');
    expect(quietOutcome(JSON.stringify({ err: 'METRIC_BOUND' }))).toBe('full');
    expect(quietOutcome(JSON.stringify({ replay: 'e1', total: '1', streak: record.streak }))).toBe(
      'replayed',
    );
    expect(quietOutcome(JSON.stringify({ ...record, boards: undefined }))).toBe('full');
    // The short answers of a multi-op call.
    expect(quietOutcome('d')).toBe('done');
    expect(quietOutcome('r')).toBe('replayed');
  });

  it('reads a record whose integers are digits as the same record with numbers', () => {
    const { streak, ...rest } = validatedRecord(['r', JSON.stringify(digits)])!;
    const fromNumbers = validatedRecord([
      'r',
      JSON.stringify({ ...record, streak: { ...record.streak, lost: 0, lastMet: 1 } }),
    ])!;
    expect({ ...rest, streak }).toEqual(fromNumbers);
    expect(parseRecord(['r', JSON.stringify(digits)])).toEqual(fromNumbers);
    const reply = parseReply(JSON.stringify(digits));
    expect(reply.kind === 'record' && reply.record.points?.[0]?.awards[0]?.awarded).toBe(15);
  });

  it('refuses a record outside the contract rather than guessing', () => {
    expect(() => parseRecord(['r', JSON.stringify({ ...record, op: 'teleport' })])).toThrow();
    expect(() => parseRecord(['r', JSON.stringify({ ...record, seq: 'one' })])).toThrow();
    expect(parseRecord(['other', '{}'])).toBeNull();
  });

  it('tells replies apart: error, idempotent replay, record', () => {
    expect(parseReply('{"err":"TZ","tz":"Asia/Tokyo"}')).toEqual({
      kind: 'error',
      err: 'TZ',
      tz: 'Asia/Tokyo',
    });
    const replay = parseReply(
      '{"replay":"e0","total":"5","streak":{"length":0,"freezes":0,"extended":false}}',
    );
    expect(replay.kind).toBe('replay');
    const rec = parseReply(JSON.stringify(record));
    expect(rec.kind === 'record' && rec.record.points?.[0]?.la).toBe(2);
  });

  it('checks the shape of a call’s reply: one string, or one per op of a multi-op call', () => {
    expect(oneReply('x')).toBe('x');
    expect(() => oneReply(['x'])).toThrow();
    expect(replyList(['x', 'y'])).toEqual(['x', 'y']);
    expect(() => replyList('x')).toThrow();
  });
});
