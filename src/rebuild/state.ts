/**
 * The Redis state Postgres history implies (rebuild writes it, verify compares it). Per user:
 *
 * | Redis key | Source |
 * |---|---|
 * | profile | `users` row (without the fields at their defaults: compactProfile); `seq`: the user's last op in the history |
 * | metrics | sum of `events.value_micros` per metric |
 * | idem | `events.idempotency_key` → event id (with a window: "<event id>|<ms>" of keys first used inside it, in their bucket's hash) |
 * | counters | the counter fields as last written (each op's changes folded in op order: src/rebuild/user-states.ts); metric-trigger and filtered-achievement counters are also replayed from `events` in `seq` order (verify cross-checks them; they fill fields the merge lacks) |
 * | achievements | `achievement_completions`, encoded as the user script stores them (time, then completion id) |
 * | points | sum of `points_awards.awarded` per system (= the total of the newest award) |
 * | awards:<system> | the newest RECENT_AWARDS `points_awards` by (`seq`, `pos`), encoded by the same Lua function |
 * | streak | the streak fields as last written (folded the same way) |
 * | shist | the newest 100 `streak_periods` of the streak's epoch |
 * | boards | per board, "<run>|<value>" of the latest update (`leaderboard_updates_all`) of the user's newest run (`<board>`) and of the run before it (`<board>~`) |
 */
import { compactProfile, type RecentAward } from '../redis/user-hash';
import { and, asc, eq, inArray, isNotNull, sql } from 'drizzle-orm';
import type { Snapshot } from '../catalog/snapshot';
import {
  achievementCompletions,
  achievements,
  events,
  leaderboards,
  leaderboardUpdatesAll,
  pointsAwards,
  pointsSystems,
  pointsTriggers,
  streakPeriods,
  type StoredFilter,
  users,
} from '../db/schema';
import type { Deps } from '../deps';
import { dayIndex, type Frequency, periodIndex } from '../engine/periods';
import {
  DAY_MS,
  idempotencyField,
  idempotencyKeys,
  idempotencyValue,
  keyedEventId,
} from '../engine/idempotency';
import { RECENT_AWARDS } from '../services/points-reads';
import { formatHistory, type StreakPeriodRecord } from '../engine/streak-view';
import { nextTriggerCounters, type TriggerCounters } from '../engine/trigger-counters';
import type { UserKeys } from '../redis/keys';
import { scriptSource } from '../redis/scripts';
import { foldStates, stateSources } from './user-states';

/**
 * A user's streak fields as last written (foldStates), but `hist`: earlier versions' streak
 * recompute listed the period history among them, and the history is the history key's
 * (streakHistory below), never a field of the user hash.
 */
function streakFields(stored: Record<string, string> | undefined): Record<string, string> {
  const { hist: _hist, ...fields } = stored ?? {};
  return fields;
}

type TriggerRow = typeof pointsTriggers.$inferSelect;
type AchievementRow = typeof achievements.$inferSelect;
type BoardRow = typeof leaderboards.$inferSelect;
type SystemRow = typeof pointsSystems.$inferSelect;

/** Configuration rows rebuild needs, deleted ones included (their Redis state outlives them). */
export interface RebuildContext {
  snap: Snapshot;
  systems: SystemRow[];
  triggers: TriggerRow[];
  achievements: AchievementRow[];
  boards: BoardRow[];
}

/** The history tables rebuild and verify read user by user (their per-user reads lead with user_id). */
const HISTORY_TABLES = [
  'users',
  'events',
  'points_awards',
  'achievement_completions',
  'streak_periods',
  'user_states',
  'user_state_changes',
  'leaderboard_updates',
];

