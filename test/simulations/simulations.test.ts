import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Snapshot } from '../../src/catalog/snapshot';
import { Keys } from '../../src/redis/keys';
import { loadUsers, recordedItems } from '../../src/simulations/history';
import { deletePrefix, replayHistory } from '../../src/simulations/replay';
import { settleSimulations } from '../../src/simulations/runs';
import { HistoryWriter } from '../../src/workers/history-writer';
import { historyHooks } from '../../src/workers/index';
import { Scheduler } from '../../src/workers/scheduler';
import { readSummaries } from '../../src/simulations/summary';
import { keysUnder, createTestServer, type TestServer } from '../helpers/server';
import { csrfOf, dashboardBrowser } from '../helpers/dashboard';
import { drain, mixedLoad, mixedSetup, sendEvent, snapshotKeys } from '../helpers/rebuild';

let t: TestServer;
let doc: any;
const USERS = 8;

/** Starts a simulation and waits for it to finish; returns the final record. */
async function simulate(body: Record<string, unknown>) {
  const res = await t.admin('POST', '/simulations', body);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  expect(res.body.status).toBe('running');
  await settleSimulations();
  const done = await t.admin('GET', `/simulations/${res.body.id}`);
  expect(done.status).toBe(200);
  expect(done.body.status, JSON.stringify(done.body.error)).toBe('done');
  return done.body;
}

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v));

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-10T09:00:00Z' });
  const setup = await mixedSetup(t);
  // An API achievement completed through the API, and an achievement trigger on it.
  const api = await t.admin('POST', '/achievements', [
    { key: 'helper', name: 'Helper', trigger: 'api', status: 'active' },
  ]);
  expect(api.status).toBe(201);
  await t.admin('POST', `/points/${setup.systemId}/triggers`, [
    { type: 'achievement', points: 5, achievementId: api.body.created[0].id, status: 'active' },
  ]);
  // A time trigger (granted by the scheduler at its slots) and a webhook endpoint that would record
  // a delivery for anything a replay leaked into the live history.
  await t.admin('POST', `/points/${setup.systemId}/triggers`, [
    { type: 'time', points: 1, timeUnit: 'hours', timeInterval: 12, status: 'active' },
  ]);
  await t.admin('POST', '/webhooks', [
    {
      url: 'https://example.com/hooks',
      eventTypes: [
        'achievement.completed',
        'points.changed',
        'points.level_changed',
        'leaderboard.rank_changed',
      ],
    },
  ]);
  await mixedLoad(t, { users: USERS - 1, days: 5, prefix: 'sim' });
  for (const id of ['sim-2', 'sim-5']) {
    const r = await t.api('POST', `/v1/achievements/helper/complete`, { user: { id } });
    expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  }
  await sendEvent(t, 'lessons', { id: 'sim-3' }, 2);
  // As the workers would: the writer (with the scheduler's hooks) enters the due work, the scheduler
  // grants every time-trigger slot and rolls streaks over, the writer records it.
  const writer = new HistoryWriter(t.deps, { hooks: historyHooks, consumer: 'sim', claimIdleMs: 0 });
  for (let n = await writer.drainOnce(); n > 0; n = await writer.drainOnce()) {}
  const pass = await new Scheduler(t.deps).runOnce();
  expect(pass.grants).toBeGreaterThan(USERS * 5);
  await drain(t);
  const [deliveries] = await t.deps.sql`select count(*)::int as n from webhook_deliveries`;
  expect(deliveries!.n).toBeGreaterThan(0);
  doc = (await t.admin('GET', '/config')).body;
});
afterAll(async () => t.close());

