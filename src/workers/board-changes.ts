// Each board's change stream (written by lua/lib/board.lua atomically with every rank or value change
// of a user, and of a user it evicts) feeds the users' rank history in Postgres
// (leaderboard_rank_changes: a user's changes in a run, wrapped's best ranks) and the leaderboard
// webhooks: leaderboard.rank_changed for every change of a rank, and a coalesced leaderboard.changed
// due at most once a minute per run and group. Entries are acknowledged and removed only after both
// are recorded; rows are keyed by the entry, so entries read twice (a crash before the
// acknowledgement) are recorded once. Redis keeps no per-user history.
import { bulkInsert } from '../db/bulk';
import type { leaderboardRankChanges } from '../db/schema';
import { splitUserHash } from '../redis/user-hash';
import type { Deps } from '../deps';
import { boardValue, decodeGroup } from '../services/leaderboards';
import { runContaining } from '../engine/runs';
import { userResponse } from '../wire/users';
import { leaderboardBase } from '../wire/leaderboards';
import { crossSlotPipeline } from '../redis/batch';
import { anySubscriber, recordWebhookEvents, type WebhookEvent, webhookEventId } from './webhook-events';

/** The stream's consumer group (named when only webhooks read it; kept for existing streams). */
const GROUP = 'webhooks';
const BATCH = 500;

/** A stream entry id "<ms>-<n>" as one number in commit order (ms * 1000 + n, n capped at 999). */
export function streamSeq(entryId: string): number {
  const [ms, n] = entryId.split('-');
  return Number(ms) * 1000 + Math.min(Number(n ?? 0), 999);
}

/** Reads every board's pending changes once; returns how many entries were recorded. */
export async function drainBoardChanges(deps: Deps, consumer = 'scheduler'): Promise<number> {
  const snap = deps.catalog.snapshot;
  const k = deps.keys.sched;
  let n = 0;
  for (const b of snap.leaderboards) {
    const stream = deps.keys.board(b.id).changes;
    if (!(await deps.redis.exists(stream))) continue;
    try {
      await deps.redis.xgroup('CREATE', stream, GROUP, '0', 'MKSTREAM');
    } catch (err) {
      if (!String((err as Error).message).includes('BUSYGROUP')) throw err;
    }
    for (;;) {
      const claimed = (await deps.redis.xautoclaim(stream, GROUP, consumer, 60_000, '0', 'COUNT', BATCH)) as [
        string,
        Array<[string, string[]] | null>,
      ];
      const fresh = (await deps.redis.xreadgroup(
        'GROUP',
        GROUP,
        consumer,
        'COUNT',
        BATCH,
        'STREAMS',
        stream,
        '>',
      )) as Array<[string, Array<[string, string[]]>]> | null;
      const entries = [...(claimed[1] ?? []).filter((e): e is [string, string[]] => e !== null)];
      for (const [, list] of fresh ?? []) entries.push(...list);
      if (!entries.length) break;
      const rankChanged = anySubscriber(snap, ['leaderboard.rank_changed']);
      const events: WebhookEvent[] = [];
      const rows: Array<Omit<typeof leaderboardRankChanges.$inferInsert, 'created'> & { created: number }> =
        [];
      const groups = new Set<string>();
      for (const [entryId, fields] of entries) {
        const f: Record<string, string> = {};
        for (let i = 0; i < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
        const user = f.u ?? '';
        const num = (v: string | undefined) => (v ? Number(v) : null);
        groups.add(`${b.id}|${f.run}|${f.g ?? ''}`);
        rows.push({
          id: webhookEventId(`rank-change|${b.id}|${entryId}`),
          leaderboardId: b.id,
          runStart: f.run ?? '',
          groupKey: f.g ?? '',
          userId: user,
          previousRank: num(f.pr),
          rank: num(f.r),
          previousValue: num(f.pv),
          value: num(f.v),
          created: Number(f.t),
          streamSeq: streamSeq(entryId),
        });
        if (!rankChanged || (f.pr ?? '') === (f.r ?? '')) continue; // no subscriber, or a value change only
        const run = runContaining(b, f.run ?? '');
        if (!run) continue;
        const val = (v: string | undefined) => (v ? boardValue(b, v) : null);
        const { profile } = splitUserHash(await deps.redis.hgetall(deps.keys.user(user).hash));
        const leaderboard: Record<string, unknown> = {
          ...leaderboardBase(snap, b),
          start: run.start,
          end: run.end,
          rank: num(f.r),
          value: val(f.v),
          previousRank: num(f.pr),
          previousValue: val(f.pv),
        };
        if (b.breakdownAttributes.length) {
          leaderboard.breakdownAttributeValues = decodeGroup(snap, b, f.g ?? '');
        }
        events.push({
          id: webhookEventId(`leaderboard.rank_changed|${b.id}|${entryId}`),
          type: 'leaderboard.rank_changed',
          timestamp: Number(f.t),
          fields: { user: userResponse(snap, profile.id ? profile : { ...profile, id: user }), leaderboard },
        });
      }
      // One prepared statement whatever the number of rows (src/db/bulk.ts); a row read twice is skipped.
      await bulkInsert(
        deps.db,
        'leaderboard_rank_changes',
        [
          { column: 'id', type: 'uuid', value: (r) => r.id },
          { column: 'leaderboard_id', type: 'uuid', value: (r) => r.leaderboardId },
          { column: 'run_start', type: 'date', value: (r) => r.runStart },
          { column: 'group_key', type: 'text', value: (r) => r.groupKey },
          { column: 'user_id', type: 'text', value: (r) => r.userId },
          { column: 'previous_rank', type: 'int4', value: (r) => r.previousRank },
          { column: 'rank', type: 'int4', value: (r) => r.rank },
          { column: 'previous_value', type: 'float8', value: (r) => r.previousValue },
          { column: 'value', type: 'float8', value: (r) => r.value },
          { column: 'created', type: 'epoch_ms', value: (r) => r.created },
          { column: 'stream_seq', type: 'int8', value: (r) => r.streamSeq },
        ],
        rows,
      );
      await recordWebhookEvents(deps.db, events, deps.clock.now());
      if (anySubscriber(snap, ['leaderboard.changed'])) {
        const now = deps.clock.now();
        const members = [...groups];
        const last = await deps.redis.hmget(k.done, ...members.map((m) => `lbc|${m}`));
        const pipe = crossSlotPipeline(deps.redis);
        for (const [i, m] of members.entries()) {
          pipe.hincrby(k.done, `lbd|${m}`, 1);
          pipe.zadd(k.boardChanged, 'NX', Math.max(now, Number(last[i] ?? 0) + 60_000), m);
        }
        await pipe.exec();
      }
      // Acknowledged, and removed with every entry the group is done with (lua/ackStream.lua).
      await deps.redis.ackStream(1, stream, GROUP, ...entries.map(([id]) => id));
      n += entries.length;
      if (entries.length < BATCH) break;
    }
  }
  return n;
}
