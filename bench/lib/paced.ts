import { Pool } from 'undici';

/** What an open-loop run saw (latencies in ms, sorted ascending). */
export interface PacedResult {
  requests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  latencies: number[];
  /** Seconds from the first request sent to the last answer. */
  wall: number;
  /** The most the generator fell behind its schedule, in ms (the load generator itself starved). */
  maxBehindMs: number;
}

export interface PacedOptions {
  origins: string[];
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  next: () => { path: string; body?: string };
  /** Requests per second over all connections. */
  rate: number;
  seconds: number;
  /** Connections over all origins (a request waits for a free one: that wait counts as latency). */
  connections: number;
  timeoutMs: number;
}

/**
 * An open-loop load at a fixed rate: request i is sent at start + i / rate, whether or not earlier
 * ones have been answered, so the requests are spread evenly over each second. autocannon's
 * `overallRate` does not do that: each connection sends its share of a second back to back from the
 * top of the second, then idles, so a "fixed rate" is a burst of every connection at once and its
 * latency is that of a closed loop at full concurrency, not of the rate.
 *
 * The clock ticks about once a millisecond and sends every request due by then; a request's latency
 * runs from when it is handed to the client (its wait for a free connection included) to the end of
 * its answer. `maxBehindMs` reports a generator that could not keep its own schedule.
 */
export async function pacedRun(o: PacedOptions): Promise<PacedResult> {
  const perOrigin = Math.max(1, Math.ceil(o.connections / o.origins.length));
  const pools = o.origins.map(
    (origin) =>
      new Pool(origin, {
        connections: perOrigin,
        pipelining: 1,
        headersTimeout: o.timeoutMs,
        bodyTimeout: o.timeoutMs,
      }),
  );
  const total = Math.round(o.rate * o.seconds);
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  let non2xx = 0;
  let errors = 0;
  let timeouts = 0;
  let sent = 0;
  let maxBehindMs = 0;
  const pending = new Set<Promise<void>>();

  const send = (i: number) => {
    const pool = pools[i % pools.length]!;
    const { path, body } = o.next();
    const at = performance.now();
    const p = pool
      .request({ path, method: o.method, headers: o.headers, body })
      .then(async (res) => {
        await res.body.dump();
        latencies.push(performance.now() - at);
        const code = String(res.statusCode);
        statusCodes[code] = (statusCodes[code] ?? 0) + 1;
        if (res.statusCode < 200 || res.statusCode >= 300) non2xx++;
      })
      .catch((err: { code?: string }) => {
        if (err?.code === 'UND_ERR_HEADERS_TIMEOUT' || err?.code === 'UND_ERR_BODY_TIMEOUT') timeouts++;
        else errors++;
      })
      .finally(() => pending.delete(p));
    pending.add(p);
  };

  const start = performance.now();
  const interval = 1000 / o.rate;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      const due = Math.min(total, Math.floor((now - start) / interval) + 1);
      if (due > sent + 1) maxBehindMs = Math.max(maxBehindMs, now - (start + sent * interval));
      while (sent < due) send(sent++);
      if (sent >= total) resolve();
      else setTimeout(tick, Math.max(0, start + sent * interval - performance.now()));
    };
    tick();
  });
  await Promise.all(pending);
  const wall = (performance.now() - start) / 1000;
  await Promise.all(pools.map((p) => p.close()));
  latencies.sort((a, b) => a - b);
  return { requests: sent, non2xx, errors, timeouts, statusCodes, latencies, wall, maxBehindMs };
}

/** The q-quantile of ascending `sorted` (nearest rank), in ms to 0.1. */
export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0;
  const v = sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
  return Math.round(v * 10) / 10;
}
