import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { metric, promtool } from '../helpers/metrics';
import { laurelProcesses, until } from '../helpers/processes';
import { freePort } from '../helpers/redis-cluster';

const laurel = laurelProcesses('mp');
afterAll(() => laurel.stop());

describe('/metrics with API_PROCESSES=2', () => {
  it('aggregates the requests served by both API processes into one scrape on the metrics port', async () => {
    const metricsPort = await freePort();
    const token = randomBytes(16).toString('hex');
    const started = await laurel.start({
      API_PROCESSES: '2',
      METRICS_PORT: String(metricsPort),
      METRICS_TOKEN: token,
    });
    const { proc: p, origin, logs } = started;
    await until(async () => (logs().match(/laurel listening/g) ?? []).length >= 2);
    await until(async () => /metrics listening/.test(logs()));
    const scrape = async () => {
      const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, {
        headers: { Authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(200);
      return res.text();
    };

    // Not on the public port; not without the token.
    expect((await fetch(`${origin}/metrics`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(401);

    const before = await scrape();
    const route = { method: 'GET', route: '/healthz', status: '200' };
    // A new connection each: the primary hands connections to the API processes in turn.
    const n = 40;
    for (let i = 0; i < n; i++) {
      const res = await fetch(`${origin}/healthz`, { headers: { Connection: 'close' } });
      expect(res.status).toBe(200);
    }
    const after = await scrape();
    // The primary serves no HTTP itself: every request counted here was served by an API process,
    // and the count is exact only when both processes' counters are in the scrape.
    expect(metric(after, 'laurel_metrics_processes')).toBe(3);
    expect(
      metric(after, 'laurel_http_requests_total', route) -
        metric(before, 'laurel_http_requests_total', route),
    ).toBe(n);
    // Process metrics are summed over the three processes.
    expect(metric(after, 'process_resident_memory_bytes')).toBeGreaterThan(3 * 20 * 1024 * 1024);
    expect(metric(after, 'laurel_redis_up')).toBe(1);
    expect(metric(after, 'laurel_postgres_up')).toBe(1);
    promtool(['check', 'metrics'], after);

    p.kill('SIGTERM');
    expect(await new Promise((r) => p.once('exit', r))).toBe(0);
  }, 60_000);
});
