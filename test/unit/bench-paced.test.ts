import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pacedRun, quantile } from '../../bench/lib/paced';

/** A server that records when each request arrived and answers 201, or 500 for /fail. */
const arrivals: number[] = [];
const server = createServer((req, res) => {
  arrivals.push(performance.now());
  req.resume();
  req.on('end', () => {
    res.statusCode = req.url === '/fail' ? 500 : 201;
    res.end('{}');
  });
});
let origin = '';
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('the paced load generator (bench, figure 6)', () => {
  it('spreads a fixed rate evenly over the second instead of sending it in one burst', async () => {
    arrivals.length = 0;
    let n = 0;
    const res = await pacedRun({
      origins: [origin],
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      next: () => ({ path: n++ % 50 === 49 ? '/fail' : '/ok', body: '{}' }),
      rate: 200,
      seconds: 1,
      connections: 50,
      timeoutMs: 5000,
    });
    expect(res.requests).toBe(200);
    expect(res.statusCodes).toEqual({ '201': 196, '500': 4 });
    expect(res.non2xx).toBe(4);
    expect(res.latencies).toHaveLength(200);
    // Ten windows of 100 ms: about 20 requests each; a burst would put all 200 in the first. The bounds
    // leave room for a stall of this process on a loaded machine (a late request is sent at once, as an
    // open loop must: one CI run saw 51 in a window).
    const start = arrivals[0]!;
    const windows = Array.from(
      { length: 10 },
      (_, w) => arrivals.filter((t) => t - start >= w * 100 && t - start < (w + 1) * 100).length,
    );
    for (const count of windows) expect(count).toBeLessThanOrEqual(80);
    expect(windows.filter((c) => c >= 10).length).toBeGreaterThanOrEqual(7);
  });

  it('reads quantiles by nearest rank', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    expect([quantile(sorted, 0.5), quantile(sorted, 0.99), quantile(sorted, 1)]).toEqual([50, 99, 100]);
    expect(quantile([], 0.5)).toBe(0);
  });
});
