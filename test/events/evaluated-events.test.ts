// Events evaluated in the API (src/services/evaluated-op.ts, lua/commitUserOp.lua) against the same
// events applied by lua/applyUserOp.lua alone (EVALUATE_EVENTS off, the default): two servers on one configuration
// (one database, two key prefixes) get the same random sequences at the same instants, and must answer
// the same and leave the same Redis state. Every event carries an Idempotency-Key, so its id, and the
// ids it mints, are derived from the key and its first use: the same on both servers.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCluster } from '../../src/redis/client';
import { EVENT_ZONES, eventFields, flatPairs, normalizeRecord } from '../helpers/records';
import { mixedSetup, snapshotKeys } from '../helpers/rebuild';
import { spyOwnCalls } from '../helpers/spy';
import { createTestServer, keysUnder, type TestServer } from '../helpers/server';

let evaluated: TestServer;
let scripted: TestServer;
beforeAll(async () => {
  evaluated = await createTestServer({ env: { EVALUATE_EVENTS: '1' } });
  await mixedSetup(evaluated);
  scripted = await createTestServer({ env: { DATABASE_URL: evaluated.databaseUrl } });
});
afterAll(async () => {
  await scripted?.close();
  await evaluated?.close();
});

/**
 * The snapshot with its keys relative to the server's prefix, and the outbox's entries (the record,
 * x without its commit time, and whether w is there).
 */
async function state(t: TestServer): Promise<Record<string, unknown>> {
  const snap = await snapshotKeys(t);
  const out = Object.fromEntries(Object.entries(snap).map(([k, v]) => [k.slice(t.prefix.length), v]));
  const entries = (await t.deps.redis.xrange(t.deps.keys.outboxes[0]!, '-', '+')) as Array<
    [string, string[]]
  >;
  out.outbox = entries.map(([, f]) => {
    const e = flatPairs(f);
    const { ts: _, ...x } = JSON.parse(e.x!) as Record<string, unknown>;
    x.cw = flatPairs(x.cw);
    return { r: normalizeRecord(JSON.parse(e.r!)), x: normalizeRecord(x), w: 'w' in e };
  });
  return out;
}

const opArb = fc.record({
  ...eventFields,
  user: fc.integer({ min: 0, max: 2 }),
  hours: fc.constantFrom(0, 0, 1, 5, 20, 26, 50),
  // Mostly fresh keys; now and then one used before (a replay).
  reuse: fc.constantFrom(false, false, false, false, true),
});

