import { existsSync } from 'node:fs';
import postgres from 'postgres';
import { describe, expect, inject, it } from 'vitest';
import type { Measurement } from '../../bench/lib/load';
import { cpuSeconds, postgresCpuSeconds, totalCpuSeconds } from '../../bench/lib/processes';
import { renderBudget } from '../../bench/lib/report';

function measurement(reqPerSec: number, cpu: Record<string, number | null>): Measurement {
  return {
    name: 'x',
    url: 'POST /x',
    reqPerSec,
    p50: 1,
    p90: 1,
    p99: 1,
    maxMs: 1,
    requests: reqPerSec * 10,
    non2xx: 0,
    errors: 0,
    timeouts: 0,
    statusCodes: {},
    cpu,
    cpuUsPerRequest: { server: null, redis: null },
    redisCommands: [],
  };
}

describe('bench CPU budget line', () => {
  it('allows an event the baseline machine CPU per request divided by the target ratio, and splits what it cost', () => {
    // Baseline: 1.6 cores at 16,000 req/s = 100 µs per request, so 0.5x allows 200 µs.
    const baseline = measurement(16_000, { machine: 1.6 });
    // Events: 1.6 cores at 2,000 req/s = 800 µs: 300 + 250 + 100 + 50 known, 100 elsewhere.
    const events = measurement(2_000, { machine: 1.6, laurel: 0.6, redis: 0.5, postgres: 0.2, loadgen: 0.1 });
    expect(renderBudget(baseline, events)).toBe(
      "CPU budget of the 0.5× bar: an event may cost the machine 200 µs (the baseline's 100 µs ÷ 0.5); " +
        'it cost 800 µs: laurel 300, redis 250, postgres 100, load generator 50, rest (kernel, other processes) 100',
    );
  });

  it('prints nothing without the machine CPU, and ? for a process it could not read', () => {
    expect(renderBudget(measurement(1000, { machine: null }), measurement(1000, { machine: 1 }))).toBeNull();
    const line = renderBudget(
      measurement(1000, { machine: 0.2 }),
      measurement(1000, { machine: 1, laurel: 0.5 }),
    );
    expect(line).toContain(
      'laurel 500, redis ?, postgres ?, load generator ?, rest (kernel, other processes) 500',
    );
  });
});

describe('bench CPU probes', () => {
  it('sums the CPU of several processes, and is null when one of them is unknown', async () => {
    const own = await cpuSeconds(process.pid);
    expect(own).toBeGreaterThan(0);
    expect(await totalCpuSeconds([process.pid, process.pid])).toBeGreaterThanOrEqual(2 * own!);
    expect(await totalCpuSeconds([process.pid, 2 ** 22 + 1])).toBeNull();
  });

  it('counts postgres CPU from the first call on, never going backwards', async () => {
    // The tests' Postgres runs on this machine: a busy query makes its backend use CPU. The connection
    // is opened first: a backend is counted from the first call that sees it.
    const db = postgres(inject('services').databaseUrl, { max: 1, onnotice: () => {} });
    try {
      await db`select 1`;
      const first = await postgresCpuSeconds();
      if (!existsSync('/proc')) {
        // No /proc (macOS): unknown, not zero.
        expect(first).toBeNull();
        return;
      }
      expect(first).not.toBeNull();
      await db`select count(*) from generate_series(1, 3000000)`;
      const second = await postgresCpuSeconds();
      expect(second!).toBeGreaterThan(first!);
      expect(await postgresCpuSeconds()).toBeGreaterThanOrEqual(second!);
    } finally {
      await db.end();
    }
  });
});
