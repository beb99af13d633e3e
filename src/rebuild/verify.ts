/**
 * verify-state: compares Redis with the state Postgres history implies (src/rebuild/state.ts), for all
 * users or a random sample. Run it once the history writer has caught up (outbox empty): records still
 * in the outbox are in Redis but not yet in Postgres.
 */
import type { Deps } from '../deps';
import { snapshottedRuns } from '../services/leaderboards';
import { compactProfile, splitUserHash, storedStreak } from '../redis/user-hash';
import { idempotencyKeyNames } from './rebuild';
import { DAY_MS, idempotencyAt } from '../engine/idempotency';
import {
  allUserIds,
  globalCounts,
  globalEntries,
  loadContext,
  loadUserStates,
  type UserState,
} from './state';
import { leaderboardUpdatesAll } from '../db/schema';
import { and, asc, inArray, isNotNull } from 'drizzle-orm';
import { crossSlotPipeline } from '../redis/batch';

export interface Difference {
  userId: string | null;
  what: string;
  redis: unknown;
  postgres: unknown;
}

export interface VerifyResult {
  checkedUsers: number;
  differences: Difference[];
}

export interface VerifyOptions {
  /** Check this many random users (default: all). */
  sample?: number;
  batchSize?: number;
  /** Stop collecting after this many differences (default 1000). */
  maxDifferences?: number;
}

function sampleOf<T>(list: T[], n: number): T[] {
  const a = [...list];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a.slice(0, n);
}

function diffHash(
  out: Difference[],
  userId: string | null,
  name: string,
  redis: Record<string, string>,
  expected: Record<string, string>,
): void {
  for (const f of new Set([...Object.keys(redis), ...Object.keys(expected)])) {
    if (redis[f] !== expected[f]) {
      out.push({ userId, what: `${name}.${f}`, redis: redis[f] ?? null, postgres: expected[f] ?? null });
    }
  }
}

export async function verifyState(deps: Deps, opts: VerifyOptions = {}): Promise<VerifyResult> {
  const ctx = await loadContext(deps);
  const all = await allUserIds(deps);
  const ids = opts.sample !== undefined && opts.sample < all.length ? sampleOf(all, opts.sample) : all;
  const max = opts.maxDifferences ?? 1000;
  const diffs: Difference[] = [];
  const batch = opts.batchSize ?? 200;
  const g = deps.keys.global;
  let checked = 0;

  for (let i = 0; i < ids.length && diffs.length < max; i += batch) {
    const states = await loadUserStates(deps, ctx, ids.slice(i, i + batch));
    checked += states.length;
    await verifyUsers(deps, ctx, states, diffs);
    // Global index entries of these users.
    const expected = globalEntries(ctx, states);
    const pipe = crossSlotPipeline(deps.redis);
    for (const s of states) {
      for (const sys of ctx.systems) pipe.zscore(g.pointsTotals(sys.id), s.userId);
      pipe.zscore(g.streakActive, s.userId);
      pipe.hget(g.streakActiveMeta, s.userId);
      pipe.zscore(g.streakLongest, s.userId);
      pipe.hget(g.streakLongestAt, `${s.userId}|${expected.streakLongest[s.userId] ?? 0}`);
    }
    const res = ((await pipe.exec()) ?? []).map(([, v]) => v as string | null);
    let k = 0;
    const num = (v: string | null) => (v === null ? null : String(Number(v)));
    for (const s of states) {
      const check = (what: string, redis: string | null, pg: string | null) => {
        if (redis !== pg) diffs.push({ userId: s.userId, what, redis, postgres: pg });
      };
      for (const sys of ctx.systems) {
        const exp = expected.pointsTotals[sys.id]?.[s.userId];
        check(`global.points:${sys.id}`, num(res[k++] ?? null), exp === undefined ? null : String(exp));
      }
      const act = expected.streakActive[s.userId];
      check('global.streak:active', num(res[k++] ?? null), act === undefined ? null : String(act));
      check('global.streak:active-meta', res[k++] ?? null, expected.streakActiveMeta[s.userId] ?? null);
      const lon = expected.streakLongest[s.userId];
      check('global.streak:longest', num(res[k++] ?? null), lon === undefined ? null : String(lon));
      check(
        'global.streak:longest-at',
        res[k++] ?? null,
        expected.streakLongestAt[`${s.userId}|${lon ?? 0}`] ?? null,
      );
    }
  }

  // Whole-population counters.
  const counts = await globalCounts(deps);
  const userCount = (await deps.redis.get(g.userCount)) ?? '0';
  if (userCount !== counts.userCount) {
    diffs.push({ userId: null, what: 'global.users', redis: userCount, postgres: counts.userCount });
  }
  diffHash(
    diffs,
    null,
    'global.achievement-completions',
    await deps.redis.hgetall(g.achievementCompletions),
    counts.completions,
  );

  return { checkedUsers: checked, differences: diffs.slice(0, max) };
}