describe('simulations', () => {
  it('a draft identical to the current configuration gives no differences and a full self-check', async () => {
    const sim = await simulate({ config: doc });
    const r = sim.report;
    expect(r.selfCheck.mismatches).toEqual([]);
    expect(r.selfCheck).toMatchObject({ users: USERS, matched: USERS, applicable: true });
    expect(r.changedUsers).toBe(0);
    expect(r.topChanges).toEqual([]);
    expect(r.events).toBeGreaterThan(50);
    for (const p of r.points) {
      expect(p.distribution.current).toEqual(p.distribution.draft);
      for (const h of p.histogram) expect(h.current).toBe(h.draft);
      for (const l of p.levels) expect(l.current).toBe(l.draft);
      for (const tr of p.triggers) expect(tr.awards.current).toEqual(tr.awards.draft);
      for (const d of p.awardsPerDay) expect(d.current).toBe(d.draft);
    }
    for (const a of r.achievements) expect(a.completions.current).toBe(a.completions.draft);
    expect(r.achievements.find((a: any) => a.key === 'helper').completions.current).toBe(2);
    // Every trigger kind awarded something: time slots replayed at their times, boosts, streaks.
    const xp = r.points.find((p: any) => p.key === 'xp');
    for (const type of ['metric', 'time', 'user_creation', 'achievement', 'streak'])
      expect(
        xp.triggers.some((tr: any) => tr.type === type && tr.awards.current.count > 0),
        type,
      ).toBe(true);
    for (const b of r.leaderboards) {
      expect(b.top.current).toEqual(b.top.draft);
      expect(b.rankChanges).toBe(0);
    }
  });

  it("doubling a trigger's points doubles exactly that trigger's awards", async () => {
    const draft = clone(doc);
    const xp = draft.pointsSystems.find((p: any) => p.key === 'xp');
    const i = xp.triggers.findIndex((tr: any) => tr.type === 'metric' && tr.points === 10);
    xp.triggers[i].points = 20;
    const r = (await simulate({ config: draft })).report;
    const sys = r.points.find((p: any) => p.key === 'xp');
    const doubled = sys.triggers.find((tr: any) => tr.points.current === 10);
    expect(doubled.points.draft).toBe(20);
    expect(doubled.awards.current.count).toBeGreaterThan(0);
    expect(doubled.awards.draft.count).toBe(doubled.awards.current.count);
    // The system has a cap of 400: no user reaches it, so the doubling is exact.
    expect(sys.distribution.draft.max).toBeLessThan(400);
    expect(doubled.awards.draft.points).toBe(2 * doubled.awards.current.points);
    for (const tr of sys.triggers) {
      if (tr.id !== doubled.id) expect(tr.awards.draft).toEqual(tr.awards.current);
    }
    expect(r.changedUsers).toBeGreaterThan(0);
  });

  it('a new level at a threshold shows exactly the users above it', async () => {
    const live = await Promise.all(
      Array.from({ length: USERS }, (_, i) => t.api('GET', `/v1/users/sim-${i}/points/xp`)),
    );
    const totals = live.filter((r) => r.status === 200).map((r) => r.body.total as number);
    const threshold = [...totals].sort((a, b) => a - b)[Math.floor(totals.length / 2)]!;
    const draft = clone(doc);
    const xp = draft.pointsSystems.find((p: any) => p.key === 'xp');
    xp.levels.push({ key: 'gold', name: 'Gold', points: Math.max(threshold, 101) });
    const r = (await simulate({ config: draft })).report;
    const gold = r.points.find((p: any) => p.key === 'xp').levels.find((l: any) => l.key === 'gold');
    expect(gold.current).toBeNull();
    expect(gold.draft).toBe(totals.filter((n) => n >= Math.max(threshold, 101)).length);
    expect(r.changedUsers).toBe(gold.draft);
  });

  it('a running simulation changes no live key, row or webhook, and live traffic is served', async () => {
    const rows = async () => {
      const out: Record<string, unknown> = {};
      for (const table of [
        'users',
        'events',
        'points_awards',
        'achievement_completions',
        'streak_periods',
        'user_states',
        'leaderboard_updates',
        'leaderboard_updates_all',
        'webhook_deliveries',
        'config_changes',
        'points_triggers',
        'achievements',
      ]) {
        out[table] = await t.deps.sql.unsafe(
          `select md5(coalesce(string_agg(t::text, '|' order by t::text), '')) as h, count(*) as n from ${table} t`,
        );
      }
      return out;
    };
    const keysBefore = await snapshotKeys(t);
    const rowsBefore = await rows();
    const draft = clone(doc);
    draft.pointsSystems[0].triggers[0].points *= 3;
    const res = await t.admin('POST', '/simulations', { config: draft });
    expect(res.status).toBe(202);
    // Live traffic while it runs: reads are served (and see live values).
    const read = await t.api('GET', '/v1/users/sim-1/points/xp');
    expect(read.status).toBe(200);
    await settleSimulations();
    expect((await t.admin('GET', `/simulations/${res.body.id}`)).body.status).toBe('done');
    // Nothing reached the live outboxes (streams are not in the key fingerprint).
    expect(await drain(t)).toBe(0);
    expect(await snapshotKeys(t)).toEqual(keysBefore);
    expect(await rows()).toEqual(rowsBefore);
    // The replays' keys are gone; only the simulation records remain.
    const sim = await keysUnder(t.deps.redis, `sim:${t.prefix}`);
    expect(sim.every((k) => k.includes(':run:') || k.endsWith(':runs'))).toBe(true);
    // And an event during or after a simulation is processed as usual.
    const ev = await sendEvent(t, 'lessons', { id: 'sim-1' }, 1);
    expect(ev.status).toBe(201);
    // Later simulations replay it from Postgres: the self-check compares with history written.
    await drain(t);
  });

  it('answers bad input with 4xx {"error"}', async () => {
    const cases: Array<[unknown, number]> = [
      [{}, 400],
      [{ config: 'x' }, 400],
      [{ config: { format: 'nope' } }, 422],
      [{ config: doc, sample: 0 }, 422],
      [{ config: doc, sample: [] }, 422],
      [{ config: doc, from: 'yesterday' }, 422],
      [{ config: doc, from: '2025-03-09', to: '2025-03-01' }, 422],
      [{ config: doc, to: '2999-01-01' }, 422],
      [{ config: doc, extra: 1 }, 400],
      [{ config: { ...doc, metrics: [{ key: 'Bad Key!', name: 'x' }] } }, 422],
    ];
    for (const [body, status] of cases) {
      const res = await t.admin('POST', '/simulations', body);
      expect(res.status, JSON.stringify(body).slice(0, 200)).toBe(status);
      expect(typeof res.body.error).toBe('string');
    }
    // A key-value map is "an object" in the message, as JSON calls it.
    expect((await t.admin('POST', '/simulations', { config: 1 })).body).toEqual({
      error: 'config must be an object',
    });
    expect((await t.admin('GET', '/simulations/not-an-id')).status).toBe(404);
    expect((await t.admin('GET', '/simulations/00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });

  it('refuses a third simulation while two run, and cancels one', async () => {
    // Three at once: the third is refused even while the first two are still validating their draft.
    const post = () => t.admin('POST', '/simulations', { config: doc });
    const [a, b, c] = await Promise.all([post(), post(), post()]);
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(c.status).toBe(409);
    expect(typeof c.body.error).toBe('string');
    const cancel = await t.admin('POST', `/simulations/${a.body.id}/cancel`);
    expect(cancel.status).toBe(200);
    expect(['cancelled', 'done']).toContain(cancel.body.status);
    await settleSimulations();
    const list = await t.admin('GET', '/simulations');
    expect(list.body.length).toBeGreaterThanOrEqual(2);
    expect((await t.admin('DELETE', `/simulations/${b.body.id}`)).status).toBe(204);
    expect((await t.admin('GET', `/simulations/${b.body.id}`)).status).toBe(404);
    const sim = await keysUnder(t.deps.redis, `sim:${t.prefix}`);
    expect(sim.filter((k) => !k.includes(':run:') && !k.endsWith(':runs'))).toEqual([]);
  });

  it('a sample replays only the users asked for', async () => {
    const r = (await simulate({ config: doc, sample: ['sim-0', 'sim-3', 'nobody'] })).report;
    expect(r.users).toBe(2);
    expect(r.selfCheck.matched).toBe(2);
    const n = (await simulate({ config: doc, sample: 3 })).report;
    expect(n.users).toBe(3);
    expect(n.selfCheck.matched, JSON.stringify(n.selfCheck.mismatches)).toBe(3);
  });

  it('leaving streak rollovers to the next op gives the same users as running each at its time', async () => {
    const live = t.deps.catalog.snapshot;
    // Without a streak leaderboard (whose values show when a rollover ran), rollovers may be lazy.
    const snap: Snapshot = Object.assign(Object.create(Snapshot.prototype), live, {
      leaderboards: live.leaderboards.filter((b) => b.rankBy !== 'streak'),
    });
    const to = t.clock.now();
    const window = { from: null, to };
    const users = await loadUsers(t.deps, { all: true }, window);
    const ids = [...users.keys()].sort();
    const run = async (rollovers: 'all' | 'auto') => {
      const prefix = `sim:${t.prefix}:lazy-${rollovers}`;
      try {
        const items = recordedItems(t.deps, live, null, window);
        const outcome = await replayHistory(t.deps, prefix, snap, users, items, 0, to, { rollovers });
        const summaries = await readSummaries(
          t.deps,
          new Keys(prefix, t.deps.config.USER_SHARDS, t.deps.keys.layout),
          snap,
          ids,
          to,
        );
        return { outcome, summaries };
      } finally {
        await deletePrefix(t.deps, prefix);
      }
    };
    const all = await run('all');
    const auto = await run('auto');
    expect(auto.outcome.ops).toBeLessThan(all.outcome.ops);
    expect([...auto.summaries.entries()]).toEqual([...all.summaries.entries()]);
    const tallies = (m: Map<string, Map<string, unknown>>) =>
      Object.fromEntries([...m].map(([id, byDay]) => [id, Object.fromEntries(byDay)]));
    expect(tallies(auto.outcome.awards)).toEqual(tallies(all.outcome.awards));
  });

  it('the dashboard starts a simulation from a pasted draft and shows its report with charts side by side', async () => {
    const { request } = dashboardBrowser(t);
    const login = await request('GET', '/dashboard/login');
    await request('POST', '/dashboard/login', {
      _csrf: csrfOf(login.text),
      key: t.adminKey,
      next: '/dashboard',
    });
    const page = await request('GET', '/dashboard/simulations');
    expect(page.res.status).toBe(200);
    expect(page.text).toContain('laurel.config/v1');
    const bad = await request('POST', '/dashboard/simulations', {
      _csrf: csrfOf(page.text),
      document: '{"format":1}',
    });
    expect(bad.res.status).toBe(422);
    const draft = clone(doc);
    draft.pointsSystems[0].levels.push({ key: 'gold', name: 'Gold', points: 120 });
    const started = await request('POST', '/dashboard/simulations', {
      _csrf: csrfOf(page.text),
      document: JSON.stringify(draft),
      prune: 'on',
    });
    expect(started.res.status).toBe(303);
    const at = started.res.headers.get('location')!;
    expect(at).toMatch(/^\/dashboard\/simulations\/[0-9a-f-]{36}$/);
    await settleSimulations();
    const shown = await request('GET', at);
    expect(shown.res.status).toBe(200);
    expect(shown.text).toContain('Self-check');
    expect(shown.text).toContain('Gold');
    expect((shown.text.match(/<svg class="chart"/g) ?? []).length).toBeGreaterThanOrEqual(4);
    expect(shown.text).toContain('class="grid halves"');
  });
});
