import calculateSlot from 'cluster-key-slot';
import { count, eq, sql, sum } from 'drizzle-orm';
import { splitUserHash, userField } from '../../src/redis/user-hash';
import { storedStates } from '../../src/rebuild/user-states';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  achievementCompletions,
  events,
  leaderboardUpdates,
  leaderboardUpdatesAll,
  pointsAwards,
  streakPeriods,
  users,
} from '../../src/db/schema';
import { createDb } from '../../src/db/client';
import { isCluster } from '../../src/redis/client';
import {
  HISTORY_GROUP,
  HistoryWriter,
  MAX_READ,
  type OutboxEntry,
  parseRecord,
  writeBatch,
} from '../../src/workers/history-writer';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { createBoard } from '../helpers/leaderboards';
import { recentEvents } from '../../src/dashboard/data';
import { historyUnreadable } from '../../src/metrics/registry';

let t: TestServer;
const unreadableCount = async () => (await historyUnreadable.get()).values[0]?.value ?? 0;
let metricId: string;
let systemId: string;

beforeAll(async () => {
  t = await createTestServer();
  const [m] = await adminCreate(t, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
  metricId = m.id;
  const [p] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP' }]);
  systemId = p.id;
  await adminCreate(t, `/points/${p.id}/triggers`, [
    { type: 'metric', points: 10, metricId: m.id, metricThreshold: 2, status: 'active' },
    { type: 'user_creation', points: 3, status: 'active' },
  ]);
  await adminCreate(t, '/achievements', [
    { key: 'three', name: 'Three', trigger: 'metric', metricId: m.id, metricValue: 3, status: 'active' },
  ]);
  const s = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    conditions: [{ metricId: m.id, threshold: 1 }],
  });
  expect(s.status).toBe(200);
});
afterAll(async () => t.close());

async function send(user: string, value: number, tz = 'UTC') {
  const r = await t.api('POST', '/v1/metrics/lessons/event', {
    user: { id: user, tz, email: `${user}@x.io` },
    value,
  });
  expect(r.status).toBe(201);
  return r.body;
}

/** Every outbox entry currently in the streams, without consuming them. */
async function peekOutbox(): Promise<OutboxEntry[]> {
  const out: OutboxEntry[] = [];
  for (const stream of t.deps.keys.outboxes) {
    const list = await t.deps.redis.xrange(stream, '-', '+');
    for (const [entryId, fields] of list) out.push({ entryId, stream, record: parseRecord(fields)! });
  }
  return out;
}

/** The definitions of a table's indexes. */
async function indexDefs(table: string): Promise<string[]> {
  const rows = await t.deps.sql<Array<{ indexdef: string }>>`
    select indexdef from pg_indexes where tablename = ${table}`;
  return rows.map((r) => r.indexdef);
}

/** A user's event rows as written, in op order: what they carry besides the event. */
const storedEvents = (user: string) =>
  t.deps.db
    .select({ seq: events.seq, boards: events.boards, state: events.state })
    .from(events)
    .where(eq(events.userId, user))
    .orderBy(events.seq);

/** A user's outbox entries, written twice (a writer that died before its acknowledgement). */
async function writtenTwice(user: string, count: number): Promise<OutboxEntry[]> {
  const entries = (await peekOutbox()).filter((e) => e.record.user === user);
  expect(entries.length).toBe(count);
  await writeBatch(t.deps, entries);
  await writeBatch(t.deps, entries);
  return entries;
}

/**
 * Records the writer's outbox reads: XREADGROUP calls (a single Redis; a Cluster stream read on its
 * own) and lua/readOutboxes.lua calls (a Cluster master's streams), with the streams each named and the
 * entries its reply held.
 */
function spyReads() {
  const client = t.deps.redis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
  const xreadgroup = client.xreadgroup!;
  const readOutboxes = client.readOutboxes!;
  const calls: Array<{ how: string; streams: number; entries: number }> = [];
  const entriesOf = (reply: Array<[string, unknown[]]> | null) =>
    (reply ?? []).reduce((n, [, list]) => n + list.length, 0);
  client.xreadgroup = async function (this: unknown, ...args: unknown[]) {
    const reply = (await xreadgroup.apply(this, args)) as Array<[string, unknown[]]> | null;
    const streams = (args.length - args.indexOf('STREAMS') - 1) / 2;
    calls.push({ how: 'xreadgroup', streams, entries: entriesOf(reply) });
    return reply;
  };
  client.readOutboxes = async function (this: unknown, ...args: unknown[]) {
    const reply = (await readOutboxes.apply(this, args)) as [Array<[string, unknown[]]>, string[]];
    // numKeys, the routing key, group, consumer, count, id, then the streams.
    calls.push({ how: 'readOutboxes', streams: args.length - 6, entries: entriesOf(reply[0]) });
    return reply;
  };
  return {
    calls,
    restore() {
      client.xreadgroup = xreadgroup;
      client.readOutboxes = readOutboxes;
    },
  };
}