/**
 * Analyzes the history tables whose statistics are missing or stale (more than a tenth of their rows,
 * and over 1,000, changed since). Rebuild and verify read users 200 at a time by `user_id in (...)`:
 * right after a burst of writes (a bench run, an import) autovacuum has not analyzed the tables yet,
 * and without statistics Postgres takes such a list to match most of the table and scans all of it
 * for every batch (the view leaderboard_updates_all, whose estimate is ten rows per event, then costs
 * enough to be JIT-compiled each time: verify after a bench run took twice as long). A failed ANALYZE
 * (another one running on the table) is only logged: the reads are right either way.
 */
export async function freshenStatistics(deps: Deps): Promise<string[]> {
  const stale = await deps.db.execute<{ relname: string }>(sql`
    select relname from pg_stat_user_tables
    where schemaname = current_schema() and relname in (${sql.join(
      HISTORY_TABLES.map((t) => sql`${t}`),
      sql`, `,
    )})
      and (last_analyze is null and last_autoanalyze is null and n_live_tup + n_mod_since_analyze > 1000
        or n_mod_since_analyze > greatest(1000, n_live_tup / 10))`);
  const analyzed: string[] = [];
  for (const { relname } of stale) {
    try {
      await deps.db.execute(sql`analyze ${sql.identifier(relname)}`);
      analyzed.push(relname);
    } catch (err) {
      deps.logger.warn({ err, table: relname }, 'could not analyze a history table');
    }
  }
  return analyzed;
}

export async function loadContext(deps: Deps): Promise<RebuildContext> {
  await freshenStatistics(deps);
  await deps.catalog.reload();
  const [systems, triggers, achs, boards] = await Promise.all([
    deps.db.select().from(pointsSystems),
    deps.db.select().from(pointsTriggers),
    deps.db.select().from(achievements),
    deps.db.select().from(leaderboards),
  ]);
  return { snap: deps.catalog.snapshot, systems, triggers, achievements: achs, boards };
}

export interface UserState {
  userId: string;
  keys: UserKeys;
  profile: Record<string, string>;
  metrics: Record<string, string>;
  counters: Record<string, string>;
  achievements: Record<string, string>;
  points: Record<string, string>;
  streak: Record<string, string>;
  /** The streak period history key's value (the newest 100 periods of the streak's epoch). */
  streakHistory?: string;
  /** Idempotency hashes by Redis key (the forever hash, or the window buckets still alive). */
  idem: Record<string, Record<string, string>>;
  /** When each idempotency hash expires (ms), for the window buckets. */
  idemExpireAt: Record<string, number>;
  boards: Record<string, string>;
  /** systemId → encoded awards, newest first (at most RECENT_AWARDS). */
  awards: Record<string, string[]>;
  /** Counters replayed from events (live metric triggers and filtered achievements only). */
  replayed: Record<string, string>;
  /** Inputs of the global indexes. */
  created: number;
  activeIndex: string | undefined;
  longestAt: Record<string, number>;
}

/** Every user id in Postgres, sorted. */
export async function allUserIds(deps: Deps): Promise<string[]> {
  const rows = await deps.db.select({ id: users.id }).from(users).orderBy(asc(users.id));
  return rows.map((r) => r.id);
}

const str = (n: number) => String(n);

/** Whether every stored filter matches an attribute map (keys resolved like src/engine/plan.ts). */
function matches(snap: Snapshot, filters: StoredFilter[], attrs: Record<string, string>): boolean {
  for (const f of filters) {
    const key = snap.attributesById.get(f.attributeId)?.key ?? `#${f.attributeId}`;
    if (attrs[key] !== f.attributeValue) return false;
  }
  return true;
}

/** The frequency a stored period was written under (its length tells). */
function frequencyOf(start: string, end: string): Frequency {
  const days = dayIndex(end) - dayIndex(start);
  return days === 0 ? 'daily' : days === 6 ? 'weekly' : 'monthly';
}

