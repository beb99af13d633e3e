import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { createBoard, getUserBoard } from '../helpers/leaderboards';

// 2,000 users send events in parallel over real sockets to a board capped at 1,000; the final board
// must equal the top 1,000 computed independently from the sent events (semantics §6.4, §6.5).

const USERS = 2000;
const CAP = 1000;
const IN_FLIGHT = 48;

let t: TestServer;
let origin: string;

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-10T12:00:00Z' });
  origin = await t.listen();
});
afterAll(async () => t.close());

/** One JSON request over a real socket to 127.0.0.1. */
async function request(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${origin}${path}`, {
    method,
    headers: { 'X-API-KEY': t.appKey, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** A deterministic shuffle (xorshift32), so a failure can be replayed. */
function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let x = seed;
  for (let i = out.length - 1; i > 0; i--) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const j = (x >>> 0) % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

describe('leaderboard under concurrency', () => {
  it('ends with exactly the independently computed top 1,000 of 2,000 parallel users', async () => {
    const [m] = await adminCreate(t, '/metrics', [{ key: 'conc', name: 'Concurrent' }]);
    const board = await createBoard(t, { rankBy: 'metric', metricId: m.id, maxParticipants: CAP });

    // Distinct totals 1..2000 in shuffled order; every third user sends theirs in two parts, so the
    // same user's events race each other too.
    const totals = shuffled(
      Array.from({ length: USERS }, (_, i) => i + 1),
      0x9e3779b9,
    );
    const events: Array<{ user: string; value: number }> = [];
    const expected = new Map<string, number>();
    totals.forEach((total, i) => {
      const user = `c${String(i).padStart(4, '0')}`;
      expected.set(user, total);
      if (i % 3 === 0 && total >= 2) {
        const part = Math.floor(total / 2);
        events.push({ user, value: part }, { user, value: total - part });
      } else events.push({ user, value: total });
    });
    const order = shuffled(events, 12345);

    let next = 0;
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < order.length) {
          const e = order[next++]!;
          const res = await request('POST', `/v1/metrics/${m.key}/event`, {
            user: { id: e.user },
            value: e.value,
          });
          statuses.push(res.status);
        }
      }),
    );
    expect(statuses.filter((s) => s !== 201)).toEqual([]);
    expect(statuses).toHaveLength(order.length);

    const top = [...expected.entries()].sort((a, b) => b[1] - a[1]).slice(0, CAP);
    const res = await request('GET', `/v1/leaderboards/${board.key}?limit=1000`);
    expect(res.status).toBe(200);
    expect(res.body.rankings).toHaveLength(CAP);
    expect(res.body.rankings.map((r: any) => [r.rank, r.userId, r.value])).toEqual(
      top.map(([user, total], i) => [i + 1, user, total]),
    );
    // Page 2 of the board is empty: nobody beyond the cap is ranked.
    expect(
      (await request('GET', `/v1/leaderboards/${board.key}?offset=1000&limit=10`)).body.rankings,
    ).toEqual([]);

    // Standing of a sample of users agrees with the board: ranked ones by rank, the others unranked.
    const rankOf = new Map(top.map(([user], i) => [user, i + 1]));
    for (const user of shuffled([...expected.keys()], 777).slice(0, 40)) {
      const standing = (await getUserBoard(t, user, board.key)).body;
      const rank = rankOf.get(user) ?? null;
      expect([user, standing.rank, standing.value]).toEqual([
        user,
        rank,
        rank === null ? null : expected.get(user),
      ]);
    }
  });
});
