import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookDeliveries } from '../../src/db/schema';
import { HistoryWriter } from '../../src/workers/history-writer';
import { historyHooks } from '../../src/workers/index';
import { WebhookDispatcher } from '../../src/workers/webhooks';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

interface Received {
  headers: IncomingMessage['headers'];
  raw: string;
  body: any;
}

/** A real HTTP receiver on 127.0.0.1: records every request; answers the queued statuses, then 200. */
class Receiver {
  received: Received[] = [];
  statuses: number[] = [];
  port = 0;
  private server: Server | null = null;

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        this.received.push({ headers: req.headers, raw, body: JSON.parse(raw) });
        res.statusCode = this.statuses.shift() ?? 200;
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', () => resolve()));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  get url() {
    return `http://127.0.0.1:${this.port}/hooks`;
  }
}

const SECRET = 'receiver-secret-0123456789';
const MINUTE = 60_000;

let t: TestServer;
let rx: Receiver;
let writer: HistoryWriter;
let dispatcher: WebhookDispatcher;
let endpointId: string;

const event = async (metric: string, user: string, value: number) => {
  const r = await t.api('POST', `/v1/metrics/${metric}/event`, { user: { id: user }, value });
  expect(r.status).toBe(201);
  await writer.drainOnce();
  return r.body;
};

const levelChanges = () => rx.received.filter((r) => r.body.type === 'points.level_changed');

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-10T12:00:00Z', env: { WEBHOOK_TIMEOUT_MS: '2000' } });
  rx = new Receiver();
  await rx.start();
  writer = new HistoryWriter(t.deps, { hooks: historyHooks, claimIdleMs: 0 });
  dispatcher = new WebhookDispatcher(t.deps);
  const [lessons, penalty] = await adminCreate(t, '/metrics', [
    { key: 'lessons', name: 'Lessons' },
    { key: 'penalty', name: 'Penalty' },
  ]);
  const [xp] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP' }]);
  await adminCreate(t, `/points/${xp.id}/triggers`, [
    { type: 'metric', points: 10, metricId: lessons.id, metricThreshold: 1, status: 'active' },
    { type: 'metric', points: -30, metricId: penalty.id, metricThreshold: 1, status: 'active' },
  ]);
  await adminCreate(t, `/points/${xp.id}/levels`, [
    { key: 'bronze', name: 'Bronze', points: 20 },
    { key: 'silver', name: 'Silver', points: 50 },
  ]);
  const [ep] = await adminCreate(t, '/webhooks', [
    { url: rx.url, eventTypes: ['points.level_changed'], secret: SECRET },
  ]);
  endpointId = ep.id;
});
afterAll(async () => {
  await rx?.stop();
  await t?.close();
});

