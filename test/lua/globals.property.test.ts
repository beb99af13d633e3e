// The history writer folds a chunk of records (src/workers/globals.ts globalsArgs) and lua/lib/globals.lua
// applies the fold with one variadic command per index: the indexes they leave must be those of the
// same records applied one at a time, one command per record and index (REFERENCE below: the rule as
// it was written before chunks were aggregated). Generated chunks reuse
// a few users, so one user's set, del, totals and completions interleave within a chunk. A record's
// totals and current streak apply only when its seq is above the last that set them for its user
// (K[7]): one user's records may reach the writer out of order, and the newest must stay.
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type GlobalsRecord, globalsArgs } from '../../src/workers/globals';
import { createLuaHarness, type LuaHarness } from './harness';

/** One record at a time, one command per index (A and T as lib/globals.lua documents them). */
const REFERENCE = `
-- A seq of 1 (a user's first op) is kept only for the call (no record of the user is older).
local applied = {}
local function newerThan(K, field, seq)
  if seq <= (applied[field] or tonumber(redis.call('HGET', K[7], field) or '-1')) then return false end
  applied[field] = seq
  if seq > 1 then redis.call('HSET', K[7], field, seq) end
  return true
end
local function referenceUpdate(K, A, T)
  local userId, seq, now = A[1], tonumber(A[2]), A[3]
  if A[4] == '1' then redis.call('INCR', K[1]) end
  local n = tonumber(A[9])
  for i = 1, n do redis.call('HINCRBY', K[2], A[9 + i], 1) end
  for _, t in ipairs(T) do
    if t[2] == '' then
      redis.call('ZADD', t[1], 'NX', 0, userId)
    elseif newerThan(K, userId .. '\\0' .. string.match(t[1], '[^:]+$'), seq) then
      redis.call('ZADD', t[1], t[2], userId)
    end
  end
  local newer = (A[5] == 'set' or A[5] == 'del') and newerThan(K, userId, seq)
  if A[5] == 'set' then
    if newer then
      redis.call('ZADD', K[3], A[6], userId)
      redis.call('HSET', K[4], userId, A[7])
    end
    -- One field of K[6] per user: its current longest length, set when first reached.
    local prev = tonumber(redis.call('ZSCORE', K[5], userId) or '0')
    local len = tonumber(A[6])
    redis.call('ZADD', K[5], 'GT', A[6], userId)
    if len > prev and prev > 0 then redis.call('HDEL', K[6], userId .. '|' .. prev) end
    if A[8] == '1' and len >= prev then redis.call('HSETNX', K[6], userId .. '|' .. A[6], now) end
  elseif A[5] == 'del' and newer then
    redis.call('ZREM', K[3], userId)
    redis.call('HDEL', K[4], userId)
  end
end`;

let h: LuaHarness;
beforeAll(async () => {
  h = await createLuaHarness();
});
afterAll(async () => h.close());
afterEach(async () => h.cleanup());

interface Rec {
  user: string;
  seq: number;
  now: number;
  created: boolean;
  streak: '' | 'set' | 'del';
  length: number;
  extended: boolean;
  completions: string[];
  totals: Array<[number, string]>;
}

const recArb: fc.Arbitrary<Rec> = fc.record({
  user: fc.constantFrom('u1', 'u2', 'u3'),
  seq: fc.integer({ min: 1, max: 20 }),
  now: fc.integer({ min: 1, max: 1_000 }),
  created: fc.boolean(),
  streak: fc.constantFrom<Rec['streak']>('', 'set', 'del'),
  length: fc.integer({ min: 1, max: 6 }),
  extended: fc.boolean(),
  completions: fc.array(fc.constantFrom('a1', 'a2'), { maxLength: 2 }),
  totals: fc.array(
    fc.tuple(fc.constantFrom(0, 1), fc.oneof(fc.constant(''), fc.integer({ min: 0, max: 50 }).map(String))),
    { maxLength: 2 },
  ),
});

const argsOf = (r: Rec) => [
  r.user,
  String(r.seq),
  String(r.now),
  r.created ? '1' : '0',
  r.streak,
  String(r.length),
  r.streak === 'set' ? `${r.now}|0` : '',
  r.extended ? '1' : '0',
  String(r.completions.length),
  ...r.completions,
];

/** Every key's contents, read canonically (sorted hash fields, zsets with scores). */
async function contents(keys: string[]): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    const type = await h.redis.type(k);
    if (type === 'string') out[k] = await h.redis.get(k);
    else if (type === 'hash') out[k] = Object.entries(await h.redis.hgetall(k)).sort();
    else if (type === 'zset') out[k] = await h.redis.zrange(k, 0, -1, 'WITHSCORES');
    else out[k] = type;
  }
  return out;
}

/** The keys of one run's indexes (K[1..7], then two points totals zsets, of systems pts0 and pts1). */
const keysOf = (side: string, n: number) =>
  ['count', 'done', 'active', 'meta', 'longest', 'at', 'seq', 'pts0', 'pts1'].map(
    (k) => `${h.prefix}${side}${n}:${k}`,
  );

/** INPUT of the Lua below: each record's A and its totals as [KEYS index, total]. */
const inputOf = (recs: Rec[]) =>
  recs.map((r) => ({ a: argsOf(r), t: r.totals.map(([j, total]) => [8 + j, total]) }));

