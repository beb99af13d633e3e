import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { type BulkPart, bulkInsertAll, bulkPart } from '../db/bulk';
import { isUniqueViolation } from '../admin/common';
import type { Deps } from '../deps';
import { crossSlotPipeline, execValues } from '../redis/batch';
import type { Cluster } from 'ioredis';
import { byOutboxMaster, isCluster } from '../redis/client';
import type { achievementCompletions, events, pointsAwards, streakPeriods } from '../db/schema';
import { localDate, periodBounds } from '../engine/periods';
import { applyBoardUpdates, unappliedBoardMoves } from '../services/leaderboards';
import { resolveWires } from '../services/wire-snapshots';
import { asArray } from '../services/user-op';
import { type OutboxEntry, parseRecord } from '../redis/user-script';
import { epochOf, eventBoards, rebuildParts, stateChange } from '../rebuild/record';
import { ackWithGlobals } from './globals';
import { observeHistoryPass } from '../metrics/hooks';
import { historyUnreadable } from '../metrics/registry';
import { worker } from './runner';

export const HISTORY_GROUP = 'history';

/** One read's reply: per stream that gave entries, its name and the entries (XREADGROUP's shape). */
type StreamReply = Array<[string, Array<[string, string[]]>]> | null;

/**
 * The most outbox entries one XREADGROUP of the history writer returns on a single Redis, and one
 * pipeline of its claims of a dead writer's entries (drainOnce).
 */
export const MAX_READ = 512;

/** A writer's consumer idle this long, holding nothing, is removed from the outbox group (a stopped process's). */
export const CONSUMER_IDLE_MS = 3_600_000;
/** How often a writer looks for such consumers (at a claim sweep). */
const CONSUMER_SWEEP_MS = 600_000;

/** The newest entries the unreadable-records stream keeps (about: XADD MAXLEN ~). */
export const UNREADABLE_KEPT = 1000;

/** For the statements of one history transaction (writeBatch). */
const GENERIC_PLANS = sql`set local plan_cache_mode = force_generic_plan`;

/** An outbox entry whose record could not be read (drainOnce). */
interface Unreadable {
  stream: string;
  id: string;
  fields: string[];
  error: string;
}

export type { OutboxEntry, OutboxRecord } from '../redis/user-script';
export { parseRecord } from '../redis/user-script';

/** Handlers run inside the history transaction (e.g. webhook deliveries), so they commit with it. */
export type RecordHook = (tx: Tx, entries: OutboxEntry[], deps: Deps) => Promise<void>;
type Tx = Parameters<Parameters<Deps['db']['transaction']>[0]>[0];

/** Period bounds by frequency and index (a pass's periods are mostly the same few days). */
const bounds = new Map<string, { start: string; end: string }>();
function boundsOf(freq: Parameters<typeof periodBounds>[0], idx: number) {
  const key = `${freq}${idx}`;
  let b = bounds.get(key);
  if (!b) {
    if (bounds.size >= 1024) bounds.clear();
    b = periodBounds(freq, idx);
    bounds.set(key, b);
  }
  return b;
}

/** Upserts of the users and streak periods a pass writes (rows of later ops win). */
const USERS_UPSERT = sql`on conflict (id) do update set email = excluded.email, name = excluded.name,
  tz = excluded.tz, attributes = excluded.attributes, subscribe_to_emails = excluded.subscribe_to_emails,
  device_tokens = excluded.device_tokens, preferences = excluded.preferences,
  updated = greatest(users.updated, excluded.updated)
  where excluded.updated >= users.updated`;
const PERIODS_UPSERT = sql`on conflict (user_id, period_start) do update set length = excluded.length,
  used_freeze = excluded.used_freeze, used_pause = excluded.used_pause, epoch = excluded.epoch,
  updated = excluded.updated`;

/** A row type whose timestamps travel as epoch milliseconds (bulkInsert's `epoch_ms`). */
type Ms<T, K extends keyof T> = Omit<T, K> & { [P in K]: number };