/** Recent-award entries and completions, encoded by Redis the way lua/applyUserOp.lua does. */
export async function encodeJson(
  deps: Deps,
  input: {
    awards: RecentAward[];
    completions: Array<{ cid: string; at: number }>;
  },
): Promise<{ awards: string[]; completions: string[] }> {
  if (!input.awards.length && !input.completions.length) return { awards: [], completions: [] };
  const raw = (await deps.redis.eval(encodeSource(), 0, JSON.stringify(input))) as string;
  const out = JSON.parse(raw) as { awards: string[] | object; completions: string[] | object };
  return {
    awards: Array.isArray(out.awards) ? out.awards : [],
    completions: Array.isArray(out.completions) ? out.completions : [],
  };
}

let encodeSrc: string | null = null;
const encodeSource = () => {
  encodeSrc ??= scriptSource('rebuild/encode');
  return encodeSrc;
};

/** The expected Redis state of a batch of users (ids that are not in Postgres are skipped). */
export async function loadUserStates(
  deps: Deps,
  ctx: RebuildContext,
  userIds: string[],
): Promise<UserState[]> {
  if (!userIds.length) return [];
  const db = deps.db;
  const now = deps.clock.now();
  const windowMs = deps.config.IDEMPOTENCY_WINDOW_DAYS * DAY_MS;
  const [userRows, sources, eventRows, awardRows, completionRows, periodRows, boardRows] = await Promise.all([
    db.select().from(users).where(inArray(users.id, userIds)),
    stateSources(deps, userIds),
    db
      .select()
      .from(events)
      .where(inArray(events.userId, userIds))
      .orderBy(asc(events.userId), asc(events.seq), asc(events.created)),
    db
      .select()
      .from(pointsAwards)
      .where(inArray(pointsAwards.userId, userIds))
      .orderBy(
        asc(pointsAwards.userId),
        asc(pointsAwards.seq),
        asc(pointsAwards.pos),
        asc(pointsAwards.created),
      ),
    db.select().from(achievementCompletions).where(inArray(achievementCompletions.userId, userIds)),
    db.select().from(streakPeriods).where(inArray(streakPeriods.userId, userIds)),
    db
      .select({
        userId: leaderboardUpdatesAll.userId,
        board: leaderboardUpdatesAll.leaderboardId,
        run: leaderboardUpdatesAll.runStart,
        value: leaderboardUpdatesAll.value,
      })
      .from(leaderboardUpdatesAll)
      .where(inArray(leaderboardUpdatesAll.userId, userIds))
      .orderBy(asc(leaderboardUpdatesAll.seq)),
  ]);
  const group = <T extends { userId: string }>(rows: T[]) => {
    const m = new Map<string, T[]>();
    for (const r of rows) {
      const list = m.get(r.userId);
      if (list) list.push(r);
      else m.set(r.userId, [r]);
    }
    return m;
  };
  const statesBy = foldStates(sources.bases, [...sources.changes, ...eventRows]);
  const eventsBy = group(eventRows);
  const awardsBy = group(awardRows);
  const completionsBy = group(completionRows);
  const periodsBy = group(periodRows);
  // boardId -> runStart -> latest value (later seq wins); the hash keeps the two latest runs per board.
  const runValues = new Map<string, Map<string, Map<string, string>>>();
  for (const r of boardRows) {
    const byBoard = runValues.get(r.userId) ?? new Map<string, Map<string, string>>();
    const byRun = byBoard.get(r.board) ?? new Map<string, string>();
    byRun.set(r.run, String(r.value));
    byBoard.set(r.board, byRun);
    runValues.set(r.userId, byBoard);
  }
  const boardsBy = new Map<string, Record<string, string>>();
  for (const [userId, byBoard] of runValues) {
    const m: Record<string, string> = {};
    for (const [board, byRun] of byBoard) {
      const runs = [...byRun.keys()].sort();
      const last = runs[runs.length - 1]!;
      m[board] = `${last}|${byRun.get(last)}`;
      const prev = runs[runs.length - 2];
      if (prev !== undefined) m[`${board}~`] = `${prev}|${byRun.get(prev)}`;
    }
    boardsBy.set(userId, m);
  }
  const liveTriggers = ctx.triggers.filter(
    (t) =>
      t.type === 'metric' &&
      t.status === 'active' &&
      !t.deletedAt &&
      t.metricId &&
      ctx.snap.systemsById.has(t.systemId),
  );
  const filteredAchievements = ctx.achievements.filter(
    (a) => a.trigger === 'metric' && a.metricId && a.eventAttributes.length > 0,
  );

  const out: UserState[] = [];
  const toEncode: Parameters<typeof encodeJson>[1] = { awards: [], completions: [] };
  const encodeAt: Array<() => void> = [];
  const encoded: { awards: string[]; completions: string[] } = { awards: [], completions: [] };

  for (const u of userRows) {
    const state = statesBy.get(u.id);
    const evs = eventsBy.get(u.id) ?? [];
    const profile: Record<string, string> = {
      id: u.id,
      created: str(u.created.getTime()),
      sub: u.subscribeToEmails ? '1' : '0',
      dt: JSON.stringify(u.deviceTokens ?? []),
    };
    if (u.email !== null) profile.email = u.email;
    if (u.name !== null) profile.name = u.name;
    if (u.tz !== null) profile.tz = u.tz;
    for (const [k, v] of Object.entries(u.attributes ?? {})) profile[`a:${k}`] = v;
    for (const [k, v] of Object.entries(u.preferences ?? {})) profile[`p:${k}`] = JSON.stringify(v);
    profile.updated = str(u.updated.getTime());
    const lastSeq = Math.max(
      state?.seq ?? 0,
      ...evs.map((e) => e.seq ?? 0),
      ...(awardsBy.get(u.id) ?? []).map((a) => a.seq ?? 0),
    );
    profile.seq = str(lastSeq);

    const metrics: Record<string, string> = {};
    const sums = new Map<string, number>();
    // The newest use of each key (a key reused after its window was processed anew).
    const keyed = new Map<string, { id: string; at: number; derived: boolean }>();
    for (const e of evs) {
      sums.set(e.metricId, (sums.get(e.metricId) ?? 0) + e.valueMicros);
      if (e.idempotencyKey !== null) {
        const at = e.created.getTime();
        keyed.set(idempotencyField(e.metricId, e.idempotencyKey), {
          id: e.id,
          at,
          derived: e.id === keyedEventId(u.id, e.metricId, e.idempotencyKey, at),
        });
      }
    }
    for (const [m, s] of sums) metrics[m] = str(s);
    const userKeys = deps.keys.user(u.id);
    const idem: Record<string, Record<string, string>> = {};
    const idemExpireAt: Record<string, number> = {};
    for (const [field, { id, at, derived }] of keyed) {
      if (windowMs > 0 && now - at >= windowMs) continue;
      const key = idempotencyKeys(userKeys, windowMs, at);
      const hash = idem[key.current] ?? {};
      hash[field] = idempotencyValue(id, at, derived);
      idem[key.current] = hash;
      if (key.expireAt !== undefined) idemExpireAt[key.current] = key.expireAt;
    }

    // Replayed counters: T = running sum of matching events since activation, H = highest T (> 0).
    const replayed: Record<string, string> = {};
    for (const t of liveTriggers) {
      const ep = t.activatedAt?.getTime() ?? 0;
      let c: TriggerCounters = { total: 0, high: 0 };
      let any = false;
      for (const e of evs) {
        if (e.metricId !== t.metricId || e.created.getTime() < ep) continue;
        if (!matches(ctx.snap, t.eventAttributes, e.attributes)) continue;
        any = true;
        c = nextTriggerCounters(c, e.valueMicros);
      }
      if (any) replayed[`mtT:${t.id}:${ep}`] = str(c.total);
      if (c.high > 0) replayed[`mtH:${t.id}:${ep}`] = str(c.high);
    }
    for (const a of filteredAchievements) {
      const from = a.created.getTime();
      const to = a.deletedAt?.getTime() ?? Number.POSITIVE_INFINITY;
      let sum = 0;
      let any = false;
      for (const e of evs) {
        const at = e.created.getTime();
        if (e.metricId !== a.metricId || at < from || at >= to) continue;
        if (!matches(ctx.snap, a.eventAttributes, e.attributes)) continue;
        any = true;
        sum += e.valueMicros;
      }
      if (any) replayed[`af:${a.id}`] = str(sum);
    }
    const counters: Record<string, string> = { ...replayed, ...(state?.counters ?? {}) };

    const points: Record<string, string> = {};
    const bySystem = new Map<string, typeof awardRows>();
    for (const a of awardsBy.get(u.id) ?? []) {
      const list = bySystem.get(a.systemId);
      if (list) list.push(a);
      else bySystem.set(a.systemId, [a]);
    }
    const s: UserState = {
      userId: u.id,
      keys: userKeys,
      // Without the fields at their defaults, as the user script stores a new user's.
      profile: compactProfile(profile),
      metrics,
      counters,
      achievements: {},
      points,
      streak: streakFields(state?.streak),
      idem,
      idemExpireAt,
      boards: boardsBy.get(u.id) ?? {},
      awards: {},
      replayed,
      created: u.created.getTime(),
      activeIndex: state?.indexes?.active || undefined,
      longestAt: {},
    };
    for (const [sys, list] of bySystem) {
      points[sys] = str(list.reduce((n, a) => n + a.awarded, 0));
      const newest = list.slice(-RECENT_AWARDS).reverse();
      const from = toEncode.awards.length;
      for (const a of newest) {
        toEncode.awards.push({
          id: a.id,
          awarded: a.awarded,
          total: a.total,
          trigger: a.triggerId,
          boosts: a.boosts,
          date: a.created.getTime(),
        });
      }
      encodeAt.push(() => {
        s.awards[sys] = encoded.awards.slice(from, from + newest.length);
      });
    }
    for (const c of completionsBy.get(u.id) ?? []) {
      const i = toEncode.completions.length;
      toEncode.completions.push({ cid: c.id, at: c.achievedAt.getTime() });
      encodeAt.push(() => {
        s.achievements[c.achievementId] = encoded.completions[i]!;
      });
    }
    const history: Array<[number, StreakPeriodRecord]> = [];
    const epoch = s.streak.epoch === undefined ? undefined : Number(s.streak.epoch);
    for (const p of periodsBy.get(u.id) ?? []) {
      const idx = periodIndex(frequencyOf(p.periodStart, p.periodEnd), p.periodStart);
      if (p.epoch === epoch)
        history.push([idx, { length: p.length, usedFreeze: p.usedFreeze, usedPause: p.usedPause }]);
      if (!p.usedFreeze && !p.usedPause && p.length > 0) {
        const f = `${u.id}|${p.length}`;
        const at = p.updated.getTime();
        if (s.longestAt[f] === undefined || at < s.longestAt[f]!) s.longestAt[f] = at;
      }
    }
    if (history.length) s.streakHistory = formatHistory(history);
    out.push(s);
  }
  const enc = await encodeJson(deps, toEncode);
  encoded.awards = enc.awards;
  encoded.completions = enc.completions;
  for (const f of encodeAt) f();
  return out;
}