/** Lua building `records` ({A, T} each, as REFERENCE takes them) from INPUT. */
const RECORDS = `
  local records = {}
  for _, rec in ipairs(INPUT) do
    local T = {}
    for _, t in ipairs(rec.t) do T[#T + 1] = { KEYS[t[1]], t[2] } end
    records[#records + 1] = { A = rec.a, T = T }
  end`;

/** The records as the writer hands them to globalsArgs (systems pts0 and pts1: KEYS[8] and KEYS[9]). */
const globalsRecordOf = (r: Rec): GlobalsRecord => ({
  user: r.user,
  seq: r.seq,
  now: String(r.now),
  created: r.created,
  streak: r.streak,
  length: r.length,
  meta: r.streak === 'set' ? `${r.now}|0` : '',
  extended: r.extended,
  completions: r.completions,
  totals: r.totals.map(([j, total]) => [`pts${j}`, total]),
});

/**
 * A user's op has one record: records of one user with one seq are that op's record delivered again
 * (the same content), never two ops. A seq of 1 leaves no guard in Redis (K[7]), so two different
 * records with seq 1 in different chunks would both apply where one call of the reference applies the
 * first only; the generator's later records with a seen (user, seq) are made copies of the first.
 */
const oneRecordPerOp = (recs: Rec[]): Rec[] => {
  const first = new Map<string, Rec>();
  return recs.map((r) => {
    const key = `${r.user}|${r.seq}`;
    const seen = first.get(key);
    if (seen) return seen;
    first.set(key, r);
    return r;
  });
};

/** lib/globals.lua applyGlobals's ARGV for a chunk of records (the writer's fold). */
const chunkInput = (recs: Rec[]) => globalsArgs(recs.map(globalsRecordOf), (sys) => 8 + Number(sys.slice(3)));

/** Applies one chunk (INPUT: chunkInput) and answers its record count. */
const APPLY = `
  local records = applyGlobals(KEYS, INPUT, 1)
  return records + 0`;

describe("lib/globals.lua applyGlobals after the writer's fold", () => {
  it('leaves the indexes the records would leave one at a time, in chunks of any size', async () => {
    let n = 0;
    await fc.assert(
      // Later chunks meet what earlier ones stored (seqs, longest lengths and when they were reached).
      fc.asyncProperty(
        fc.array(recArb, { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 12 }),
        async (generated, size) => {
          n++;
          const recs = oneRecordPerOp(generated);
          const chunkKeys = keysOf('c', n);
          const oneKeys = keysOf('o', n);
          const reference = `${RECORDS}
          for _, r in ipairs(records) do referenceUpdate(KEYS, r.A, r.T) end
          return 1`;
          for (let i = 0; i < recs.length; i += size) {
            const chunk = recs.slice(i, i + size);
            expect(await h.run(['globals'], APPLY, chunkInput(chunk), chunkKeys)).toBe(chunk.length);
          }
          await h.run([{ source: REFERENCE }], reference, inputOf(recs), oneKeys);
          const strip = (c: Record<string, unknown>, side: string) =>
            Object.fromEntries(Object.entries(c).map(([k, v]) => [k.replace(`${side}${n}:`, ''), v]));
          const chunk = strip(await contents(chunkKeys), 'c');
          expect(chunk).toEqual(strip(await contents(oneKeys), 'o'));
          // Bounded: the longest-at hash holds at most the field of each user's longest length.
          const longest = new Map<string, string>();
          const z = (chunk.longest ?? []) as string[];
          for (let i = 0; i < z.length; i += 2) longest.set(z[i]!, z[i + 1]!);
          for (const [field] of (chunk.at ?? []) as Array<[string, string]>) {
            const [user, len] = field.split('|');
            expect(longest.get(user!)).toBe(len);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('leaves the same indexes whatever order the records of distinct ops come in, in chunks of any size', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(recArb, { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(), { minLength: 12, maxLength: 12 }),
        fc.integer({ min: 1, max: 12 }),
        async (generated, sortKeys, chunk) => {
          n++;
          // Each record an op of its own (seq = its place in commit order), then delivered shuffled.
          const recs = generated.map((r, i) => ({ ...r, seq: i + 1 }));
          const shuffled = recs
            .map((r, i) => ({ r, k: sortKeys[i]! }))
            .sort((a, b) => a.k - b.k)
            .map((x) => x.r);
          const run = async (list: Rec[], keys: string[], size: number) => {
            for (let i = 0; i < list.length; i += size)
              await h.run(['globals'], APPLY, chunkInput(list.slice(i, i + size)), keys);
          };
          const inOrder = keysOf('i', n);
          const outOfOrder = keysOf('s', n);
          await run(recs, inOrder, recs.length);
          await run(shuffled, outOfOrder, chunk);
          // When a length was first reached depends on which record of it came first: left out.
          const strip = (c: Record<string, unknown>, side: string) =>
            Object.fromEntries(
              Object.entries(c)
                .filter(([k]) => !k.endsWith(':at'))
                .map(([k, v]) => [k.replace(`${side}${n}:`, ''), v]),
            );
          expect(strip(await contents(outOfOrder), 's')).toEqual(strip(await contents(inOrder), 'i'));
        },
      ),
      { numRuns: 150 },
    );
  });
});