describe('history writer', () => {
  it('writes events, users, awards, completions and streak periods that match Redis exactly', async () => {
    const writer = new HistoryWriter(t.deps, { consumer: 'w1' });
    const sent: Record<string, number> = {};
    for (let i = 0; i < 40; i++) {
      const user = `hw-${i % 7}`;
      const value = (i % 3) + 0.25;
      await send(user, value, (i % 7) % 2 ? 'Pacific/Auckland' : 'America/Los_Angeles');
      sent[user] = (sent[user] ?? 0) + value;
    }
    while ((await writer.drainOnce()) > 0) {}
    expect(await writer.lag()).toBe(0);
    // Acknowledged as well as deleted: the group has nothing pending (a deletion alone leaves every
    // entry in the pending list, to be claimed again).
    const pending = await Promise.all(
      t.deps.keys.outboxes.map((stream) => t.deps.redis.xpending(stream, HISTORY_GROUP)),
    );
    expect(pending.map((p) => Number((p as unknown[])[0]))).toEqual(pending.map(() => 0));
    for (const [user, total] of Object.entries(sent)) {
      const k = t.deps.keys.user(user);
      const [row] = await t.deps.db
        .select({ n: count(), s: sum(events.valueMicros) })
        .from(events)
        .where(eq(events.userId, user));
      expect(Number(row!.s) / 1e6).toBeCloseTo(total, 6);
      expect(Number(await t.deps.redis.hget(k.hash, userField('metrics', metricId)))).toBe(Number(row!.s));
      const [aw] = await t.deps.db
        .select({ s: sum(pointsAwards.awarded) })
        .from(pointsAwards)
        .where(eq(pointsAwards.userId, user));
      expect(Number(aw!.s)).toBe(Number(await t.deps.redis.hget(k.hash, userField('points', systemId))));
      const completions = await t.deps.db
        .select()
        .from(achievementCompletions)
        .where(eq(achievementCompletions.userId, user));
      expect(completions.length).toBe(total >= 3 ? 1 : 0);
      const [u] = await t.deps.db.select().from(users).where(eq(users.id, user));
      expect(u!.email).toBe(`${user}@x.io`);
      const periods = await t.deps.db.select().from(streakPeriods).where(eq(streakPeriods.userId, user));
      expect(periods.length).toBe(1);
      expect(periods[0]!.length).toBe(1);
    }
  });

  it("mints an op's completion and award ids from its event id: distinct UUIDs, in the order it made them", async () => {
    // A new user's event of 3: achievement "three" (a completion), then the user_creation and the
    // metric trigger's awards, in that order (completions are evaluated before points).
    await send('ids-1', 3);
    const [entry] = (await peekOutbox()).filter((e) => e.record.user === 'ids-1');
    const r = entry!.record;
    const made = [...r.completions.map((c) => c.cid), ...r.awards.flatMap((g) => g.awards.map((a) => a.id))];
    expect(made).toHaveLength(3);
    // The event id with the number its last 12 hex digits spell advanced by k (lua/applyUserOp.lua).
    const tail = BigInt(`0x${r.id.slice(24)}`);
    const derived = [1n, 2n, 3n].map(
      (k) => `${r.id.slice(0, 24)}${((tail + k) % 16n ** 12n).toString(16).padStart(12, '0')}`,
    );
    expect(made).toEqual(derived);
    expect(new Set([r.id, ...made]).size).toBe(4);
    for (const id of made)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // The history keeps them as they were made.
    const writer = new HistoryWriter(t.deps, { consumer: 'w-ids' });
    while ((await writer.drainOnce()) > 0) {}
    const c = await t.deps.db
      .select()
      .from(achievementCompletions)
      .where(eq(achievementCompletions.userId, 'ids-1'));
    const a = await t.deps.db.select().from(pointsAwards).where(eq(pointsAwards.userId, 'ids-1'));
    expect(c.map((row) => row.id)).toEqual([derived[0]]);
    expect(a.map((row) => row.id).sort()).toEqual([derived[1], derived[2]].sort());
  });

  it('writes nothing twice when a batch is written again', async () => {
    await send('dup-1', 5);
    const entries = await peekOutbox();
    expect(entries.length).toBeGreaterThan(0);
    await writeBatch(t.deps, entries);
    await writeBatch(t.deps, entries);
    const [row] = await t.deps.db.select({ n: count() }).from(events).where(eq(events.userId, 'dup-1'));
    expect(row!.n).toBe(1);
    const [aw] = await t.deps.db
      .select({ n: count() })
      .from(pointsAwards)
      .where(eq(pointsAwards.userId, 'dup-1'));
    expect(aw!.n).toBe(2); // user_creation + one metric award of 2 multiples
    await new HistoryWriter(t.deps, { consumer: 'w-clean' }).drainOnce();
  });

  it('writes the new records of a pass that also holds records written before (plain inserts, then the idempotent retry)', async () => {
    await send('mix-1', 5);
    const first = await peekOutbox();
    await writeBatch(t.deps, first);
    await send('mix-2', 5);
    const both = await peekOutbox();
    expect(both.length).toBe(first.length + 1);
    await writeBatch(t.deps, both);
    for (const user of ['mix-1', 'mix-2']) {
      const [row] = await t.deps.db.select({ n: count() }).from(events).where(eq(events.userId, user));
      expect(row!.n).toBe(1);
      const [aw] = await t.deps.db
        .select({ n: count() })
        .from(pointsAwards)
        .where(eq(pointsAwards.userId, user));
      expect(aw!.n).toBe(2);
      const [c] = await t.deps.db
        .select({ n: count() })
        .from(achievementCompletions)
        .where(eq(achievementCompletions.userId, user));
      expect(c!.n).toBe(1);
    }
    await new HistoryWriter(t.deps, { consumer: 'w-clean' }).drainOnce();
  });

  it('claims the entries a crashed writer left pending; none lost, none written twice', async () => {
    for (let i = 0; i < 10; i++) await send(`crash-${i}`, 1);
    // Writer A reads everything and dies before writing or acknowledging.
    for (const key of t.deps.keys.outboxes) {
      await t.deps.redis.xgroup('CREATE', key, HISTORY_GROUP, '0', 'MKSTREAM').catch(() => {});
      await t.deps.redis.xreadgroup('GROUP', HISTORY_GROUP, 'dead', 'COUNT', 1000, 'STREAMS', key, '>');
    }
    const b = new HistoryWriter(t.deps, { consumer: 'w2', claimIdleMs: 0 });
    while ((await b.drainOnce()) > 0) {}
    expect(await b.lag()).toBe(0);
    const rows = await t.deps.db.select({ id: events.userId }).from(events);
    const crashRows = rows.filter((r) => r.id.startsWith('crash-'));
    expect(crashRows.length).toBe(10);
  });

  it("removes stopped writers' consumers from the outbox group, never one that holds entries", async () => {
    while ((await new HistoryWriter(t.deps, { consumer: 'w-pre-sweep' }).drainOnce()) > 0) {}
    const streams = t.deps.keys.outboxes;
    for (const key of streams) {
      await t.deps.redis.xgroup('CREATE', key, HISTORY_GROUP, '0', 'MKSTREAM').catch(() => {});
      await t.deps.redis.xgroup('CREATECONSUMER', key, HISTORY_GROUP, 'gone-empty');
    }
    // A stopped writer that read an entry and never acknowledged it.
    await send('sweep-1', 1);
    let holding = '';
    for (const key of streams) {
      const got = await t.deps.redis.xreadgroup(
        'GROUP',
        HISTORY_GROUP,
        'gone-holding',
        'COUNT',
        10,
        'STREAMS',
        key,
        '>',
      );
      if (got) holding = key;
    }
    expect(holding).not.toBe('');
    const consumers = async (key: string) =>
      ((await t.deps.redis.xinfo('CONSUMERS', key, HISTORY_GROUP)) as string[][]).map((c) => c[1]).sort();
    const sweeper = new HistoryWriter(t.deps, {
      consumer: 'w-sweep',
      claimIdleMs: 3_600_000,
      consumerIdleMs: 0,
    });
    await sweeper.drainOnce();
    expect(await consumers(holding)).toContain('gone-holding');
    for (const key of streams) expect(await consumers(key)).not.toContain('gone-empty');
    // What it held is still claimed and written.
    while (
      (await new HistoryWriter(t.deps, { consumer: 'w-after-sweep', claimIdleMs: 0 }).drainOnce()) > 0
    ) {}
    const rows = await t.deps.db
      .select({ id: events.userId })
      .from(events)
      .where(eq(events.userId, 'sweep-1'));
    expect(rows).toHaveLength(1);
  });

  it('keeps entries while Postgres is unreachable and writes them once it is back', async () => {
    await send('pgdown-1', 2);
    // The same process with its Postgres pool pointed at a closed port.
    const dead = createDb('postgres://postgres@127.0.0.1:1/nowhere', 1);
    const failing = new HistoryWriter({ ...t.deps, db: dead.db, sql: dead.sql }, { consumer: 'w-broken' });
    await expect(failing.drainOnce()).rejects.toThrow();
    await dead.sql.end({ timeout: 1 });
    const good = new HistoryWriter(t.deps, { consumer: 'w3', claimIdleMs: 0 });
    while ((await good.drainOnce()) > 0) {}
    const [row] = await t.deps.db.select({ n: count() }).from(events).where(eq(events.userId, 'pgdown-1'));
    expect(row!.n).toBe(1);
    expect(await good.lag()).toBe(0);
  });

  it('writes what a failed pass read at its next pass, before anything newer, without waiting for a claim', async () => {
    while ((await new HistoryWriter(t.deps, { consumer: 'w-pre-own' }).drainOnce()) > 0) {}
    await send('own-1', 1);
    const dead = createDb('postgres://postgres@127.0.0.1:1/nowhere', 1);
    const deps = { ...t.deps, db: dead.db, sql: dead.sql };
    // No claim sweep would take its entries back for an hour.
    const writer = new HistoryWriter(deps, { consumer: 'w-own', claimIdleMs: 3_600_000 });
    await expect(writer.drainOnce()).rejects.toThrow();
    await dead.sql.end({ timeout: 1 });
    await send('own-1', 2);
    // Postgres is back: the next pass writes the entry the failed one read, and only it ...
    Object.assign(deps, { db: t.deps.db, sql: t.deps.sql });
    const values = async () =>
      (
        await t.deps.db
          .select({ v: events.valueMicros })
          .from(events)
          .where(eq(events.userId, 'own-1'))
          .orderBy(events.seq)
      ).map((r) => Number(r.v));
    expect(await writer.drainOnce()).toBe(1);
    expect(await values()).toEqual([1_000_000]);
    // ... and the one after it the newer record.
    expect(await writer.drainOnce()).toBe(1);
    expect(await values()).toEqual([1_000_000, 2_000_000]);
    expect(await writer.lag()).toBe(0);
    expect(await writer.drainOnce()).toBe(0);
  });

  it('reads the integers the user script writes as digits (outbox and reply) as numbers', async () => {
    const body = await send('digits-1', 3);
    expect(body.total).toBe(3);
    let entry: string[] | undefined;
    for (const stream of t.deps.keys.outboxes) {
      for (const [, fields] of await t.deps.redis.xrange(stream, '-', '+'))
        if (fields[fields.indexOf('r') + 1]?.includes('"digits-1"')) entry = fields;
    }
    const raw = JSON.parse(entry![entry!.indexOf('r') + 1]!);
    // cjson would print each through snprintf: the script sends digits.
    const digitsOnly = expect.stringMatching(/^\d+$/);
    expect([raw.now, raw.seq, raw.completions[0].at, raw.points[0].total, raw.points[0].added]).toEqual([
      digitsOnly,
      '1',
      raw.now,
      '13',
      '13',
    ]);
    for (const a of raw.points[0].awards)
      expect([a.awarded, a.total, a.date]).toEqual([digitsOnly, digitsOnly, raw.now]);
    expect([raw.streak.length, raw.streak.periods[0].idx]).toEqual(['1', digitsOnly]);
    const r = parseRecord(entry!)!;
    expect([r.now, r.seq, r.completions[0]!.at, r.streak.length]).toEqual([
      Number(raw.now),
      1,
      Number(raw.now),
      1,
    ]);
    expect(r.awards[0]!.awards.map((a) => a.awarded).sort((a, b) => a - b)).toEqual([3, 10]);
    // The dashboard's recent events read the record not stored yet the same way.
    const recent = (await recentEvents(t.deps, 1000, 5000)).find((e) => e.userId === 'digits-1');
    expect(recent).toMatchObject({ at: Number(raw.now), value: 3, points: 13, achievements: 1 });
    await new HistoryWriter(t.deps, { consumer: 'w-digits' }).drainOnce();
    const [row] = await t.deps.db
      .select({ n: count(), s: sum(pointsAwards.awarded) })
      .from(pointsAwards)
      .where(eq(pointsAwards.userId, 'digits-1'));
    expect([row!.n, Number(row!.s)]).toEqual([2, 13]);
  });

  it('writes an award and a completion once, under the one index of points_awards and of achievement_completions', async () => {
    // Most events write an award or a completion: each table keeps one index, its primary key, led by
    // the user (the per-user reads use it), not two entries per row.
    expect(await indexDefs('points_awards')).toEqual([
      expect.stringMatching(/UNIQUE INDEX \S+ ON \S+ USING btree \(user_id, system_id, created, id\)$/),
    ]);
    expect(await indexDefs('achievement_completions')).toEqual([
      expect.stringMatching(/UNIQUE INDEX \S+ ON \S+ USING btree \(user_id, achievement_id\)$/),
    ]);
    // 3 for the new user, 10 for the metric trigger, and "three" completed.
    await send('aw-dup-1', 3);
    // Written twice: the primary keys keep one row each.
    await writtenTwice('aw-dup-1', 1);
    const awards = await t.deps.db
      .select({ awarded: pointsAwards.awarded })
      .from(pointsAwards)
      .where(eq(pointsAwards.userId, 'aw-dup-1'))
      .orderBy(pointsAwards.awarded);
    expect(awards).toEqual([{ awarded: 3 }, { awarded: 10 }]);
    const [done] = await t.deps.db
      .select({ n: count() })
      .from(achievementCompletions)
      .where(eq(achievementCompletions.userId, 'aw-dup-1'));
    expect(done!.n).toBe(1);
  });

  it('plans its statements once: generic plans inside its transaction only', async () => {
    // A custom plan is made again at every pass (about 0.9 ms of an 11 ms pass of 150 records); the
    // setting is local to the writer's transaction, so the connection's other users keep theirs.
    await send('plan-1', 1);
    const entries = (await peekOutbox()).filter((e) => e.record.user === 'plan-1');
    const seen: string[] = [];
    await writeBatch(t.deps, entries, [
      async (tx) => {
        const [row] = await tx.execute<{ plan_cache_mode: string }>(sql`show plan_cache_mode`);
        seen.push(row!.plan_cache_mode);
      },
    ]);
    expect(seen).toEqual(['force_generic_plan']);
    const [after] = await t.deps.sql<Array<{ plan_cache_mode: string }>>`show plan_cache_mode`;
    expect(after!.plan_cache_mode).toBe('auto');
    await new HistoryWriter(t.deps, { consumer: 'w-plan' }).drainOnce();
  });

  it('writes an event once, under the one index of events', async () => {
    // Every event writes a row: the table keeps one index, its primary key led by the user (the daily
    // summaries, streak recompute, rebuild and the dashboard read a user's events), not three entries
    // per row (migration 0008).
    expect(await indexDefs('events')).toEqual([
      expect.stringMatching(/UNIQUE INDEX \S+ ON \S+ USING btree \(user_id, metric_id, local_date, id\)$/),
    ]);
    await send('ev-dup-1', 2);
    // Written twice: the primary key keeps one row.
    const entries = await writtenTwice('ev-dup-1', 1);
    const rows = await t.deps.db
      .select({ id: events.id, value: events.valueMicros })
      .from(events)
      .where(eq(events.userId, 'ev-dup-1'));
    expect(rows).toEqual([{ id: entries[0]!.record.id, value: 2_000_000 }]);
    await new HistoryWriter(t.deps, { consumer: 'w-ev' }).drainOnce();
  });

  it("writes an event's board values in its event row, other ops' as rows, each once", async () => {
    // An event's board values travel in its events row (events.boards), not as a leaderboard_updates
    // row per board: the table keeps its one index for the other ops' updates.
    expect(await indexDefs('leaderboard_updates')).toEqual([
      expect.stringMatching(/UNIQUE INDEX \S+ ON \S+ USING btree \(user_id, op_id, leaderboard_id\)$/),
    ]);
    const [city] = await adminCreate(t, '/attributes', [{ key: 'city', name: 'City', type: 'user' }]);
    const board = await createBoard(t, { rankBy: 'metric', metricId, start: '2020-01-01' });
    await createBoard(t, { rankBy: 'metric', metricId, start: '2020-01-01', breakdownAttributes: [city.id] });
    await t.deps.catalog.reload();
    for (const value of [1, 2]) {
      const r = await t.api('POST', '/v1/metrics/lessons/event', {
        user: { id: 'lb-dup-1', tz: 'UTC', attributes: { city: 'a|b;c' } },
        value,
      });
      expect(r.status).toBe(201);
    }
    // Written twice: the events' primary key keeps one row per event, and so one entry per board.
    const entries = await writtenTwice('lb-dup-1', 2);
    const stored = await storedEvents('lb-dup-1');
    expect(stored.map((r) => r.boards?.split(';').length)).toEqual([2, 2]);
    expect(
      await t.deps.db.select().from(leaderboardUpdates).where(eq(leaderboardUpdates.userId, 'lb-dup-1')),
    ).toEqual([]);
    // The same record as another op (no events row): its values are leaderboard_updates rows.
    const other = structuredClone(entries[1]!);
    other.record.op = 'complete';
    other.record.id = '00000000-0000-4000-8000-00000000b0a7';
    other.record.seq = 3;
    await writeBatch(t.deps, [other]);
    await writeBatch(t.deps, [other]);
    const tableRows = await t.deps.db
      .select({ seq: leaderboardUpdates.seq })
      .from(leaderboardUpdates)
      .where(eq(leaderboardUpdates.userId, 'lb-dup-1'));
    expect(tableRows).toEqual([{ seq: 3 }, { seq: 3 }]);
    // Rebuild and verify read both through leaderboard_updates_all, with every column as written.
    const all = await t.deps.db
      .select()
      .from(leaderboardUpdatesAll)
      .where(eq(leaderboardUpdatesAll.userId, 'lb-dup-1'))
      .orderBy(leaderboardUpdatesAll.seq, leaderboardUpdatesAll.groupKey);
    const ord = (e: OutboxEntry) => Number(e.record.ts);
    const expected = (e: OutboxEntry, value: number) => [
      {
        opId: e.record.id,
        leaderboardId: board.id,
        runStart: '2020-01-01',
        userId: 'lb-dup-1',
        seq: e.record.seq,
        value,
        groupKey: '',
        expires: 0,
        ord: ord(e),
        created: new Date(e.record.now),
      },
      expect.objectContaining({ seq: e.record.seq, value, groupKey: 'a%7Cb%3Bc', ord: ord(e) }),
    ];
    expect(all).toEqual([
      ...expected(entries[0]!, 1_000_000),
      ...expected(entries[1]!, 3_000_000),
      ...expected(other, 3_000_000),
    ]);
    await new HistoryWriter(t.deps, { consumer: 'w-lb' }).drainOnce();
  });
  it("keeps each op's state changes with the op: in its event row, or a user_state_changes row", async () => {
    await send('st-1', 1);
    await send('st-1', 1);
    const entries = await writtenTwice('st-1', 2);
    const stored = await storedEvents('st-1');
    // The first event started the streak (its fields and index entry); both moved the trigger's count.
    expect(stored.map((r) => r.seq)).toEqual([1, 2]);
    expect(JSON.parse(stored[0]!.state!)).toMatchObject({ s: expect.any(Array), c: expect.any(Array) });
    expect(JSON.parse(stored[0]!.state!).a).toMatch(/^1\|/);
    expect(JSON.parse(stored[1]!.state!)).toMatchObject({ c: expect.any(Array) });
    // Another op (no events row) records its change, and its seq, in user_state_changes.
    const other = structuredClone(entries[1]!);
    other.record.op = 'complete';
    other.record.id = '00000000-0000-4000-8000-00000000c0a7';
    other.record.seq = 3;
    other.record.cw = ['c:probe', '7'];
    await writeBatch(t.deps, [other]);
    await writeBatch(t.deps, [other]);
    expect(await t.deps.sql`select seq::int, state from user_state_changes where user_id = 'st-1'`).toEqual([
      { seq: 3, state: expect.stringContaining('"c:probe","7"') },
    ]);
    // Nothing is merged into user_states any more; the fold gives the fields Redis holds.
    expect(await t.deps.sql`select 1 from user_states where user_id = 'st-1'`).toEqual([]);
    const folded = (await storedStates(t.deps, ['st-1'])).get('st-1')!;
    const live = splitUserHash(await t.deps.redis.hgetall(t.deps.keys.user('st-1').hash));
    expect(folded.seq).toBe(3);
    expect({ ...folded.counters }).toEqual({ ...live.counters, 'c:probe': '7' });
    expect(folded.streak).toMatchObject({ length: '1' });
    await new HistoryWriter(t.deps, { consumer: 'w-st' }).drainOnce();
  });

  it('reads a backlog at most MAX_READ entries per call, a group of streams at a time, and every entry once', async () => {
    const streams = t.deps.keys.outboxes.length;
    // Redis runs nothing else while it builds a read's reply: a backlog of twice MAX_READ over every
    // shard would have come back in one reply before.
    const backlog = 2 * MAX_READ + 100;
    for (let i = 0; i < backlog; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, backlog - i) }, (_, k) =>
          t.api('POST', '/v1/metrics/lessons/event', { user: { id: `cap-${i + k}` }, value: 1 }),
        ).map(async (r) => expect((await r).status).toBe(201)),
      );
    }
    const pending = (await peekOutbox()).filter((e) => e.record.user.startsWith('cap-')).length;
    expect(pending).toBe(backlog);

    // Every read call and the entries its reply held.
    const reads = spyReads();
    const calls = reads.calls;
    try {
      const writer = new HistoryWriter(t.deps, { consumer: 'w-cap' });
      const passes: number[] = [];
      for (let n = await writer.drainOnce(); n > 0; n = await writer.drainOnce()) passes.push(n);
      expect(passes.reduce((a, b) => a + b, 0)).toBe(backlog);
      expect(await writer.lag()).toBe(0);
      expect(Math.max(...calls.map((c) => c.entries))).toBeLessThanOrEqual(MAX_READ);
      if (streams > 1) {
        // A pass while draining reads the streams in groups (on a Cluster one each, as always), and
        // takes more than one read's worth.
        expect(calls[0]!.streams).toBeLessThan(streams);
        expect(passes[0]).toBeGreaterThan(MAX_READ);
      } else {
        // One stream (single Redis): a pass is one read, of MAX_READ while the backlog lasts.
        expect(calls.length).toBe(passes.length + 1); // and the read that found it empty
        expect(passes[0]).toBe(MAX_READ);
      }
      const written = await t.deps.db
        .select({ n: count() })
        .from(events)
        .where(sql`${events.userId} like 'cap-%'`);
      expect(written[0]!.n).toBe(backlog);

      // Drained, a thin pass reads every stream in one call (on a Cluster, where the streams live in
      // different slots, one lua/readOutboxes.lua call per master and group of its streams).
      await send('cap-thin', 1);
      calls.length = 0;
      expect(await writer.drainOnce()).toBe(1);
      if (isCluster(t.deps.redis)) {
        const masters = t.deps.redis.nodes('master').length;
        expect(calls.every((c) => c.how === 'readOutboxes')).toBe(true);
        expect(calls.length).toBeGreaterThanOrEqual(masters);
        expect(calls.length).toBeLessThanOrEqual(masters + Math.ceil((streams * 10) / MAX_READ));
        expect(calls.reduce((n, c) => n + c.streams, 0)).toBe(streams);
        expect(calls.reduce((n, c) => n + c.entries, 0)).toBe(1);
      } else expect(calls).toEqual([{ how: 'xreadgroup', streams, entries: 1 }]);
    } finally {
      reads.restore();
    }
  });
  it('keeps a thin read within its bound when there are more streams than the bound', async () => {
    // Reads of at most 8 entries: on a Cluster's 16 shard streams a thin pass takes one entry of 8
    // streams per read; a single Redis's one stream gives 8 a read.
    const writer = new HistoryWriter(t.deps, { consumer: 'w-narrow', maxRead: 8 });
    while ((await writer.drainOnce()) > 0) {}
    const reads = spyReads();
    try {
      await Promise.all(Array.from({ length: 40 }, (_, i) => send(`narrow-${i}`, 1)));
      let n = 0;
      for (let k = await writer.drainOnce(); k > 0; k = await writer.drainOnce()) n += k;
      expect(n).toBe(40);
      expect(Math.max(...reads.calls.map((c) => c.entries))).toBeLessThanOrEqual(8);
    } finally {
      reads.restore();
    }
  });
});