async function verifyUsers(
  deps: Deps,
  ctx: Awaited<ReturnType<typeof loadContext>>,
  states: UserState[],
  diffs: Difference[],
): Promise<void> {
  const pipe = crossSlotPipeline(deps.redis);
  const idemKeys = new Map<string, string[]>();
  for (const s of states) {
    pipe.hgetall(s.keys.hash);
    for (const sys of ctx.systems) pipe.lrange(s.keys.awards(sys.id), 0, -1);
    const idem = [...new Set([...idempotencyKeyNames(deps, s), ...Object.keys(s.idem)])];
    idemKeys.set(s.userId, idem);
    for (const key of idem) pipe.hgetall(key);
    pipe.zscore(s.keys.users, s.userId);
    pipe.get(s.keys.streakHistory);
  }
  const res = ((await pipe.exec()) ?? []).map(([err, v]) => {
    if (err) throw err;
    return v;
  });
  let k = 0;
  for (const s of states) {
    // The user hash, part by part (the applied-moves part is a hint of the API's, not rebuilt).
    const parts = splitUserHash(res[k++] as Record<string, string>);
    const names = ['profile', 'metrics', 'counters', 'achievements', 'points', 'streak', 'boards'] as const;
    for (const name of names) {
      // A profile field at its default is stored by users of earlier versions, never rebuilt
      // (loadUserStates compacts the expected profile): compared without it.
      // The streak's scalar fields are stored packed, where '' and a field not set read alike
      // (storedStreak); the rebuilt part holds them as last written, '' included.
      const redis =
        name === 'profile'
          ? compactProfile(parts.profile)
          : name === 'streak'
            ? storedStreak(parts.streak)
            : parts[name];
      diffHash(diffs, s.userId, name, redis, name === 'streak' ? storedStreak(s.streak) : s[name]);
      if (name === 'counters') {
        // Independent check: live trigger and filtered-achievement counters replayed from events.
        for (const [f, v] of Object.entries(s.replayed)) {
          if (redis[f] !== v)
            diffs.push({
              userId: s.userId,
              what: `counters(replayed).${f}`,
              redis: redis[f] ?? null,
              postgres: v,
            });
        }
      }
    }
    for (const sys of ctx.systems) {
      const redis = res[k++] as string[];
      const exp = s.awards[sys.id] ?? [];
      for (let j = 0; j < Math.max(redis.length, exp.length); j++) {
        if (redis[j] !== exp[j]) {
          diffs.push({
            userId: s.userId,
            what: `awards:${sys.id}[${j}]`,
            redis: redis[j] ?? null,
            postgres: exp[j] ?? null,
          });
        }
      }
    }
    // Idempotency keys still remembered (entries past the window wait for their bucket to expire).
    const windowMs = deps.config.IDEMPOTENCY_WINDOW_DAYS * DAY_MS;
    const now = deps.clock.now();
    // Kept forever, an entry moved from the previous layout has no first use ("<id>|0", or the bare id):
    // there the event ids are compared.
    const comparable = (h: Record<string, string>) =>
      windowMs > 0
        ? h
        : Object.fromEntries(Object.entries(h).map(([f, v]) => [f, v.includes('|') ? v.split('|')[0]! : v]));
    for (const key of idemKeys.get(s.userId)!) {
      const live = Object.fromEntries(
        Object.entries(res[k++] as Record<string, string>).filter(([, v]) => {
          const at = idempotencyAt(v);
          return !(windowMs > 0 && at !== null && now - at >= windowMs);
        }),
      );
      diffHash(
        diffs,
        s.userId,
        `idem ${key.slice(key.lastIndexOf(':idem'))}`,
        comparable(live),
        comparable(s.idem[key] ?? {}),
      );
    }
    const indexed = res[k++] as string | null;
    if (indexed !== String(s.created))
      diffs.push({ userId: s.userId, what: 'shard user index', redis: indexed, postgres: String(s.created) });
    const hist = res[k++] as string | null;
    if (hist !== (s.streakHistory ?? null))
      diffs.push({
        userId: s.userId,
        what: 'streak history',
        redis: hist,
        postgres: s.streakHistory ?? null,
      });
  }
  await verifyBoards(deps, ctx, states, diffs);
}