function userRow(p: Record<string, string>) {
  const attributes: Record<string, string> = {};
  const preferences: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(p)) {
    if (k.startsWith('a:')) attributes[k.slice(2)] = v;
    if (k.startsWith('p:')) preferences[k.slice(2)] = asArray<string>(JSON.parse(v));
  }
  return {
    id: p.id!,
    email: p.email ?? null,
    name: p.name ?? null,
    tz: p.tz ?? null,
    attributes,
    subscribeToEmails: p.sub !== '0',
    deviceTokens: p.dt ? asArray<string>(JSON.parse(p.dt)) : [],
    preferences,
    created: Number(p.created),
    updated: Number(p.updated ?? p.created),
  };
}

/**
 * Writes a batch of outbox records to Postgres in one transaction. Idempotent: every row is keyed by
 * an id minted with the change (event id, award id, completion id), so a batch written twice (a
 * writer that died before acknowledging) changes nothing the second time.
 */
export async function writeBatch(
  deps: Deps,
  entries: OutboxEntry[],
  hooks: RecordHook[] = [],
): Promise<void> {
  // Levels and configured objects as at commit, from the wire snapshots the records name.
  await resolveWires(deps, entries);
  const profiles = new Map<string, ReturnType<typeof userRow>>();
  const eventRows: Array<Ms<typeof events.$inferInsert, 'created'>> = [];
  const awardRows: Array<Ms<typeof pointsAwards.$inferInsert, 'created'>> = [];
  const completionRows: Array<Ms<typeof achievementCompletions.$inferInsert, 'achievedAt'>> = [];
  const periodRows = new Map<string, Ms<typeof streakPeriods.$inferInsert, 'updated'>>();
  // Ops whose state change (stateChange) and board updates (eventBoards) travel in their event row,
  // not as user_state_changes and leaderboard_updates rows.
  const inEvents = new Set<string>();
  const snap = deps.catalog.snapshot;
  for (const { record: r } of entries) {
    if (r.profile?.id) profiles.set(r.user, userRow(r.profile)); // later records win
    if (r.op === 'event' && r.metric && r.value !== undefined) {
      inEvents.add(r.id);
      eventRows.push({
        id: r.id,
        userId: r.user,
        metricId: r.metric,
        valueMicros: Number(r.value),
        attributes: r.eattrs ?? {},
        idempotencyKey: r.ik ?? (r.idem ? r.idem.slice(r.idem.indexOf('|') + 1) : null),
        localDate: r.date,
        tz: r.tz,
        created: r.now,
        seq: r.seq,
        boards: eventBoards(snap, r),
        state: stateChange(snap, r),
      });
    }
    for (const group of r.awards) {
      for (const [pos, a] of group.awards.entries()) {
        awardRows.push({
          id: a.id,
          eventId: r.op === 'event' ? r.id : null,
          userId: r.user,
          systemId: group.sys,
          triggerId: a.trigger,
          awarded: a.awarded,
          total: a.total,
          boosts: a.boosts,
          localDate: localDate(a.date, r.tz),
          created: a.date,
          seq: r.seq,
          pos,
        });
      }
    }
    for (const c of r.completions) {
      completionRows.push({
        id: c.cid,
        userId: r.user,
        achievementId: c.id,
        achievedAt: c.at,
        eventId: r.op === 'event' ? r.id : null,
      });
    }
    const freq = r.freq ?? snap.streak.frequency;
    for (const p of r.streak?.periods ?? []) {
      const b = boundsOf(freq, p.idx);
      periodRows.set(`${r.user}|${b.start}`, {
        userId: r.user,
        periodStart: b.start,
        periodEnd: b.end,
        length: p.length,
        usedFreeze: p.freeze,
        usedPause: p.pause,
        epoch: epochOf(deps, r),
        updated: r.now,
      });
    }
  }
  // Events, awards, completions, state changes and board updates are only ever inserted, keyed by ids or
  // the op's seq: a pass inserts them plainly (no speculative insertion per row), and a pass that meets
  // a row already there (entries written before, by a writer that died before acknowledging them) is
  // rolled back and written again with `on conflict do nothing` (idempotent).
  const parts = (insertOnly: string): BulkPart[] => [
    bulkPart(
      'users',
      [
        { column: 'id', type: 'text', value: (u) => u.id },
        { column: 'email', type: 'text', value: (u) => u.email },
        { column: 'name', type: 'text', value: (u) => u.name },
        { column: 'tz', type: 'text', value: (u) => u.tz },
        { column: 'attributes', type: 'jsonb', value: (u) => u.attributes },
        { column: 'subscribe_to_emails', type: 'bool', value: (u) => u.subscribeToEmails },
        { column: 'device_tokens', type: 'jsonb', value: (u) => u.deviceTokens },
        { column: 'preferences', type: 'jsonb', value: (u) => u.preferences },
        { column: 'created', type: 'epoch_ms', value: (u) => u.created },
        { column: 'updated', type: 'epoch_ms', value: (u) => u.updated },
      ],
      [...profiles.values()],
      USERS_UPSERT,
    ),
    bulkPart(
      'events',
      [
        { column: 'id', type: 'uuid', value: (e) => e.id },
        { column: 'user_id', type: 'text', value: (e) => e.userId },
        { column: 'metric_id', type: 'uuid', value: (e) => e.metricId },
        { column: 'value_micros', type: 'int8', value: (e) => e.valueMicros },
        { column: 'attributes', type: 'jsonb', value: (e) => e.attributes },
        { column: 'idempotency_key', type: 'text', value: (e) => e.idempotencyKey },
        { column: 'local_date', type: 'date', value: (e) => e.localDate },
        { column: 'tz', type: 'text', value: (e) => e.tz },
        { column: 'created', type: 'epoch_ms', value: (e) => e.created },
        { column: 'seq', type: 'int8', value: (e) => e.seq },
        { column: 'boards', type: 'text', value: (e) => e.boards },
        { column: 'state', type: 'text', value: (e) => e.state },
      ],
      eventRows,
      insertOnly,
    ),
    bulkPart(
      'points_awards',
      [
        { column: 'id', type: 'uuid', value: (a) => a.id },
        { column: 'event_id', type: 'uuid', value: (a) => a.eventId },
        { column: 'user_id', type: 'text', value: (a) => a.userId },
        { column: 'system_id', type: 'uuid', value: (a) => a.systemId },
        { column: 'trigger_id', type: 'uuid', value: (a) => a.triggerId },
        { column: 'awarded', type: 'int8', value: (a) => a.awarded },
        { column: 'total', type: 'int8', value: (a) => a.total },
        { column: 'boosts', type: 'jsonb', value: (a) => a.boosts },
        { column: 'local_date', type: 'date', value: (a) => a.localDate },
        { column: 'created', type: 'epoch_ms', value: (a) => a.created },
        { column: 'seq', type: 'int8', value: (a) => a.seq },
        { column: 'pos', type: 'int4', value: (a) => a.pos },
      ],
      awardRows,
      insertOnly,
    ),
    bulkPart(
      'achievement_completions',
      [
        { column: 'id', type: 'uuid', value: (c) => c.id },
        { column: 'user_id', type: 'text', value: (c) => c.userId },
        { column: 'achievement_id', type: 'uuid', value: (c) => c.achievementId },
        { column: 'achieved_at', type: 'epoch_ms', value: (c) => c.achievedAt },
        { column: 'event_id', type: 'uuid', value: (c) => c.eventId },
      ],
      completionRows,
      insertOnly,
    ),
    bulkPart(
      'streak_periods',
      [
        { column: 'user_id', type: 'text', value: (p) => p.userId },
        { column: 'period_start', type: 'date', value: (p) => p.periodStart },
        { column: 'period_end', type: 'date', value: (p) => p.periodEnd },
        { column: 'length', type: 'int4', value: (p) => p.length },
        { column: 'used_freeze', type: 'bool', value: (p) => p.usedFreeze },
        { column: 'used_pause', type: 'bool', value: (p) => p.usedPause },
        { column: 'epoch', type: 'int4', value: (p) => p.epoch },
        { column: 'updated', type: 'epoch_ms', value: (p) => p.updated },
      ],
      [...periodRows.values()],
      PERIODS_UPSERT,
    ),
    ...rebuildParts(deps, entries, insertOnly, inEvents),
  ];
  // Every table in one statement (one round trip; there are no foreign keys between them), then the
  // hooks, in one transaction. Its statements run on the generic plan of their prepared statements:
  // Postgres otherwise plans them again at every pass with the pass's values (a custom plan, about 0.9
  // ms of the bulk insert's 11 ms at 150 records), and the plan of an insert from rows of JSON arrays
  // does not depend on the values.
  const write = (insertOnly: string) =>
    deps.db.transaction(async (tx) => {
      await tx.execute(GENERIC_PLANS);
      await bulkInsertAll(tx, parts(insertOnly));
      for (const hook of hooks) await hook(tx, entries, deps);
    });
  try {
    await write('');
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    await write('on conflict do nothing');
  }
  await reapplyBoards(deps, entries);
}