describe("history writer, claiming a dead writer's entries", () => {
  it('claims them in pipelines of at most maxRead entries, and writes each once', async () => {
    const before = new HistoryWriter(t.deps, { consumer: 'w-pre-claim' });
    while ((await before.drainOnce()) > 0) {}
    const n = 120;
    await Promise.all(Array.from({ length: n }, (_, i) => send(`claim-${i}`, 1)));
    // A writer reads every entry and dies before writing or acknowledging any.
    for (const key of t.deps.keys.outboxes) {
      await t.deps.redis.xreadgroup('GROUP', HISTORY_GROUP, 'dead-many', 'COUNT', 1000, 'STREAMS', key, '>');
    }
    // The entries each claim pipeline returned (on a Cluster every claim is a call of its own).
    type Claimed = [string, unknown[] | null];
    const client = t.deps.redis as unknown as Record<string, (...a: unknown[]) => any>;
    const originalPipeline = client.pipeline!;
    const originalClaim = client.xautoclaim!;
    const perPipeline: number[] = [];
    client.pipeline = function (this: unknown, ...args: unknown[]) {
      const p = originalPipeline.apply(this, args);
      const exec = p.exec.bind(p);
      p.exec = async () => {
        const results = (await exec()) as Array<[Error | null, unknown]>;
        const claims = results.filter(([, r]) => Array.isArray(r) && Array.isArray((r as Claimed)[1]));
        if (claims.length)
          perPipeline.push(claims.reduce((k, [, r]) => k + ((r as Claimed)[1]?.length ?? 0), 0));
        return results;
      };
      return p;
    };
    client.xautoclaim = async function (this: unknown, ...args: unknown[]) {
      const r = (await originalClaim.apply(this, args)) as Claimed;
      perPipeline.push(r[1]?.length ?? 0);
      return r;
    };
    try {
      const writer = new HistoryWriter(t.deps, { consumer: 'w-claim', claimIdleMs: 0, maxRead: 8 });
      let written = 0;
      for (let k = await writer.drainOnce(); k > 0; k = await writer.drainOnce()) written += k;
      expect(written).toBe(n);
      expect(await writer.lag()).toBe(0);
      expect(perPipeline.reduce((a, b) => a + b, 0)).toBe(n);
      expect(Math.max(...perPipeline)).toBeLessThanOrEqual(8);
      const rows = await t.deps.db
        .select({ n: count() })
        .from(events)
        .where(sql`${events.userId} like 'claim-%'`);
      expect(rows[0]!.n).toBe(n);
    } finally {
      client.pipeline = originalPipeline;
      client.xautoclaim = originalClaim;
    }
  });
});

