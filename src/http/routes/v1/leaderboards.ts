import type { Context } from 'hono';
import { LRUCache } from 'lru-cache';
import type { LeaderboardRow, Snapshot } from '../../../catalog/snapshot';
import type { Run } from '../../../engine/runs';
import type { Deps } from '../../../deps';
import { isCluster } from '../../../redis/client';
import { leaderboardStatus, utcDate } from '../../../engine/leaderboard-status';
import {
  breakdownKeys,
  groupKey,
  isFinalised,
  NAME_TTL_MS,
  namesEpoch,
  type Ranked,
  liveWindow,
  rankingsWindow,
  runForRead,
  userHistory,
  userNames,
  userStanding,
} from '../../../services/leaderboards';
import { localDate } from '../../../engine/periods';
import { notFound, unprocessable } from '../../../errors';
import { z } from '../../../zod';
import type { AppEnv } from '../../../app-env';
import { createRoute, mount, type RoutesApp } from '../../openapi';
import { extend, memo } from '../../../wire/common';
import { leaderboardBase } from '../../../wire/leaderboards';
import {
  queryAttributeFilter,
  requireKnownUserAttributes,
  queryDate,
  queryInt,
  queryOne,
} from '../../validate';

function visibleBoard(deps: Deps, key: string): LeaderboardRow {
  const b = deps.catalog.snapshot.leaderboardsByKey.get(key);
  if (!b || leaderboardStatus(b, deps.clock.now()) === 'inactive') throw notFound('Leaderboard not found');
  return b;
}

/** The group a userAttributes filter selects: every breakdown attribute, nothing else. */
function groupFromFilter(snap: Snapshot, b: LeaderboardRow, pairs: Array<[string, string]>): string {
  requireKnownUserAttributes(snap, pairs);
  const keys = breakdownKeys(snap, b);
  if (keys.length === 0) throw unprocessable('This leaderboard has no breakdown attributes');
  const given = new Map(pairs);
  if (keys.some((k) => !given.has(k)) || pairs.some(([k]) => !keys.includes(k))) {
    throw unprocessable(`userAttributes must give a value for each breakdown attribute: ${keys.join(', ')}`);
  }
  return groupKey(keys.map((k) => given.get(k)!));
}

/** The `rankings` array of a read, as JSON text. */
async function renderRankings(deps: Deps, ranked: Ranked[]): Promise<string> {
  const names = await userNames(
    deps,
    ranked.map((r) => r.userId),
  );
  return JSON.stringify(
    ranked.map((r, i) => ({ userId: r.userId, userName: names[i] ?? null, rank: r.rank, value: r.value })),
  );
}

interface CachedWindow {
  /** The board's ranking version when the window was read (null: the board was never written). */
  version: string | null;
  namesEpoch: number;
  /** performance.now() when built: names in it are as fresh as the name cache allows. */
  at: number;
  /** False for an empty window: no names in it, so it is valid for as long as the version is. */
  named: boolean;
  body: Uint8Array<ArrayBuffer>;
}

/** Rendered reads of live rankings, keyed by snapshot, board, status, run, group and window. */
const windows = new LRUCache<string, CachedWindow>({
  max: 50_000,
  maxSize: 32 * 2 ** 20,
  sizeCalculation: (w, key) => w.body.byteLength + key.length,
});

/** Board version reads of the current tick, shared by the reads that start in it. */
const versionReads = new Map<string, Promise<string | null>>();

/**
 * The board's ranking version: one GET per board per tick instead of one per request. The GET is
 * sent when the tick ends (setImmediate), so it runs after every read that joins it has started and
 * no read sees a version older than the ranking when it started. On Cluster each read sends its own.
 */
function readVersion(deps: Deps, key: string): Promise<string | null> {
  if (isCluster(deps.redis)) return deps.redis.get(key);
  let read = versionReads.get(key);
  if (!read) {
    if (versionReads.size === 0) setImmediate(() => versionReads.clear());
    read = new Promise((resolve, reject) => setImmediate(() => deps.redis.get(key).then(resolve, reject)));
    versionReads.set(key, read);
  }
  return read;
}

/**
 * The body of a read of a live ranking (from an offset, or around a user), served from an encoded
 * copy while the board's ranking version is unchanged: one GET instead of range reads, name look-ups
 * and serialisation. Every ranking write moves the version (lua/updateBoard.lua) and a user's place
 * changes only with a ranking write, so a read never serves a ranking older than the one in Redis
 * when it started; names are as fresh as the name cache's (NAME_TTL_MS, and at once for names this
 * process wrote).
 */
async function cachedBody(
  deps: Deps,
  snap: Snapshot,
  b: LeaderboardRow,
  run: Run,
  group: string,
  window: { offset: number; limit: number; userId?: string | undefined },
  status: string,
  head: string,
): Promise<Uint8Array<ArrayBuffer>> {
  const key = `${snap.version}|${b.id}|${status}|${run.start}|${group}|${window.offset}|${window.limit}|${window.userId ?? ''}`;
  const versionKey = deps.keys.board(b.id).version;
  const hit = windows.get(key);
  const at = performance.now();
  const epoch = namesEpoch();
  // The version is read before the ranking (same connection, in order; around a user, in the same
  // script call), so a copy is at least as new as the version it is filed under: any later write moves
  // the version past it.
  let version: string | null | undefined;
  if (hit) {
    version = await readVersion(deps, versionKey);
    if (hit.version === version && (!hit.named || (hit.namesEpoch === epoch && at - hit.at < NAME_TTL_MS)))
      return hit.body;
  }
  let ranked: Ranked[];
  if (window.userId !== undefined) {
    const read = await liveWindow(deps, b, run, group, window);
    ranked = read.ranked;
    version = read.version ?? null;
  } else {
    // A stale copy's version was read just now; otherwise read it first. Not alongside the window:
    // the shared read is sent when the tick ends, after the window's ZRANGE, and a write between
    // the two would file an older ranking under the newer version.
    version ??= await readVersion(deps, versionKey);
    ranked = (await liveWindow(deps, b, run, group, window)).ranked;
  }
  const rankings = ranked.length ? await renderRankings(deps, ranked) : '[]';
  const body = Buffer.from(`${head},"rankings":${rankings}}`);
  windows.set(key, { version, namesEpoch: epoch, at, body, named: ranked.length > 0 });
  return body;
}