/** Each user's latest update per board run against the board's member entry and ranking. */
async function verifyBoards(
  deps: Deps,
  ctx: Awaited<ReturnType<typeof loadContext>>,
  states: UserState[],
  diffs: Difference[],
): Promise<void> {
  const u = leaderboardUpdatesAll;
  const rows = await deps.db
    .select()
    .from(u)
    .where(
      and(
        inArray(
          u.userId,
          states.map((s) => s.userId),
        ),
        isNotNull(u.groupKey),
      ),
    )
    .orderBy(asc(u.ord), asc(u.seq));
  const latest = new Map<string, (typeof rows)[number]>();
  const group = new Map<string, string>();
  for (const r of rows) {
    const k = `${r.leaderboardId}|${r.runStart}|${r.userId}`;
    latest.set(k, r);
    if (!group.has(k)) group.set(k, r.groupKey!);
  }
  // Finalised runs whose snapshot is taken are read from it; their Redis state was dropped.
  const done = new Map<string, Set<string>>();
  for (const id of new Set(rows.map((r) => r.leaderboardId))) done.set(id, await snapshottedRuns(deps, id));
  const entries = [...latest.entries()].filter(([, r]) => !done.get(r.leaderboardId)?.has(r.runStart));
  const pipe = crossSlotPipeline(deps.redis);
  for (const [, r] of entries) pipe.hget(deps.keys.board(r.leaderboardId).members(r.runStart), r.userId);
  const metas = ((await pipe.exec()) ?? []).map(([, v]) => v as string | null);
  const zpipe = crossSlotPipeline(deps.redis);
  const checks: Array<{ r: (typeof rows)[number]; member: string; key: string; g: string }> = [];
  const indexed: Array<{ r: (typeof rows)[number] }> = [];
  const xpipe = crossSlotPipeline(deps.redis);
  entries.forEach(([k, r], i) => {
    const meta = metas[i];
    const g = group.get(k)!;
    const board = ctx.boards.find((b) => b.id === r.leaderboardId);
    const f = meta?.split('|') ?? [];
    const got = meta ? `${f[0]}|${f[2]}|${f[3]}|${f[4]}` : null;
    const want = `${r.value}|${g}|${r.seq}|${r.expires}`;
    if (got !== want) {
      diffs.push({
        userId: r.userId,
        what: `leaderboard ${r.leaderboardId} run ${r.runStart} member (value|group|seq|expires)`,
        redis: got,
        postgres: want,
      });
      return;
    }
    const member = `${String(f[1]).padStart(15, '0')}|${r.userId}`;
    if (r.value > 0 && board?.rankBy !== 'streak') {
      const key = deps.keys.board(r.leaderboardId).ranking(r.runStart, g);
      zpipe.zscore(key, member);
      zpipe.zcard(key);
      checks.push({ r, member, key, g });
    } else if (r.value > 0) {
      // A streak board: a ranked entry is in the ranking's expiry index, at its expiry.
      const bk = deps.keys.board(r.leaderboardId);
      xpipe.zscore(bk.ranking(r.runStart, g), member);
      xpipe.zscore(bk.expiries(r.runStart, g), member);
      indexed.push({ r });
    }
  });
  const xres = ((await xpipe.exec()) ?? []).map(([, v]) => v as string | null);
  indexed.forEach(({ r }, i) => {
    const [ranked, at] = [xres[2 * i], xres[2 * i + 1]];
    const want = r.expires > 0 ? String(r.expires) : 'inf';
    if (ranked !== null && at !== want) {
      diffs.push({
        userId: r.userId,
        what: `leaderboard ${r.leaderboardId} run ${r.runStart} ranking's expiry index`,
        redis: at,
        postgres: want,
      });
    }
  });
  const zres = ((await zpipe.exec()) ?? []).map(([, v]) => v as string | number | null);
  checks.forEach((c, i) => {
    const score = zres[2 * i] as string | null;
    const card = Number(zres[2 * i + 1]);
    const max = ctx.boards.find((b) => b.id === c.r.leaderboardId)?.maxParticipants ?? 1000;
    // A full group may have evicted the user (semantics §6.4); otherwise the user must be ranked.
    if (score === null && card < max) {
      diffs.push({
        userId: c.r.userId,
        what: `leaderboard ${c.r.leaderboardId} run ${c.r.runStart} ranking`,
        redis: null,
        postgres: -c.r.value,
      });
    } else if (score !== null && Number(score) !== -c.r.value) {
      diffs.push({
        userId: c.r.userId,
        what: `leaderboard ${c.r.leaderboardId} run ${c.r.runStart} ranking`,
        redis: Number(score),
        postgres: -c.r.value,
      });
    }
  });
}