describe("history writer, a Cluster master's streams in one call (lua/readOutboxes.lua)", () => {
  it('reads the streams its master serves, and reports one of another master and one without the group', async () => {
    const redis = t.deps.redis;
    if (!isCluster(redis)) {
      // A single Redis has one outbox stream, read with XREADGROUP (the tests above).
      expect(t.deps.keys.outboxes).toHaveLength(1);
      return;
    }
    // Streams of the test's own, in the slots of user shards.
    const keyOf = (shard: number) => `${t.deps.keys.shardTag(shard)}:probe-outbox`;
    const ownerOf = (key: string) => redis.slots[calculateSlot(key)]![0];
    const shards = Array.from({ length: t.deps.config.USER_SHARDS }, (_, i) => i);
    const [a, b, noGroup] = shards.filter((i) => ownerOf(keyOf(i)) === ownerOf(keyOf(0))).map(keyOf);
    const elsewhere = keyOf(shards.find((i) => ownerOf(keyOf(i)) !== ownerOf(keyOf(0)))!);
    for (const key of [a!, b!, elsewhere]) {
      await redis.xgroup('CREATE', key, 'probe', '0', 'MKSTREAM');
      await redis.xadd(key, '1-1', 'f', key);
    }
    await redis.xadd(noGroup!, '1-1', 'f', noGroup!);
    try {
      const [reads, failed] = await redis.readOutboxes(
        1,
        a!,
        'probe',
        'c',
        '10',
        '>',
        a!,
        elsewhere,
        b!,
        noGroup!,
      );
      expect(reads).toEqual([
        [a, [['1-1', ['f', a]]]],
        [b, [['1-1', ['f', b]]]],
      ]);
      expect(failed.filter((_, i) => i % 2 === 0)).toEqual([elsewhere, noGroup]);
      expect(failed[1]).toMatch(/non local key|cluster/i);
      expect(failed[3]).toMatch(/NOGROUP/);
      // Read entries are pending to the consumer, as XREADGROUP leaves them; a second call finds none
      // new, and a read of the consumer's own (ID 0) finds them again.
      expect(Number(((await redis.xpending(a!, 'probe')) as unknown[])[0])).toBe(1);
      expect((await redis.readOutboxes(1, a!, 'probe', 'c', '10', '>', a!, b!))[0]).toEqual([]);
      expect((await redis.readOutboxes(1, a!, 'probe', 'c', '10', '0', a!, b!))[0]).toEqual(reads);
      expect((await redis.readOutboxes(1, a!, 'probe', 'other', '10', '0', a!, b!))[0]).toEqual([]);
    } finally {
      await Promise.all([a!, b!, noGroup!, elsewhere].map((key) => redis.unlink(key)));
    }
  });
});