/** Global indexes (their own slot): user count, completion counts, points totals, streak rankings. */
export interface GlobalState {
  userCount: string;
  completions: Record<string, string>;
  /** systemId → userId → total. */
  pointsTotals: Record<string, Record<string, number>>;
  streakActive: Record<string, number>;
  streakActiveMeta: Record<string, string>;
  streakLongest: Record<string, number>;
  streakLongestAt: Record<string, string>;
  /**
   * The seq of the newest record in each user's current streak ("<userId>") and points totals
   * ("<userId>\0<systemId>"): the user's seq (lib/globals.lua K[7]).
   */
  appliedSeq: Record<string, string>;
}

export async function globalCounts(deps: Deps): Promise<Pick<GlobalState, 'userCount' | 'completions'>> {
  const [count] = await deps.db.select({ n: sql<number>`count(*)::int` }).from(users);
  const completionCounts = await deps.db
    .select({ id: achievementCompletions.achievementId, n: sql<number>`count(*)::int` })
    .from(achievementCompletions)
    .groupBy(achievementCompletions.achievementId);
  return {
    userCount: String(count?.n ?? 0),
    completions: Object.fromEntries(completionCounts.map((c) => [c.id, String(c.n)])),
  };
}

/** Adds the global index entries of some users to `g` (a fresh one when omitted). */
export function globalEntries(ctx: RebuildContext, states: UserState[], into?: GlobalState): GlobalState {
  const g: GlobalState = into ?? {
    userCount: '0',
    completions: {},
    pointsTotals: {},
    streakActive: {},
    streakActiveMeta: {},
    streakLongest: {},
    streakLongestAt: {},
    appliedSeq: {},
  };
  for (const s of states) {
    // As lib/globals.lua: from a user's second op on (no record is older than the first).
    const guarded = Number(s.profile.seq ?? 0) > 1;
    // Every user counts in the histogram of every system that existed when they were created.
    for (const sys of ctx.systems) {
      const existed =
        sys.created.getTime() <= s.created && (!sys.deletedAt || sys.deletedAt.getTime() > s.created);
      const total = s.points[sys.id];
      if (total === undefined && !existed) continue;
      g.pointsTotals[sys.id] ??= {};
      g.pointsTotals[sys.id]![s.userId] = Number(total ?? 0);
      if (total !== undefined && guarded) g.appliedSeq[`${s.userId}\u0000${sys.id}`] = s.profile.seq!;
    }
    if (s.activeIndex) {
      const [len, at, exp] = s.activeIndex.split('|');
      g.streakActive[s.userId] = Number(len);
      g.streakActiveMeta[s.userId] = `${at}|${exp}`;
    }
    const longest = Number(s.streak.longest ?? 0);
    if (longest > 0) g.streakLongest[s.userId] = longest;
    // Only the longest length's first time is kept (lib/globals.lua: one field per user).
    const at = s.longestAt[`${s.userId}|${longest}`];
    if (longest > 0 && at !== undefined) g.streakLongestAt[`${s.userId}|${longest}`] = String(at);
    if (guarded) g.appliedSeq[s.userId] = s.profile.seq!;
  }
  return g;
}

