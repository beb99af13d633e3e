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
    // Paced at 200/s over one second: about 20 requests every 100 ms, the last near the end of the
    // second; a burst would send all 200 in the first milliseconds. Bounds that a stall of this process
    // on a loaded machine cannot break (overdue requests are then sent at once, as an open loop must:
    // CI runs saw 51 in one window, and 5 or 6 of the ten windows under 10 requests): the first 100 ms
    // hold few of them, and the requests span most of the second.
    const start = arrivals[0]!;
    const first = arrivals.filter((t) => t - start < 100).length;
    expect(first).toBeLessThanOrEqual(60);
    expect(arrivals.at(-1)! - start).toBeGreaterThanOrEqual(700);
  });

  it('reads quantiles by nearest rank', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    expect([quantile(sorted, 0.5), quantile(sorted, 0.99), quantile(sorted, 1)]).toEqual([50, 99, 100]);
    expect(quantile([], 0.5)).toBe(0);
  });
});