describe('events evaluated in the API and events applied by the user script', () => {
  it('answer the same and leave the same state', async () => {
    if (isCluster(evaluated.deps.redis)) return; // a Cluster's events all run in the user script
    const commits = spyOwnCalls(evaluated.deps.redis, 'commitUserOp');
    let run = 0;
    // Events sent with a key not used before (a replay commits nothing).
    let fresh = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 30 }), async (ops) => {
          run++;
          let n = 0;
          for (const op of ops) {
            for (const t of [evaluated, scripted]) t.clock.advance(op.hours * 3600_000);
            const id = `ee${run}-${op.user}`;
            const user: Record<string, unknown> = { id, tz: EVENT_ZONES[op.user % EVENT_ZONES.length] };
            if (op.region) user.attributes = { region: op.region };
            const replay = op.reuse && n > 0;
            if (!replay) fresh++;
            const key = replay ? `k${n - 1}` : `k${n++}`;
            const send = (t: TestServer) =>
              t.api(
                'POST',
                `/v1/metrics/${op.metric}/event`,
                { user, value: op.value, ...(op.kind ? { attributes: { kind: op.kind } } : {}) },
                { 'Idempotency-Key': `${id}-${key}` },
              );
            const [a, b] = [await send(evaluated), await send(scripted)];
            expect([201, 202]).toContain(a.status);
            expect({ status: a.status, body: a.body }).toEqual({ status: b.status, body: b.body });
          }
          expect(await state(evaluated)).toEqual(await state(scripted));
        }),
        { numRuns: 8 },
      );
      // Most events took the evaluated path: a read and a commit each (the arrays are random: a fixed
      // count, more than 50, failed once when they came out short).
      const committed = commits.calls().filter((c) => c[1 + Number(c[0])] === 'commitMany').length;
      expect(committed).toBeGreaterThan(fresh * 0.8);
    } finally {
      commits.restore();
    }
  });

  it('keeps the newest 10 awards of a user, as the user script does', async () => {
    if (isCluster(evaluated.deps.redis)) return;
    for (let i = 0; i < 14; i++) {
      const body = { user: { id: 'many-awards' }, value: 2 };
      const headers = { 'Idempotency-Key': `aw-${i}` };
      const [a, b] = [
        await evaluated.api('POST', '/v1/metrics/lessons/event', body, headers),
        await scripted.api('POST', '/v1/metrics/lessons/event', body, headers),
      ];
      expect(a.body).toEqual(b.body);
      expect(await state(evaluated)).toEqual(await state(scripted));
    }
    const awards = Object.entries(await state(evaluated)).filter(([k]) => k.includes('many-awards:awards:'));
    expect(awards).toHaveLength(1);
    expect(awards[0]![1]).toHaveLength(10);
  });

  it('keeps the newest 100 streak periods of a user, as the user script does', async () => {
    if (isCluster(evaluated.deps.redis)) return;
    for (let day = 0; day < 103; day++) {
      for (const t of [evaluated, scripted]) {
        t.clock.advance(24 * 3600_000);
        const res = await t.api(
          'POST',
          '/v1/metrics/lessons/event',
          { user: { id: 'daily' }, value: 1 },
          { 'Idempotency-Key': `day-${day}` },
        );
        expect(res.status).toBe(201);
      }
    }
    const hist = Object.entries(await state(evaluated)).find(([k]) => k.includes('user:daily:shist'));
    expect(String(hist?.[1]).split(',')).toHaveLength(100);
    expect(await state(evaluated)).toEqual(await state(scripted));
  });

  it('carries any text of the user through the commit, as the user script stores it', async () => {
    if (isCluster(evaluated.deps.redis)) return;
    // The commit's writes travel as one JSON argument that cjson decodes: quotes, backslashes, control
    // characters and text beyond ASCII must arrive as the user script would have stored them. (A lone
    // surrogate, which cjson would refuse, never gets that far: the API refuses it, 422.)
    const names = ['Zoë "the" \\ coder', 'tab\there\nnew line \u0001', '名前 🎉', 'lone \ud800 half'];
    const apply = spyOwnCalls(evaluated.deps.redis, 'applyUserOp');
    try {
      for (const [i, name] of names.entries()) {
        const body = { user: { id: `texts-${i} ${name}`, name, attributes: { region: name } }, value: 1 };
        const [a, b] = [
          await evaluated.api('POST', '/v1/metrics/lessons/event', body, { 'Idempotency-Key': `texts-${i}` }),
          await scripted.api('POST', '/v1/metrics/lessons/event', body, { 'Idempotency-Key': `texts-${i}` }),
        ];
        expect([a.status, b.status]).toEqual(i < 3 ? [201, 201] : [422, 422]);
        expect(a.body).toEqual(b.body);
      }
      expect(await state(evaluated)).toEqual(await state(scripted));
      // Every accepted event was committed from the API.
      expect(apply.calls().length).toBe(0);
    } finally {
      apply.restore();
    }
  });

  it('gathers the reads and commits of parallel events, and keeps parallel events of one user exact', async () => {
    if (isCluster(evaluated.deps.redis)) return;
    const commits = spyOwnCalls(evaluated.deps.redis, 'commitUserOp');
    try {
      const send = (id: string, i: number) =>
        evaluated.api(
          'POST',
          '/v1/metrics/lessons/event',
          { user: { id }, value: 1 },
          { 'Idempotency-Key': `p${i}` },
        );
      const results = await Promise.all([
        ...Array.from({ length: 20 }, (_, i) => send('parallel-one', i)),
        ...Array.from({ length: 20 }, (_, i) => send(`parallel-${i}`, i)),
      ]);
      expect(results.map((r) => r.status)).toEqual(Array(40).fill(201));
      // One user's 20 events: each counted once, whichever path applied it.
      const totals = results.slice(0, 20).map((r) => r.body.total as number);
      expect(totals.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect(await evaluated.deps.redis.hget(evaluated.deps.keys.user('parallel-one').hash, 'seq')).toBe(
        '20',
      );
      // Several ops per call.
      const many = commits.calls().filter((c) => c[1 + Number(c[0])] === 'commitMany');
      expect(many.some((c) => Number(c[0]) > 40)).toBe(true);
    } finally {
      commits.restore();
    }
  });

  it('leaves an event to the user script when the evaluation cannot read the user', async () => {
    if (isCluster(evaluated.deps.redis)) return;
    const redis = evaluated.deps.redis;
    const hash = evaluated.deps.keys.user('odd-state').hash;
    // Pauses written with hexadecimal numbers: cjson reads them, JSON.parse does not.
    await redis.hset(
      hash,
      'id',
      'odd-state',
      'created',
      '1',
      'seq',
      '1',
      'tz',
      'UTC',
      's:pauses',
      '[[0x1,0x2]]',
    );
    const apply = spyOwnCalls(redis, 'applyUserOp');
    try {
      const res = await evaluated.api('POST', '/v1/metrics/lessons/event', {
        user: { id: 'odd-state' },
        value: 1,
      });
      expect(res.status).toBe(201);
      expect(apply.calls().length).toBe(1);
    } finally {
      apply.restore();
    }
  });

  it('answers the committed record when a commit call is sent again (its first reply lost)', async () => {
    if (isCluster(evaluated.deps.redis)) return;
    const redis = evaluated.deps.redis;
    const target = redis as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const original = target.commitUserOp!;
    const apply = spyOwnCalls(redis, 'applyUserOp');
    const replies: unknown[] = [];
    target.commitUserOp = async (...args: unknown[]) => {
      if (args[1 + Number(args[0])] !== 'commitMany') return original.apply(redis, args);
      // The first call commits and its reply is lost; the same call again finds the reply marker.
      replies.push(await original.apply(redis, args));
      const again = await original.apply(redis, args);
      replies.push(again);
      return again;
    };
    try {
      const body = { user: { id: 'retried' }, value: 3 };
      const headers = { 'Idempotency-Key': 'retried-1' };
      const a = await evaluated.api('POST', '/v1/metrics/lessons/event', body, headers);
      target.commitUserOp = original;
      const b = await scripted.api('POST', '/v1/metrics/lessons/event', body, headers);
      expect(a.status).toBe(201);
      expect(a.body).toEqual({ ...b.body, leaderboards: a.body.leaderboards });
      expect(a.body.total).toBe(3);
      // Both replies are the record: the commit's, then the reply marker's.
      const [first, second] = (replies as string[][]).map((r) => r[0]!);
      expect(second).toBe(first);
      expect(JSON.parse(second!)).toMatchObject({ op: 'event', user: 'retried', total: '3000000' });
      expect(apply.calls().length).toBe(0);
      expect(await redis.hget(evaluated.deps.keys.user('retried').hash, 'seq')).toBe('1');
    } finally {
      target.commitUserOp = original;
      apply.restore();
    }
  });

  it('leaves an event to the user script when its user changed since it was read', async () => {
    if (isCluster(evaluated.deps.redis)) return;
    const redis = evaluated.deps.redis;
    const send = () =>
      evaluated.api('POST', '/v1/metrics/lessons/event', { user: { id: 'racer' }, value: 2 });
    expect((await send()).status).toBe(201);
    const target = redis as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const original = target.commitUserOp!;
    const apply = spyOwnCalls(redis, 'applyUserOp');
    let raced = 0;
    target.commitUserOp = async (...args: unknown[]) => {
      const n = Number(args[0]);
      if (args[1 + n] === 'commitMany') {
        // Another op of the same user commits between this op's read and its commit.
        raced++;
        await redis.hincrby(String(args[1]), 'seq', 1);
      }
      return original.apply(redis, args);
    };
    try {
      const res = await send();
      expect(res.status).toBe(201);
      expect(raced).toBe(1);
      // The commit found another seq and wrote nothing; the user script applied the event on top.
      expect(apply.calls().length).toBe(1);
      expect(res.body.total).toBe(4);
      expect(await redis.hget(evaluated.deps.keys.user('racer').hash, 'seq')).toBe('3');
      // Both reply markers (the evaluated commit's and the user script's) expire after 10 s.
      const markers = (await keysUnder(redis, evaluated.prefix)).filter((k) => k.includes(':user:racer:op:'));
      expect(markers).toHaveLength(2);
      for (const m of markers) expect(await redis.pttl(m)).toBeGreaterThan(9_000);
    } finally {
      target.commitUserOp = original;
      apply.restore();
    }
  });
});
