// Shared helpers of the leaderboards-*.test.ts files (not a test file itself).
import { adminCreate, type TestServer } from './server';

let boardSeq = 0;

/** A fresh leaderboard key. */
export const boardKey = (prefix = 'lb') => `${prefix}${++boardSeq}`;

/** Creates one leaderboard through the admin API (active unless told otherwise). */
export async function createBoard(t: TestServer, item: Record<string, unknown>): Promise<any> {
  const [b] = await adminCreate(t, '/leaderboards', [
    { key: boardKey(), name: 'Board', status: 'active', ...item },
  ]);
  return b;
}

/** PATCHes one leaderboard and returns the updated item (fails on issues). */
export async function patchBoard(t: TestServer, item: Record<string, unknown>): Promise<any> {
  const res = await t.admin('PATCH', '/leaderboards', [item]);
  if (res.status !== 200 || res.body.issues.length) {
    throw new Error(`PATCH leaderboard failed: ${res.status} ${JSON.stringify(res.body)}`);
  }
  return res.body.updated[0];
}

export interface EventUser {
  id: string;
  tz?: string;
  name?: string;
  attributes?: Record<string, string>;
}

/** POST /v1/metrics/{key}/event; fails the test unless it answered 201. */
export async function send(t: TestServer, metric: string, user: string | EventUser, value: number) {
  const u = typeof user === 'string' ? { id: user } : user;
  const res = await t.api('POST', `/v1/metrics/${metric}/event`, { user: u, value });
  if (res.status !== 201) throw new Error(`event failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** GET /v1/leaderboards/{key} with a query (values are URL-encoded). */
export function getBoard(t: TestServer, key: string, query: Record<string, string | number> = {}) {
  const qs = new URLSearchParams(
    Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]),
  ).toString();
  return t.api('GET', `/v1/leaderboards/${key}${qs ? `?${qs}` : ''}`);
}

/**
 * GET /v1/users/{id}/leaderboards/{key}. Its `history` is the rank history the scheduler records
 * from the boards' change streams: settled first, as a read a few seconds later would see it.
 */
export async function getUserBoard(
  t: TestServer,
  userId: string,
  key: string,
  query: Record<string, string | number> = {},
) {
  await t.settle();
  const qs = new URLSearchParams(
    Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]),
  ).toString();
  return t.api('GET', `/v1/users/${encodeURIComponent(userId)}/leaderboards/${key}${qs ? `?${qs}` : ''}`);
}

/** The rankings of a board as [userId, value] pairs (rank = index + 1 is asserted). */
export async function standings(
  t: TestServer,
  key: string,
  query: Record<string, string | number> = {},
): Promise<Array<[string, number]>> {
  const res = await getBoard(t, key, { limit: 1000, ...query });
  if (res.status !== 200) throw new Error(`GET board failed: ${res.status} ${JSON.stringify(res.body)}`);
  const rankings = res.body.rankings as Array<{ userId: string; rank: number; value: number }>;
  const offset = Number(query.offset ?? 0);
  rankings.forEach((r, i) => {
    if (query.userId === undefined && r.rank !== offset + i + 1) {
      throw new Error(`rank ${r.rank} at index ${i}: ${JSON.stringify(rankings)}`);
    }
  });
  return rankings.map((r) => [r.userId, r.value]);
}

/** Runs async jobs with at most `width` in flight. */
export async function inBatches<T>(items: T[], width: number, fn: (item: T) => Promise<unknown>) {
  for (let i = 0; i < items.length; i += width) {
    await Promise.all(items.slice(i, i + width).map(fn));
  }
}