describe('history writer, a backlog in one shard', () => {
  it("drains one user's events without the pause of a thin pass, in grouped reads", async () => {
    // The production shard count: on a Cluster a full read then takes 10 records of a stream, after
    // which a pass that found no more would pause to let records accumulate.
    const s = await createTestServer({ env: { USER_SHARDS: '256' } });
    try {
      await adminCreate(s, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
      for (let i = 0; i < 300; i += 50)
        await Promise.all(
          Array.from({ length: 50 }, async () => {
            const r = await s.api('POST', '/v1/metrics/lessons/event', { user: { id: 'one' }, value: 1 });
            expect(r.status).toBe(201);
          }),
        );
      const writer = new HistoryWriter(s.deps, { consumer: 'w-one' });
      // poll's answer is how long the runner sleeps before the next pass.
      const poll = () => (writer as unknown as { poll(): Promise<number> }).poll();
      const sleeps: number[] = [];
      while ((await writer.lag()) > 0) sleeps.push(await poll());
      const [n] = await s.deps.db.select({ n: count() }).from(events).where(eq(events.userId, 'one'));
      expect(n!.n).toBe(300);
      if (isCluster(s.deps.redis)) {
        // 10 records a pass (the writer starts reading in groups): 30 passes, none but the last pausing.
        expect(sleeps).toHaveLength(30);
        expect(sleeps.slice(0, -1).every((ms) => ms === 0)).toBe(true);
      } else {
        // A single Redis's one stream: a read takes up to MAX_READ of it, so one pass.
        expect(sleeps).toHaveLength(1);
      }
    } finally {
      await s.close();
    }
  });
});

describe('lua/readOutboxes.lua (the reads of many streams in one call)', () => {
  it("skips an empty stream when reading new entries, and reads it for the consumer's own pending ones", async () => {
    // One slot (a Cluster's call reaches one master): a stream with the group, one without it.
    const key = `${t.deps.keys.prefix}:{read-probe}:outbox`;
    const bare = `${t.deps.keys.prefix}:{read-probe}:bare`;
    const redis = t.deps.redis;
    await redis.xgroup('CREATE', key, HISTORY_GROUP, '0', 'MKSTREAM');
    await redis.xadd(bare, '*', 'r', '{}');
    await redis.xtrim(bare, 'MAXLEN', 0);
    const consumers = async () =>
      ((await redis.xinfo('CONSUMERS', key, HISTORY_GROUP)) as unknown[][]).map((c) => c[1]);
    const read = (consumer: string, id: '>' | '0', ...streams: string[]) =>
      redis.readOutboxes(1, key, HISTORY_GROUP, consumer, '2', id, ...streams);
    try {
      // Empty streams are not read for new entries: the one without the group does not fail
      // (an XREADGROUP would answer NOGROUP), nor does one that does not exist.
      expect(await read('probe-new', '>', key, bare, `${t.deps.keys.prefix}:{read-probe}:none`)).toEqual([
        [],
        [],
      ]);
      // Once it has an entry it is read, and fails for want of the group as before.
      await redis.xadd(bare, '*', 'r', '{}');
      const [, failed] = await read('probe-new', '>', key, bare);
      expect(failed[0]).toBe(bare);
      expect(failed[1]).toMatch(/NOGROUP/);
      // A consumer's own pending entries are read even from an empty stream (an entry deleted while
      // pending leaves it empty and must still be acknowledged): XREADGROUP registers the consumer.
      expect(await read('probe-own', '0', key)).toEqual([[], []]);
      expect(await consumers()).toEqual(['probe-own']);
      // With an entry: read, as before.
      const id = await redis.xadd(key, '*', 'r', '{}');
      expect(await read('probe-new', '>', key)).toEqual([[[key, [[id, ['r', '{}']]]]], []]);
    } finally {
      await redis.unlink(key, bare);
    }
  });
});

describe('history writer, pass interval', () => {
  it('starts a pass that found records at most every HISTORY_PASS_INTERVAL_MS, and sleeps as long when idle', async () => {
    const s = await createTestServer({ env: { HISTORY_PASS_INTERVAL_MS: '1000' } });
    try {
      await adminCreate(s, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
      for (const id of ['pi-a', 'pi-b', 'pi-c']) {
        const r = await s.api('POST', '/v1/metrics/lessons/event', { user: { id }, value: 1 });
        expect(r.status).toBe(201);
      }
      const writer = new HistoryWriter(s.deps, { consumer: 'w-interval' });
      const poll = () => (writer as unknown as { poll(): Promise<number> }).poll();
      // A thin pass that wrote records: the rest of the interval (the pass itself took some of it).
      const wrote = await poll();
      expect(wrote).toBeGreaterThan(500);
      expect(wrote).toBeLessThanOrEqual(1000);
      expect(await writer.lag()).toBe(0);
      // Nothing left: an idle sleep of the interval too (at least 200 ms).
      expect(await poll()).toBe(1000);
    } finally {
      await s.close();
    }
    // The default: 200 ms.
    expect(t.deps.config.HISTORY_PASS_INTERVAL_MS).toBe(200);
  });
});

describe('history writer, an outbox entry without a record', () => {
  it('acknowledges and deletes it, so it neither stays pending nor holds back the trim of the records after it', async () => {
    const writer = new HistoryWriter(t.deps, { consumer: 'w-empty' });
    while ((await writer.drainOnce()) > 0) {}
    // On a Cluster, the stream of the user's shard (the writer reads every one).
    const stream = t.deps.keys.user('empty-after').outbox;
    await t.deps.redis.xadd(stream, '*', 'x', '{}');
    await send('empty-after', 1);
    while ((await writer.drainOnce()) > 0) {}
    const [row] = await t.deps.db.select({ n: count() }).from(events).where(eq(events.userId, 'empty-after'));
    expect(row!.n).toBe(1);
    expect(Number(((await t.deps.redis.xpending(stream, HISTORY_GROUP)) as unknown[])[0])).toBe(0);
    expect(await t.deps.redis.xlen(stream)).toBe(0);
    expect(await writer.lag()).toBe(0);
  });
});

describe('history writer, an outbox record it cannot read', () => {
  it('sets it aside (kept with its stream, id and error), acknowledges it, and writes the records after it', async () => {
    const writer = new HistoryWriter(t.deps, { consumer: 'w-unreadable' });
    while ((await writer.drainOnce()) > 0) {}
    const stream = t.deps.keys.user('unreadable-after').outbox;
    const kept = t.deps.keys.outboxUnreadable;
    await t.deps.redis.unlink(kept);
    const before = await unreadableCount();
    // Not JSON, and JSON outside the record's shape (no user, no seq).
    const broken = await t.deps.redis.xadd(stream, '*', 'r', '{"op":"event",', 'x', '{}');
    const shapeless = await t.deps.redis.xadd(stream, '*', 'r', '{"op":"event"}');
    await send('unreadable-after', 1);
    while ((await writer.drainOnce()) > 0) {}
    const [row] = await t.deps.db
      .select({ n: count() })
      .from(events)
      .where(eq(events.userId, 'unreadable-after'));
    expect(row!.n).toBe(1);
    expect(Number(((await t.deps.redis.xpending(stream, HISTORY_GROUP)) as unknown[])[0])).toBe(0);
    expect(await t.deps.redis.xlen(stream)).toBe(0);
    expect(await writer.lag()).toBe(0);
    const aside = (await t.deps.redis.xrange(kept, '-', '+')).map(([, f]) => {
      const o: Record<string, string> = {};
      for (let i = 0; i < f.length; i += 2) o[f[i]!] = f[i + 1]!;
      return o;
    });
    expect(aside.map((a) => [a.stream, a.id, a.r])).toEqual([
      [stream, broken, '{"op":"event",'],
      [stream, shapeless, '{"op":"event"}'],
    ]);
    expect(aside[0]!.x).toBe('{}');
    for (const a of aside) expect(a.error).toMatch(/\S/);
    expect((await unreadableCount()) - before).toBe(2);
    await t.deps.redis.unlink(kept);
  });
});

describe('history writer, the per-shard outbox streams of the earlier single-Redis layout', () => {
  it('drains the records left in them, removes each once empty, and takes what an older process adds later', async () => {
    const legacy = t.deps.keys.legacyOutboxes();
    if (isCluster(t.deps.redis)) {
      // A Cluster's outbox is still one stream per shard: there is no earlier layout to drain.
      expect(legacy).toEqual([]);
      expect(t.deps.keys.outboxes).toHaveLength(t.deps.config.USER_SHARDS);
      return;
    }
    expect(t.deps.keys.outboxes).toHaveLength(1);
    const rowsOf = async (prefix: string) =>
      (
        await t.deps.db
          .select({ n: count() })
          .from(events)
          .where(sql`${events.userId} like ${`${prefix}%`}`)
      )[0]!.n;
    const before = new HistoryWriter(t.deps, { consumer: 'w-pre-legacy' });
    while ((await before.drainOnce()) > 0) {}
    // Records as an older version left them: each in its user's shard stream, which that version's
    // writer had joined to the group.
    const users = Array.from({ length: 6 }, (_, i) => `legacy-${i}`);
    for (const u of users) await send(u, 2);
    const [stream] = t.deps.keys.outboxes;
    const moved = new Set<string>();
    for (const [id, fields] of await t.deps.redis.xrange(stream!, '-', '+')) {
      const user = parseRecord(fields)!.user;
      if (!users.includes(user)) continue;
      const key = legacy[t.deps.keys.user(user).shard]!;
      await t.deps.redis.xgroup('CREATE', key, HISTORY_GROUP, '0', 'MKSTREAM').catch(() => {});
      await t.deps.redis.xadd(key, '*', ...fields);
      await t.deps.redis.xdel(stream!, id);
      moved.add(key);
    }
    expect(moved.size).toBeGreaterThan(1);

    // A writer of this version drains them in its first pass and removes them at its next sweep.
    const writer = new HistoryWriter(t.deps, { consumer: 'w-legacy', claimIdleMs: 0 });
    while ((await writer.drainOnce()) > 0) {}
    expect(await rowsOf('legacy-')).toBe(users.length);
    for (const key of moved) expect(await t.deps.redis.xlen(key)).toBe(0);
    (writer as unknown as { lastClaim: number }).lastClaim = 0;
    expect(await writer.drainOnce()).toBe(0);
    for (const key of moved) expect(await t.deps.redis.exists(key)).toBe(0);

    // An older process still running writes to its shard's stream after the removal: a new stream
    // without the group, found and read at the next sweep.
    const late = 'legacy-late';
    await send(late, 5);
    const entry = (await t.deps.redis.xrange(stream!, '-', '+')).find(
      ([, f]) => parseRecord(f)!.user === late,
    );
    const [id, fields] = entry!;
    await t.deps.redis.xdel(stream!, id);
    const lateKey = legacy[t.deps.keys.user(late).shard]!;
    await t.deps.redis.xadd(lateKey, '*', ...fields);
    (writer as unknown as { lastClaim: number }).lastClaim = 0;
    expect(await writer.drainOnce()).toBe(1);
    expect(await rowsOf(late)).toBe(1);
    expect(await t.deps.redis.xlen(lateKey)).toBe(0);
    // Not removed while an entry is pending (a writer died holding it): claimed and written first.
    await t.deps.redis.xadd(lateKey, '*', 'x', '1');
    await t.deps.redis.xreadgroup('GROUP', HISTORY_GROUP, 'dead', 'COUNT', 10, 'STREAMS', lateKey, '>');
    await t.deps.redis.xtrim(lateKey, 'MAXLEN', 0);
    expect(await t.deps.redis.dropDrainedStream(1, lateKey, HISTORY_GROUP)).toBe(0);
    const held = (await t.deps.redis.xpending(lateKey, HISTORY_GROUP, '-', '+', 10)) as Array<[string]>;
    await t.deps.redis.xack(lateKey, HISTORY_GROUP, ...held.map(([i]) => i));
    expect(await t.deps.redis.dropDrainedStream(1, lateKey, HISTORY_GROUP)).toBe(1);
    expect(await t.deps.redis.exists(lateKey)).toBe(0);
  });
});