describe('webhook delivery (semantics §8)', () => {
  it('delivers points.level_changed up and down across level thresholds, signed', async () => {
    await event('lessons', 'u1', 1); // 10 points: no level yet, no webhook
    await event('lessons', 'u1', 4); // 50: null -> silver
    await event('penalty', 'u1', 1); // 20: silver -> bronze
    await event('lessons', 'u1', 0.5); // no award: nothing
    expect(await dispatcher.runOnce()).toBe(2);
    const got = levelChanges();
    expect(got).toHaveLength(2);
    for (const r of got) {
      const sig = createHmac('sha256', SECRET).update(Buffer.from(r.raw, 'utf8')).digest('base64');
      expect(r.headers['x-trophy-signature']).toBe(sig);
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['user-agent']).toBe('Laurel-Webhooks/1');
      expect(r.headers['x-webhook-id']).toBe(r.body.id);
      expect(r.headers['x-webhook-attempt']).toBe('1');
      expect(Object.keys(r.body).slice(0, 3)).toEqual(['id', 'type', 'timestamp']);
    }
    const [up, down] = [...got].sort((x, y) => y.body.points.total - x.body.points.total);
    expect(up!.body).toMatchObject({
      type: 'points.level_changed',
      timestamp: '2025-03-10T12:00:00.000Z',
      user: { id: 'u1', attributes: {}, control: false },
      points: { key: 'xp', name: 'XP', total: 50, maxPoints: null },
      previousLevel: null,
      newLevel: { key: 'silver', name: 'Silver', points: 50 },
    });
    expect(down!.body).toMatchObject({
      points: { key: 'xp', total: 20 },
      previousLevel: { key: 'silver' },
      newLevel: { key: 'bronze', points: 20 },
    });
    // Nothing left to send.
    expect(await dispatcher.runOnce()).toBe(0);
  });

  it('retries after a 500 with the same id and a byte-identical body', async () => {
    rx.received = [];
    rx.statuses = [500];
    await event('lessons', 'u2', 2); // 20: null -> bronze
    expect(await dispatcher.runOnce()).toBe(1);
    expect(rx.received).toHaveLength(1);
    const [row] = await t.deps.db
      .select()
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.eventId, rx.received[0]!.body.id));
    expect(row).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: 500, lastError: 'HTTP 500' });
    expect(row!.nextAttemptAt!.getTime()).toBe(t.clock.now() + MINUTE);

    // Not before the backoff.
    t.clock.advance(MINUTE - 1);
    expect(await dispatcher.runOnce()).toBe(0);
    t.clock.advance(1);
    expect(await dispatcher.runOnce()).toBe(1);
    expect(rx.received).toHaveLength(2);
    const [first, second] = rx.received;
    expect(second!.headers['x-webhook-id']).toBe(first!.headers['x-webhook-id']);
    expect(second!.raw).toBe(first!.raw);
    expect(second!.headers['x-trophy-signature']).toBe(first!.headers['x-trophy-signature']);
    expect(second!.headers['x-webhook-attempt']).toBe('2');
    const log = await t.admin('GET', `/webhooks/${endpointId}/deliveries?limit=100`);
    expect(log.status).toBe(200);
    const entry = log.body.find((d: any) => d.eventId === first!.body.id);
    expect(entry).toMatchObject({
      status: 'succeeded',
      attempts: 2,
      lastStatusCode: 200,
      lastError: null,
      nextAttemptAt: null,
      type: 'points.level_changed',
    });
    expect(entry.payload).toEqual(first!.body);
  });

  it('keeps retrying with exponential backoff while the receiver is down and loses nothing', async () => {
    rx.received = [];
    await rx.stop();
    const users = ['d1', 'd2', 'd3'];
    for (const u of users) await event('lessons', u, 5); // each: null -> silver
    const attemptsAt: number[] = [];
    // Down for 1 + 2 minutes after the first attempt: three failed attempts per delivery.
    for (const wait of [0, MINUTE, 2 * MINUTE]) {
      t.clock.advance(wait);
      expect(await dispatcher.runOnce()).toBe(3);
      attemptsAt.push(t.clock.now());
      // Early: nothing is due between the backoff steps.
      t.clock.advance(1000);
      expect(await dispatcher.runOnce()).toBe(0);
      t.clock.advance(-1000);
    }
    const rows = await t.deps.db
      .select()
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.status, 'pending'));
    expect(rows).toHaveLength(3);
    for (const r of rows) {
      expect(r).toMatchObject({ attempts: 3, lastStatusCode: null });
      expect(r.lastError).toMatch(/fetch failed|ECONNREFUSED/);
      expect(r.nextAttemptAt!.getTime()).toBe(t.clock.now() + 4 * MINUTE);
    }
    await rx.start(); // back up on the same port
    expect(attemptsAt).toHaveLength(3);
    t.clock.advance(4 * MINUTE);
    expect(await dispatcher.runOnce()).toBe(3);
    const got = levelChanges();
    expect(got.map((r) => r.body.user.id).sort()).toEqual(users);
    expect(got.every((r) => r.headers['x-webhook-attempt'] === '4')).toBe(true);
    expect(new Set(got.map((r) => r.body.id)).size).toBe(3);
    const pending = await t.deps.db
      .select()
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.status, 'pending'));
    expect(pending).toHaveLength(0);
  });

  it('fails a delivery after the configured retries, and a manual redelivery sends the same event again', async () => {
    rx.received = [];
    rx.statuses = Array(6).fill(503);
    await event('lessons', 'f1', 2);
    for (const wait of [0, 1, 2, 4, 8, 16]) {
      t.clock.advance(wait * MINUTE);
      expect(await dispatcher.runOnce()).toBe(1);
    }
    t.clock.advance(60 * MINUTE);
    expect(await dispatcher.runOnce()).toBe(0);
    expect(rx.received).toHaveLength(6); // 1 attempt + 5 retries
    const id = rx.received[0]!.body.id;
    const [row] = await t.deps.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.eventId, id));
    expect(row).toMatchObject({ status: 'failed', attempts: 6, lastStatusCode: 503 });

    const re = await t.admin('POST', `/webhooks/${endpointId}/deliveries/${row!.id}/redeliver`);
    expect(re.status).toBe(202);
    expect(re.body).toMatchObject({ id: row!.id, status: 'pending', eventId: id });
    expect(await dispatcher.runOnce()).toBe(1);
    expect(rx.received).toHaveLength(7);
    expect(rx.received[6]!.raw).toBe(rx.received[0]!.raw);
    const [after] = await t.deps.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, row!.id));
    expect(after).toMatchObject({ status: 'succeeded', attempts: 7, lastStatusCode: 200 });
    expect((await t.admin('POST', `/webhooks/${endpointId}/deliveries/${endpointId}/redeliver`)).status).toBe(
      404,
    );
  });

  it('an event is not lost when the writer dies before writing it: another writer claims it and it is delivered', async () => {
    rx.received = [];
    const r = await t.api('POST', '/v1/metrics/lessons/event', { user: { id: 'crash' }, value: 2 });
    expect(r.status).toBe(201);
    // A writer reads the outbox entry and dies before writing or acknowledging it.
    const key = t.deps.keys.outbox(t.deps.keys.user('crash').shard);
    await t.deps.redis.xgroup('CREATE', key, 'history', '0', 'MKSTREAM').catch(() => {});
    const read = (await t.deps.redis.xreadgroup(
      'GROUP',
      'history',
      'dead',
      'COUNT',
      100,
      'STREAMS',
      key,
      '>',
    )) as any[];
    expect(read?.[0]?.[1]?.length).toBeGreaterThan(0);
    expect(
      await t.deps.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.status, 'pending')),
    ).toHaveLength(0);
    // Another writer claims the dead one's pending entry; the delivery is recorded with the history.
    const fresh = new HistoryWriter(t.deps, { hooks: historyHooks, claimIdleMs: 0 });
    await fresh.drainOnce();
    expect(await dispatcher.runOnce()).toBe(1);
    expect(levelChanges().map((x) => x.body.user.id)).toEqual(['crash']);
  });

  it('disabling an endpoint cancels its pending deliveries', async () => {
    rx.received = [];
    await event('lessons', 'x1', 2);
    const off = await t.admin('PATCH', '/webhooks', [{ id: endpointId, enabled: false }]);
    expect(off.body.issues).toEqual([]);
    expect(await dispatcher.runOnce()).toBe(0);
    expect(rx.received).toHaveLength(0);
    const log = await t.admin('GET', `/webhooks/${endpointId}/deliveries?status=failed&limit=100`);
    expect(log.body.some((d: any) => d.lastError?.startsWith('cancelled'))).toBe(true);
    await event('lessons', 'x2', 2);
    expect(
      await t.deps.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.status, 'pending')),
    ).toHaveLength(0);
  });
});

describe('webhook endpoint configuration (admin §14)', () => {
  it('reports bad configuration as item errors, creating nothing', async () => {
    // The issue asks for 422; the contract (admin §1.3–§1.4) makes a bad item an error issue and answers
    // 200 when nothing was created. The contract wins.
    const res = await t.admin('POST', '/webhooks', [
      { url: 'ftp://example.com/hook', eventTypes: ['points.changed'] },
      { url: 'https://example.com/hook', eventTypes: ['points.exploded'] },
      { url: 'https://example.com/hook', eventTypes: ['points.changed'], secret: '' },
    ]);
    expect(res.status).toBe(200);
    expect(res.body.created).toEqual([]);
    expect(res.body.issues.map((i: any) => [i.index, i.severity])).toEqual([
      [0, 'error'],
      [1, 'error'],
      [2, 'error'],
    ]);
    // Request-level problems are 422.
    expect((await t.admin('POST', '/webhooks', [])).status).toBe(422);
  });
});
