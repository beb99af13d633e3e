import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../src/db/client';
import { metricsHandler, renderMetrics } from '../../src/metrics/server';
import { webhookFailuresLastHour } from '../../src/metrics/collect';
import { HistoryWriter } from '../../src/workers/history-writer';
import { historyHooks } from '../../src/workers/index';
import { Scheduler } from '../../src/workers/scheduler';
import { WebhookDispatcher } from '../../src/workers/webhooks';
import { metric, promtool } from '../helpers/metrics';
import { freePort } from '../helpers/redis-cluster';
import { addStaleOutboxRecord } from '../helpers/outbox';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

const TOKEN = 'metrics-token-for-tests-0123';
const MINUTE = 60_000;

let t: TestServer;
let writer: HistoryWriter;
let metricsServer: Server;
let metricsOrigin: string;

/** A fresh scrape (shared state read now, not reused) of this process. */
const scrape = (deps = t.deps) => renderMetrics(deps, { collect: true, cluster: false, reuseMs: 0 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const drain = async (w = writer) => {
  while ((await w.drainOnce()) > 0) {}
};
const event = (metricKey: string, user: string, value: unknown, headers: Record<string, string> = {}) =>
  t.api('POST', `/v1/metrics/${metricKey}/event`, { user: { id: user }, value }, headers);

/** Signs in to the dashboard with the admin key; returns a GET that carries the session cookie. */
async function dashboard() {
  const login = await t.app.request('/dashboard/login');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await login.text())?.[1] ?? '';
  const cookies = login.headers.getSetCookie().map((c) => c.split(';')[0]!);
  const res = await t.app.request('/dashboard/login', {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookies.join('; ') },
    body: new URLSearchParams({ _csrf: csrf, key: t.adminKey, next: '/dashboard' }).toString(),
  });
  expect(res.status).toBe(303);
  const session = res.headers.getSetCookie().map((c) => c.split(';')[0]!);
  return async (path: string) => {
    const page = await t.app.request(path, { headers: { Cookie: [...cookies, ...session].join('; ') } });
    expect(page.status).toBe(200);
    return page.text();
  };
}