/** A leaderboard update to replay through lua/updateBoard.lua. */
export interface BoardUpdateRow {
  userId: string;
  runStart: string;
  seq: number;
  value: number;
  group: string;
  expires: number;
  created: number;
}

/** One board's updates in commit order, each with the group the user entered the run in. */
export async function boardUpdates(deps: Deps, boardId: string): Promise<BoardUpdateRow[]> {
  const u = leaderboardUpdatesAll;
  const rows = await deps.db
    .select()
    .from(u)
    .where(and(eq(u.leaderboardId, boardId), isNotNull(u.groupKey)))
    .orderBy(asc(u.ord), asc(u.userId), asc(u.seq));
  const entered = new Map<string, string>();
  return rows.map((r) => {
    const k = `${r.runStart}|${r.userId}`;
    if (!entered.has(k)) entered.set(k, r.groupKey!);
    return {
      userId: r.userId,
      runStart: r.runStart,
      seq: r.seq,
      value: r.value,
      group: entered.get(k)!,
      expires: r.expires,
      created: r.created.getTime(),
    };
  });
}

/** Ids of the boards with recorded updates. */
export async function boardsWithUpdates(deps: Deps): Promise<string[]> {
  const rows = await deps.db
    .selectDistinct({ id: leaderboardUpdatesAll.leaderboardId })
    .from(leaderboardUpdatesAll);
  return rows.map((r) => r.id);
}