/** A JSON body already serialised. */
const jsonBody = (c: Context<AppEnv>, body: string | Uint8Array<ArrayBuffer>) =>
  c.body(body, 200, { 'Content-Type': 'application/json' });

const board = z
  .object({ id: z.string(), key: z.string(), name: z.string(), status: z.string() })
  .passthrough();

const listBoards = createRoute({
  method: 'get',
  path: '/leaderboards',
  tags: ['leaderboards'],
  summary: 'Active and scheduled leaderboards (finished with includeFinished=true)',
  request: { query: z.object({ includeFinished: z.enum(['true', 'false']).optional() }) },
  responses: {
    200: { description: 'Leaderboards', content: { 'application/json': { schema: z.array(board) } } },
  },
});

const getBoard = createRoute({
  method: 'get',
  path: '/leaderboards/{key}',
  tags: ['leaderboards'],
  summary: 'A leaderboard run with its rankings',
  request: {
    params: z.object({ key: z.string() }),
    query: z.object({
      offset: z.number().int().optional(),
      limit: z.number().int().min(0).max(1000).optional(),
      run: z.string().optional(),
      userId: z.string().optional(),
      userAttributes: z.string().optional(),
    }),
  },
  responses: {
    200: { description: 'Leaderboard with rankings', content: { 'application/json': { schema: board } } },
  },
});

const userStandingRoute = createRoute({
  method: 'get',
  path: '/users/{id}/leaderboards/{key}',
  tags: ['leaderboards'],
  summary: "A user's rank, value and rank history in a run",
  request: {
    params: z.object({ id: z.string(), key: z.string() }),
    query: z.object({ run: z.string().optional(), numEvents: z.number().int().min(0).max(100).optional() }),
  },
  responses: { 200: { description: 'User standing and history' } },
});

export function mountLeaderboards(app: RoutesApp, deps: Deps): void {
  mount(app, listBoards, (c) => {
    const raw = queryOne(c, 'includeFinished');
    if (raw !== undefined && raw !== 'true' && raw !== 'false')
      throw unprocessable('includeFinished must be true or false');
    const includeFinished = raw === 'true';
    const snap = deps.catalog.snapshot;
    const now = deps.clock.now();
    const out = snap.leaderboards
      .map((b) => ({ b, status: leaderboardStatus(b, now) }))
      .filter(
        ({ status }) =>
          status === 'active' || status === 'scheduled' || (includeFinished && status === 'finished'),
      )
      .map(({ b, status }) => extend(leaderboardBase(snap, b), { status }));
    return c.json(out);
  });

  mount(app, getBoard, async (c) => {
    const limit = queryInt(c, 'limit', 10, 0, 1000);
    const userId = queryOne(c, 'userId');
    const offset = queryInt(c, 'offset', 0, userId === undefined ? 0 : -1_000_000, 1_000_000);
    const runDate = queryDate(c, 'run');
    const filter = queryAttributeFilter(c);
    const snap = deps.catalog.snapshot;
    const b = visibleBoard(deps, c.req.param('key'));
    const now = deps.clock.now();
    const status = leaderboardStatus(b, now);
    const run = runForRead(b, now, utcDate(now), runDate);
    let group = '';
    if (filter) group = groupFromFilter(snap, b, filter);
    else if (b.breakdownAttributes.length) {
      if (userId === undefined)
        throw unprocessable('userAttributes is required on a leaderboard with breakdown attributes');
      const standing = await userStanding(deps, b, run, userId);
      if (standing.group === null)
        return c.json(extend(leaderboardBase(snap, b), { start: b.start, end: b.end, status, rankings: [] }));
      group = standing.group;
    }
    // The board's fields and status, as JSON text without its closing brace.
    const head = memo(snap, `lb-head:${b.id}:${status}`, () =>
      JSON.stringify(extend(leaderboardBase(snap, b), { status })).slice(0, -1),
    );
    const window = { offset, limit, userId };
    if (status !== 'scheduled' && b.rankBy !== 'streak' && !isFinalised(b, run, now))
      return jsonBody(c, await cachedBody(deps, snap, b, run, group, window, status, head));
    const rankings =
      status === 'scheduled'
        ? '[]'
        : await renderRankings(deps, await rankingsWindow(deps, b, run, group, window));
    return jsonBody(c, `${head},"rankings":${rankings}}`);
  });

  mount(app, userStandingRoute, async (c) => {
    const numEvents = queryInt(c, 'numEvents', 10, 0, 100);
    const runDate = queryDate(c, 'run');
    const userId = c.req.param('id');
    const profile = await deps.redis.hmget(deps.keys.user(userId).hash, 'created', 'tz');
    if (!profile[0]) throw notFound('User not found');
    const b = visibleBoard(deps, c.req.param('key'));
    const now = deps.clock.now();
    const run = runForRead(b, now, localDate(now, profile[1] ?? 'UTC'), runDate);
    const standing = await userStanding(deps, b, run, userId);
    const history = await userHistory(deps, b, run, userId, numEvents);
    return c.json({
      ...leaderboardBase(deps.catalog.snapshot, b),
      rank: standing.rank,
      value: standing.value,
      history,
    });
  });
}