beforeAll(async () => {
  t = await createTestServer({
    // The user script's call counts are checked below: events go to it, whatever EVALUATE_EVENTS the
    // suite runs with.
    env: { METRICS_TOKEN: TOKEN, WEBHOOK_MAX_RETRIES: '3', WEBHOOK_TIMEOUT_MS: '2000', EVALUATE_EVENTS: '0' },
  });
  writer = new HistoryWriter(t.deps, { hooks: historyHooks, claimIdleMs: 0 });
  const [m] = await adminCreate(t, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
  const [p] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP' }]);
  await adminCreate(t, `/points/${p.id}/triggers`, [
    { type: 'metric', points: 10, metricId: m.id, metricThreshold: 1, status: 'active' },
  ]);
  await adminCreate(t, `/points/${p.id}/levels`, [{ key: 'bronze', name: 'Bronze', points: 20 }]);
  await adminCreate(t, '/achievements', [
    { key: 'two', name: 'Two', trigger: 'metric', metricId: m.id, metricValue: 2, status: 'active' },
  ]);
  metricsServer = createServer(metricsHandler(t.deps, { collect: true, cluster: false, reuseMs: 0 }));
  await new Promise<void>((r) => metricsServer.listen(0, '127.0.0.1', () => r()));
  metricsOrigin = `http://127.0.0.1:${(metricsServer.address() as AddressInfo).port}`;
});
afterAll(async () => {
  metricsServer?.closeAllConnections();
  await new Promise<void>((r) => metricsServer?.close(() => r()));
  await t?.close();
});

describe('/metrics', () => {
  it('is not served on the public port, and its own port asks for the bearer token', async () => {
    expect((await t.app.request('/metrics')).status).toBe(404);
    const get = (headers: Record<string, string> = {}, path = '/metrics', method = 'GET') =>
      fetch(`${metricsOrigin}${path}`, { method, headers });
    expect((await get()).status).toBe(401);
    expect((await get({ Authorization: 'Bearer wrong-token-of-some-length' })).status).toBe(401);
    expect((await get({ Authorization: TOKEN })).status).toBe(401);
    const ok = await get({ Authorization: `Bearer ${TOKEN}` });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    expect(await ok.text()).toContain('laurel_http_requests_total');
    // Whatever else arrives is a 4xx, never a 5xx.
    expect((await get({ Authorization: `Bearer ${TOKEN}` }, '/metrics?x=%ZZ')).status).toBe(200);
    expect((await get({ Authorization: `Bearer ${TOKEN}` }, '/other')).status).toBe(404);
    expect((await get({ Authorization: `Bearer ${TOKEN}` }, '/metrics', 'POST')).status).toBe(405);
  });

  it('shows the health signals on the dashboard overview, all caught up', async () => {
    const html = await (await dashboard())('/dashboard');
    expect(html).toContain('id="health" data-state="ok"');
    expect(html).toContain('All caught up');
    for (const signal of [
      'history-lag',
      'outbox-backlog',
      'webhook-failures',
      'scheduler-lateness',
      'backends',
    ]) {
      expect(html).toContain(`data-signal="${signal}" data-state="ok"`);
    }
  });

  it('counts real events by outcome, their awards, completions and level changes, and passes promtool', async () => {
    const before = await scrape();
    expect((await event('lessons', 'm-1', 1)).status).toBe(201);
    expect((await event('lessons', 'm-1', 1)).status).toBe(201); // 20 points: Bronze, and achievement "two"
    expect((await event('lessons', 'm-2', 1, { 'Idempotency-Key': 'k1' })).status).toBe(201);
    expect((await event('lessons', 'm-2', 1, { 'Idempotency-Key': 'k1' })).status).toBe(202);
    expect((await event('nope', 'm-3', 1)).status).toBe(404);
    expect((await event('lessons', 'm-3', 'one')).status).toBe(400);
    expect((await event('lessons', 'm-3', 1, { 'Idempotency-Key': 'x'.repeat(256) })).status).toBe(422);
    expect((await t.api('GET', '/v1/users/m-1')).status).toBe(200);
    await drain();
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) =>
      metric(after, name, labels) - metric(before, name, labels);

    expect(delta('laurel_events_total', { outcome: 'created' })).toBe(3);
    expect(delta('laurel_events_total', { outcome: 'replayed' })).toBe(1);
    expect(delta('laurel_events_total', { outcome: 'rejected', reason: 'not_found' })).toBe(1);
    expect(delta('laurel_events_total', { outcome: 'rejected', reason: 'bad_request' })).toBe(1);
    expect(delta('laurel_events_total', { outcome: 'rejected', reason: 'unprocessable' })).toBe(1);
    expect(delta('laurel_events_total', { outcome: 'failed' })).toBe(0);
    // By route template, never by the path a client sent.
    const eventRoute = { method: 'POST', route: '/v1/metrics/:key/event' };
    expect(delta('laurel_http_requests_total', { ...eventRoute, status: '201' })).toBe(3);
    expect(delta('laurel_http_requests_total', { ...eventRoute, status: '202' })).toBe(1);
    expect(
      delta('laurel_http_requests_total', { method: 'GET', route: '/v1/users/:id', status: '200' }),
    ).toBe(1);
    expect(after).not.toContain('route="/v1/users/m-1"');
    expect(delta('laurel_http_request_duration_seconds_count', eventRoute)).toBe(7);
    expect(
      delta('laurel_redis_script_calls_total', { script: 'applyUserOp', result: 'ok' }),
    ).toBeGreaterThanOrEqual(4);
    expect(
      delta('laurel_redis_script_duration_seconds_count', { script: 'applyUserOp' }),
    ).toBeGreaterThanOrEqual(4);
    // The history writer wrote the three new events with their effects.
    expect(delta('laurel_history_records_written_total')).toBe(3);
    expect(delta('laurel_history_end_to_end_lag_seconds_count')).toBe(3);
    expect(delta('laurel_history_batch_records_count')).toBeGreaterThanOrEqual(1);
    expect(delta('laurel_history_write_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(delta('laurel_points_awards_total')).toBe(3);
    expect(delta('laurel_achievement_completions_total')).toBe(1);
    expect(delta('laurel_level_changes_total')).toBe(1);
    // Shared state: caught up, both backends reachable, one gauge per outbox stream.
    expect(metric(after, 'laurel_history_lag_seconds')).toBe(0);
    expect(metric(after, 'laurel_outbox_backlog')).toBe(0);
    expect(metric(after, 'laurel_redis_up')).toBe(1);
    expect(metric(after, 'laurel_postgres_up')).toBe(1);
    expect(after.match(/^laurel_outbox_backlog\{/gm)).toHaveLength(t.deps.keys.outboxes.length);
    // Process defaults.
    expect(metric(after, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(metric(after, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);

    promtool(['check', 'metrics'], after);
  });

  it('shows history lag rising while Postgres is unreachable and falling after it returns', async () => {
    await drain();
    const before = await scrape();
    for (let i = 0; i < 3; i++) expect((await event('lessons', `pg-${i}`, 1)).status).toBe(201);
    // Outage: the writer's pool points at a closed port (the shared server is never stopped).
    const dead = createDb(`postgres://postgres@127.0.0.1:${await freePort()}/nowhere`, 1);
    const outage = { ...t.deps, db: dead.db, sql: dead.sql };
    // claimIdleMs 0: it takes its own failed batch back at once and keeps retrying it.
    const failing = new HistoryWriter(outage, { consumer: 'outage', idleSleepMs: 20, claimIdleMs: 0 });
    failing.start();
    try {
      await sleep(2000);
      const during = await scrape();
      expect(failing.lastError).not.toBeNull();
      expect(metric(during, 'laurel_history_lag_seconds')).toBeGreaterThanOrEqual(1.5);
      expect(metric(during, 'laurel_outbox_backlog')).toBe(3);
      const ages = t.deps.keys.outboxes.map((_, shard) =>
        metric(during, 'laurel_outbox_oldest_age_seconds', { shard: String(shard) }),
      );
      expect(Math.max(...ages)).toBe(metric(during, 'laurel_history_lag_seconds'));
      expect(
        metric(during, 'laurel_backend_errors_total', { backend: 'postgres', source: 'history_writer' }) -
          metric(before, 'laurel_backend_errors_total', { backend: 'postgres', source: 'history_writer' }),
      ).toBeGreaterThan(0);
      expect(metric(during, 'laurel_history_records_written_total')).toBe(
        metric(before, 'laurel_history_records_written_total'),
      );
      await sleep(1000);
      const later = await scrape();
      expect(metric(later, 'laurel_history_lag_seconds')).toBeGreaterThan(
        metric(during, 'laurel_history_lag_seconds') + 0.5,
      );
      // Seen from the process whose Postgres is away: the probe says so, Redis is fine.
      const fromOutage = await scrape(outage);
      expect(metric(fromOutage, 'laurel_postgres_up')).toBe(0);
      expect(metric(fromOutage, 'laurel_redis_up')).toBe(1);
    } finally {
      await failing.stop();
      await dead.sql.end({ timeout: 1 });
    }
    // Postgres is back: a writer claims what the failing one held.
    await drain();
    const recovered = await scrape();
    expect(metric(recovered, 'laurel_history_lag_seconds')).toBe(0);
    expect(metric(recovered, 'laurel_outbox_backlog')).toBe(0);
    expect(metric(recovered, 'laurel_postgres_up')).toBe(1);
    const written = (s: string) => metric(s, 'laurel_history_records_written_total');
    expect(written(recovered) - written(before)).toBe(3);
    // Their end-to-end lag covers the outage: over 2.5 s each.
    const lagCount = (s: string, le?: string) =>
      le
        ? metric(s, 'laurel_history_end_to_end_lag_seconds_bucket', { le })
        : metric(s, 'laurel_history_end_to_end_lag_seconds_count');
    expect(lagCount(recovered) - lagCount(before)).toBe(3);
    expect(lagCount(recovered, '2.5') - lagCount(before, '2.5')).toBe(0);
  });

  it('counts the attempts of a failing webhook receiver until the delivery fails', async () => {
    const receiver = createServer((_req, res) => {
      res.statusCode = 500;
      res.end('down');
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
      await adminCreate(t, '/webhooks', [{ url, eventTypes: ['points.changed'] }]);
      const dispatcher = new WebhookDispatcher(t.deps);
      const before = await scrape();
      const attempts = (s: string, result: string) =>
        metric(s, 'laurel_webhook_deliveries_total', { type: 'points.changed', result }) -
        metric(before, 'laurel_webhook_deliveries_total', { type: 'points.changed', result });
      expect((await event('lessons', 'wh-1', 1)).status).toBe(201);
      await drain();
      const queued = await scrape();
      expect(metric(queued, 'laurel_webhook_pending_deliveries')).toBe(1);
      expect(metric(queued, 'laurel_webhook_retries_pending')).toBe(0);

      expect(await dispatcher.runOnce()).toBe(1);
      t.clock.advance(30_000);
      const first = await scrape();
      expect(attempts(first, 'retrying')).toBe(1);
      expect(metric(first, 'laurel_webhook_retries_pending')).toBe(1);
      expect(metric(first, 'laurel_webhook_oldest_pending_age_seconds')).toBe(30);
      expect(await webhookFailuresLastHour(t.deps)).toBe(1);

      // Retries after 1, 2 and 4 minutes (WEBHOOK_MAX_RETRIES=3), then the delivery has failed.
      for (const wait of [1, 2, 4]) {
        t.clock.advance(wait * MINUTE);
        expect(await dispatcher.runOnce()).toBe(1);
      }
      const last = await scrape();
      expect(attempts(last, 'retrying')).toBe(3);
      expect(attempts(last, 'failed')).toBe(1);
      expect(attempts(last, 'succeeded')).toBe(0);
      expect(metric(last, 'laurel_webhook_pending_deliveries')).toBe(0);
      expect(metric(last, 'laurel_webhook_retries_pending')).toBe(0);
      expect(metric(last, 'laurel_webhook_oldest_pending_age_seconds')).toBe(0);
    } finally {
      receiver.closeAllConnections();
      await new Promise<void>((r) => receiver.close(() => r()));
    }
  });

  it('shows scheduler items that are due and how late they are, until a pass takes them', async () => {
    const key = t.deps.keys.sched.streaks;
    await t.deps.redis.zadd(key, t.clock.now() - 2 * MINUTE, 'late-user');
    const before = await scrape();
    expect(metric(before, 'laurel_scheduler_due_items', { queue: 'streaks' })).toBe(1);
    expect(metric(before, 'laurel_scheduler_lateness_seconds', { queue: 'streaks' })).toBe(120);
    await new Scheduler(t.deps).runOnce();
    const after = await scrape();
    expect(metric(after, 'laurel_scheduler_due_items', { queue: 'streaks' })).toBe(0);
    expect(metric(after, 'laurel_scheduler_lateness_seconds', { queue: 'streaks' })).toBe(0);
    expect(
      metric(after, 'laurel_scheduler_pass_duration_seconds_count') -
        metric(before, 'laurel_scheduler_pass_duration_seconds_count'),
    ).toBe(1);
  });

  it('shows a clear behind state on the overview when history lags and webhooks fail', async () => {
    // An outbox record accepted two minutes ago that no writer has taken (no payload: a writer would
    // skip it).
    await drain();
    const old = Date.now() - 2 * MINUTE;
    await addStaleOutboxRecord(t.deps, old, ['x', '1']);
    await sleep(1100); // the overview reuses shared state for a second
    const html = await (await dashboard())('/dashboard');
    expect(html).toContain('id="health" data-state="behind"');
    expect(html).toMatch(/Behind: history lag 2 min, [^<]*webhook failures 1/);
    expect(html).toContain('data-signal="history-lag" data-state="behind"');
    expect(html).toContain('data-signal="webhook-failures" data-state="behind"');
    expect(html).toContain('data-signal="scheduler-lateness" data-state="ok"');
  });

  it('counts leaderboard finalisations and the scheduler work of a pass', async () => {
    const [m] = await adminCreate(t, '/metrics', [{ key: 'laps', name: 'Laps' }]);
    await adminCreate(t, '/leaderboards', [
      {
        key: 'daily',
        name: 'Daily',
        rankBy: 'metric',
        metricId: m.id,
        runUnit: 'day',
        runInterval: 1,
        status: 'active',
      },
    ]);
    const scheduler = new Scheduler(t.deps);
    await scheduler.runOnce();
    expect((await event('laps', 'fin-1', 3)).status).toBe(201);
    await drain();
    const before = await scrape();
    // 12:00 UTC the day after the run's last date: the run is final.
    t.clock.set(`${new Date(t.clock.now() + 24 * 3_600_000).toISOString().slice(0, 10)}T12:00:01Z`);
    await scheduler.runOnce();
    await scheduler.runOnce();
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) =>
      metric(after, name, labels) - metric(before, name, labels);
    expect(delta('laurel_scheduler_finalisations_total')).toBe(1);
    expect(delta('laurel_scheduler_work_total', { kind: 'runs_finalised' })).toBe(1);
    expect(delta('laurel_scheduler_work_total', { kind: 'runs_started' })).toBeGreaterThanOrEqual(1);
    expect(delta('laurel_scheduler_pass_duration_seconds_count')).toBe(2);
  });
});