/**
 * Re-applies the leaderboard values of records whose board moves are missing (a process that died
 * between the user script and the board calls). Moves the user script made itself (ap) committed with
 * the record; for the others, the board's member entry says whether the op's move was applied
 * (unappliedBoardMoves). The board script ignores an update whose seq it has already seen, so a
 * redundant repair changes nothing.
 */
async function reapplyBoards(deps: Deps, entries: OutboxEntry[]): Promise<void> {
  const withBoards = entries.filter((e) => e.record.boards.some((b) => !b.ap));
  if (!withBoards.length) return;
  const missing = await unappliedBoardMoves(
    deps,
    withBoards.map(({ record: r }) => ({
      userId: r.user,
      seq: r.seq,
      localDate: r.date,
      boards: r.boards.filter((b) => !b.ap),
    })),
  );
  const repairs = withBoards.flatMap(({ record: r }, i) =>
    missing[i]!.length ? [{ r, boards: missing[i]! }] : [],
  );
  for (let i = 0; i < repairs.length; i += 50) {
    await Promise.all(
      repairs.slice(i, i + 50).map(({ r, boards }) =>
        applyBoardUpdates(deps, {
          boards,
          localDate: r.date,
          breakdown: r.battrs ?? {},
          seq: r.seq,
          now: r.now,
          tz: r.tz,
          streak: r.streak,
          userId: r.user,
        }),
      ),
    );
  }
}

export interface HistoryWriterOptions {
  batchSize?: number;
  /** Pending entries idle this long belong to a dead writer and are claimed. */
  claimIdleMs?: number;
  idleSleepMs?: number;
  hooks?: RecordHook[];
  consumer?: string;
  /** The most outbox entries one read returns (MAX_READ unless given). */
  maxRead?: number;
  /** Other consumers idle this long and holding nothing are removed from the group (CONSUMER_IDLE_MS). */
  consumerIdleMs?: number;
}

/**
 * Consumes every outbox stream with a consumer group, writes history, then acknowledges and
 * deletes. Several writers may run at once: the group gives each entry to one of them, and entries
 * left pending by a crashed writer are claimed after `claimIdleMs`.
 */
export class HistoryWriter extends worker<HistoryWriterOptions>({
  source: 'history_writer',
  // Postgres or Redis away: nothing was acknowledged; the same entries are retried.
  message: 'history writer retrying',
  backoff: () => ({ backoffMs: 100, maxBackoffMs: 5000 }),
}) {
  private readonly consumer =
    this.opts.consumer ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  private readonly groupsReady = new Set<string>();
  private lastClaim = 0;
  /** Entries written since start (for tests and metrics). */
  written = 0;

  private async ensureGroup(stream: string): Promise<void> {
    if (this.groupsReady.has(stream)) return;
    try {
      await this.deps.redis.xgroup('CREATE', stream, HISTORY_GROUP, '0', 'MKSTREAM');
    } catch (err) {
      if (!String((err as Error).message).includes('BUSYGROUP')) throw err;
    }
    this.groupsReady.add(stream);
  }

  /**
   * The outbox streams' XREADGROUP STREAMS arguments of the reads of a thin pass and of a draining one,
   * and the streams of each claim pipeline (the same on every pass: built once).
   */
  private outboxes: {
    thinReads: string[][];
    fullReads: string[][];
    ownReads: string[][];
    claimGroups: string[][];
  } | null = null;
  /**
   * Whether the outbox may hold a backlog: a stream gave the last pass all it was asked for (or this
   * writer has just started and does not know). The next pass then reads the streams in groups
   * (drainOnce).
   */
  private draining = true;
  /** Whether the last pass left records it knows of: a stream gave the full count of a grouped read. */
  private behind = false;
  /** When idle consumers were last removed (dropIdleConsumers). */
  private lastConsumerSweep = 0;
  /** Legacy shard streams (single Redis: Keys.legacyOutboxes) found at the last claim sweep. */
  private legacy: string[] = [];

  /** One pass over every outbox stream; returns how many entries were written. */
  async drainOnce(): Promise<number> {
    const streams = this.deps.keys.outboxes;
    const batchSize = this.opts.batchSize ?? 500;
    const claimIdle = this.opts.claimIdleMs ?? this.deps.config.HISTORY_CLAIM_IDLE_MS;
    if (this.groupsReady.size < streams.length) await Promise.all(streams.map((s) => this.ensureGroup(s)));
    // A pass reads every stream (in as few calls as the bound below allows: they share socket writes)
    // and writes what it read in one transaction: under load a Cluster's shard streams hold only a few
    // records each, so per-stream transactions cost far more than the rows. Entries a dead writer left
    // pending are claimed every few seconds.
    const perStream = Math.max(10, Math.ceil((batchSize * 4) / streams.length));
    // No read returns more than MAX_READ entries, as Redis runs nothing else while it builds the
    // reply: 2,560 entries of a 256-shard outbox held it for up to 39 ms, which every event arriving
    // then waited out. A thin pass takes a few entries of each stream (every stream in one read up to
    // MAX_READ streams); while a backlog drains, the full perStream of each, a group of streams per
    // read, one read after the other (other clients' commands run in between).
    const maxRead = this.opts.maxRead ?? MAX_READ;
    const thin = Math.max(1, Math.floor(maxRead / streams.length));
    const full = Math.min(perStream, maxRead);
    if (!this.outboxes) {
      // Groups of streams whose reads (or claims) take `count` entries of each, at most maxRead in all,
      // and the STREAMS arguments of their reads. Claims take as many of each stream as a draining read.
      const groupsOf = (count: number) => {
        const size = Math.max(1, Math.floor(maxRead / count));
        const groups: string[][] = [];
        for (let i = 0; i < streams.length; i += size) groups.push(streams.slice(i, i + size));
        return groups;
      };
      const readsOf = (count: number, id: string) =>
        groupsOf(count).map((part) => [...part, ...part.map(() => id)]);
      this.outboxes = {
        thinReads: readsOf(thin, '>'),
        fullReads: readsOf(full, '>'),
        ownReads: readsOf(full, '0'),
        claimGroups: groupsOf(full),
      };
    }
    const { thinReads, fullReads, ownReads, claimGroups } = this.outboxes;
    // After a pass that failed, what it read is pending to this writer: read again first (ownPending).
    // A claim idle time of 0 (tests) claims everything pending at every pass, its own included.
    const own = this.ownPending && claimIdle > 0;
    this.ownPending = true;
    const claim = !own && Date.now() - this.lastClaim >= Math.min(claimIdle, 5000);
    if (claim) {
      this.lastClaim = Date.now();
      await this.findLegacy();
      await this.dropIdleConsumers(streams);
    }
    // The pass's entries by stream, in the order read (claims first: they are the older).
    const byStream = new Map<string, OutboxEntry[]>();
    // Entries without a record (Laurel writes none; a foreign or damaged one): nothing to write.
    const empty: Array<[string, string]> = [];
    // Entries whose record cannot be read (damaged): set aside rather than retried for ever, which would
    // stop every record after them from reaching the history.
    const unreadable: Unreadable[] = [];
    const take = (stream: string, list: Array<[string, string[]] | null>) => {
      let into = byStream.get(stream);
      if (!into) {
        into = [];
        byStream.set(stream, into);
      }
      for (const e of list) {
        if (!e) continue;
        // An entry deleted while pending (a re-read of this writer's own: ID 0) comes without fields.
        if (!e[1]) {
          empty.push([stream, e[0]]);
          continue;
        }
        let record: OutboxEntry['record'] | null;
        try {
          record = parseRecord(e[1]);
        } catch (err) {
          unreadable.push({
            stream,
            id: e[0],
            fields: e[1],
            error: err instanceof Error ? err.message : String(err),
          });
          continue;
        }
        if (record) into.push({ entryId: e[0], stream, record });
        else empty.push([stream, e[0]]);
      }
    };
    if (claim) {
      // One pipeline per group of streams, one after the other: Redis runs a pipeline's commands back to
      // back, so one over every shard of a Cluster would return as much as the unbounded read did.
      for (const group of claimGroups) {
        const claims = crossSlotPipeline(this.deps.redis);
        for (const key of group)
          claims.xautoclaim(key, HISTORY_GROUP, this.consumer, claimIdle, '0', 'COUNT', full);
        const claimed = (await execValues(claims)) as Array<[string, Array<[string, string[]] | null>]>;
        claimed.forEach(([, list], i) => {
          take(group[i]!, list ?? []);
        });
      }
    }
    // COUNT applies per stream. On a single Redis the reads above; on Cluster, where the streams live
    // in different slots, one call per master and group of streams (readCluster).
    const replies: StreamReply[] = [];
    const redis = this.deps.redis;
    const count = isCluster(redis) || this.draining || own ? full : thin;
    if (isCluster(redis)) replies.push(...(await this.readCluster(redis, count, maxRead, own ? '0' : '>')));
    else
      for (const args of own ? ownReads : this.draining ? fullReads : thinReads)
        replies.push(await this.readGroup(args, count));
    // A stream that gave all it was asked for may hold more: the next pass reads in groups.
    let more = false;
    for (const reply of replies) {
      for (const [key, list] of reply ?? []) {
        if (list.length >= count) more = true;
        take(key, list);
      }
    }
    // After a re-read of its own entries the writer goes on at once, reading what came meanwhile.
    this.draining = more || own;
    this.behind = (more && count === full) || own;
    if (this.legacy.length) await this.readLegacy(take, claim ? claimIdle : null, full);
    if (empty.length) {
      this.deps.logger.warn(
        { entries: empty.length },
        'history writer: outbox entries without a record dropped',
      );
      await this.ackAndDelete(empty);
    }
    if (unreadable.length) await this.setAside(unreadable);
    const collected = [...byStream.values()].flat();
    if (collected.length) {
      const writeStart = performance.now();
      await writeBatch(this.deps, collected, this.opts.hooks);
      // Then the cross-user indexes the records imply, acknowledged and deleted with them (globals.ts).
      await ackWithGlobals(this.deps, collected, HISTORY_GROUP);
      observeHistoryPass(this.deps, collected, performance.now() - writeStart);
      this.written += collected.length;
    }
    // Acknowledged: a re-read that filled a read may have left more of this writer's own.
    this.ownPending = own && more;
    return collected.length;
  }

  /**
   * Acknowledges and deletes entries the writer will not write (no record, or one set aside): left
   * pending, one would be claimed again at every sweep and would stop the trim of its stream
   * (lib/streams.lua trims below the oldest pending entry), which would then grow with every record
   * after it.
   */
  private async ackAndDelete(entries: Array<[string, string]>): Promise<void> {
    const done = crossSlotPipeline(this.deps.redis);
    for (const [stream, id] of entries) {
      done.xack(stream, HISTORY_GROUP, id);
      done.xdel(stream, id);
    }
    await execValues(done);
  }

  /**
   * Moves entries whose record cannot be read to the unreadable-records stream (Keys.outboxUnreadable:
   * their fields, the stream and id they had and the error, the newest UNREADABLE_KEPT kept), then
   * acknowledges and deletes them. Copied first: a writer that dies in between leaves them pending, and
   * the next claim copies them again rather than losing them.
   */
  private async setAside(entries: Unreadable[]): Promise<void> {
    const { redis, keys, logger } = this.deps;
    for (const e of entries)
      logger.error(
        { stream: e.stream, id: e.id, err: e.error, kept: keys.outboxUnreadable },
        'history writer: an outbox record cannot be read; set aside, not written to the history',
      );
    const copies = crossSlotPipeline(redis);
    for (const e of entries)
      copies.xadd(
        keys.outboxUnreadable,
        'MAXLEN',
        '~',
        UNREADABLE_KEPT,
        '*',
        'stream',
        e.stream,
        'id',
        e.id,
        'error',
        e.error,
        ...e.fields,
      );
    await execValues(copies);
    historyUnreadable.inc(entries.length);
    await this.ackAndDelete(entries.map((e) => [e.stream, e.id]));
  }

  /**
   * Whether entries a pass read may still be pending to this writer: set while a pass runs, and kept
   * when it fails (Postgres or Redis away) before acknowledging what it read. The next pass then reads
   * this writer's own pending entries again (XREADGROUP ID 0, oldest first) instead of new ones, so
   * they are written first and as soon as the failure ends, not after a claim sweep finds them idle
   * (HISTORY_CLAIM_IDLE_MS) while newer records are written before them. A failing writer so holds one
   * pass's records (each re-read keeps them from going idle) and reads no new ones: other writers
   * take those; a writer that dies leaves its records to their claims.
   */
  private ownPending = false;

  /**
   * On a Cluster, `count` entries of each outbox stream (new ones, or with `id` 0 this writer's own
   * pending ones): one lua/readOutboxes.lua call per master and group of its streams (at most maxRead
   * entries a call) instead of one XREADGROUP per stream (256 commands a pass). A stream the call could
   * not read (its slot moved meanwhile, or it lost its group) and one whose master the client does not
   * know are read on their own, routed by their key.
   */
  private async readCluster(
    redis: Cluster,
    count: number,
    maxRead: number,
    id: '>' | '0',
  ): Promise<StreamReply[]> {
    const { byNode, alone } = byOutboxMaster(redis, this.deps.keys.outboxes, (key) => key);
    const size = Math.max(1, Math.floor(maxRead / count));
    const calls: Array<Promise<StreamReply>> = [];
    for (const list of byNode.values())
      for (let i = 0; i < list.length; i += size) {
        const part = list.slice(i, i + size);
        calls.push(
          redis
            .readOutboxes(1, part[0]!, HISTORY_GROUP, this.consumer, String(count), id, ...part)
            .then(([reads, failed]) => {
              for (let k = 0; k < failed.length; k += 2) alone.push(failed[k]!);
              return reads;
            }),
        );
      }
    const replies = await Promise.all(calls);
    if (alone.length)
      replies.push(...(await Promise.all(alone.map((key) => this.readGroup([key, id], count)))));
    return replies;
  }

  /** XREADGROUP of `count` entries of each stream of `args` (STREAMS arguments) for this consumer. */
  private readGroup(args: string[], count: number) {
    return this.deps.redis.xreadgroup(
      'GROUP',
      HISTORY_GROUP,
      this.consumer,
      'COUNT',
      count,
      'STREAMS',
      ...args,
    ) as Promise<StreamReply>;
  }

  /**
   * On a single Redis, the shard streams of the earlier layout that exist (Keys.legacyOutboxes): a
   * deployment upgraded with records still in them, or a process of an older version still writing
   * to them. Each joins the group at its start; one that is empty with nothing pending is removed
   * (lua/dropDrainedStream.lua: atomically, so an entry added meanwhile keeps it).
   */
  /**
   * Every CONSUMER_SWEEP_MS at a claim sweep: removes the outbox group's consumers (other writers'
   * names, one per process ever started) that hold nothing and have been idle CONSUMER_IDLE_MS, so
   * the group does not grow with every restart (lua/dropIdleConsumers.lua). A failure waits for the
   * next sweep: nothing depends on it.
   */
  private async dropIdleConsumers(streams: readonly string[]): Promise<void> {
    if (Date.now() - this.lastConsumerSweep < CONSUMER_SWEEP_MS) return;
    this.lastConsumerSweep = Date.now();
    const pipe = crossSlotPipeline(this.deps.redis);
    for (const key of streams)
      pipe.dropIdleConsumers(
        1,
        key,
        HISTORY_GROUP,
        String(this.opts.consumerIdleMs ?? CONSUMER_IDLE_MS),
        this.consumer,
      );
    await pipe.exec().catch(() => {});
  }

  private async findLegacy(): Promise<void> {
    const candidates = this.deps.keys.legacyOutboxes();
    // One EXISTS of them all first: after an upgrade has drained them, that is all a sweep costs.
    if (!candidates.length || (await this.deps.redis.exists(...candidates)) === 0) {
      this.legacy = [];
      return;
    }
    const probe = this.deps.redis.pipeline();
    for (const key of candidates) probe.exists(key);
    const found = ((await execValues(probe)) as number[]).flatMap((n, i) => (n ? [candidates[i]!] : []));
    const left: string[] = [];
    for (const key of found) {
      if (await this.deps.redis.dropDrainedStream(1, key, HISTORY_GROUP)) continue;
      try {
        await this.deps.redis.xgroup('CREATE', key, HISTORY_GROUP, '0');
      } catch (err) {
        // BUSYGROUP: it has the group; anything else: it went meanwhile.
        if (!String((err as Error).message).includes('BUSYGROUP')) continue;
      }
      left.push(key);
    }
    this.legacy = left;
  }

  /**
   * Reads the legacy streams (findLegacy), each on its own: one removed meanwhile (by another
   * writer) is left out until the next sweep finds it again, without failing the pass.
   */
  private async readLegacy(
    take: (stream: string, list: Array<[string, string[]] | null>) => void,
    claimIdle: number | null,
    count: number,
  ): Promise<void> {
    const redis = this.deps.redis;
    for (const key of this.legacy) {
      try {
        if (claimIdle !== null) {
          const [, claimed] = (await redis.xautoclaim(
            key,
            HISTORY_GROUP,
            this.consumer,
            claimIdle,
            '0',
            'COUNT',
            count,
          )) as [string, Array<[string, string[]] | null>];
          take(key, claimed);
        }
        for (const [, list] of (await this.readGroup([key, '>'], count)) ?? []) {
          if (list.length >= count) this.behind = true;
          take(key, list);
        }
      } catch {
        this.legacy = this.legacy.filter((k) => k !== key);
      }
    }
  }

  protected async poll(): Promise<number> {
    const start = performance.now();
    const n = await this.drainOnce();
    // A pass costs much whatever it carries (a read of every stream, a transaction, the
    // acknowledgement): passes start at most every HISTORY_PASS_INTERVAL_MS (at most idleSleepMs) while
    // records arrive, so each carries what that interval brought, and back to back only while a grouped
    // read left records it knows of (a backlog drains at full speed). The interval is the delay a record
    // normally waits for Postgres, the cross-user indexes and its webhooks, against the cost of passes
    // that carry few records: at an even 1,500 events/s, 200 ms cost the writer and Postgres 12 % less
    // CPU per event than 100 ms with Node's default young generation, about 4 % with the 64 MiB one
    // README recommends for workers (bench:writer, bench/HISTORY.md 2026-11-28, the fourth session).
    const interval = this.deps.config.HISTORY_PASS_INTERVAL_MS;
    const idle = this.opts.idleSleepMs ?? Math.max(200, interval);
    if (n === 0) return idle;
    if (this.behind) return 0;
    return Math.max(0, Math.min(idle, interval) - (performance.now() - start));
  }

  /** Entries not yet written, over every outbox stream (the lag). */
  async lag(): Promise<number> {
    let n = 0;
    for (const stream of [...this.deps.keys.outboxes, ...this.legacy])
      n += await this.deps.redis.xlen(stream);
    return n;
  }
}
