import { existsSync } from 'node:fs';
import postgres from 'postgres';
import { describe, expect, inject, it } from 'vitest';
import { cpuFigures, type Measurement } from '../../bench/lib/load';
import { cpuSeconds, PostgresCpu, postgresCpuSeconds, totalCpuSeconds } from '../../bench/lib/processes';
import {
  type FigureInputs,
  issueFigures,
  layoutFloor,
  renderBudget,
  renderLayoutFloor,
  renderVerify,
  renderFigures,
  renderTable,
} from '../../bench/lib/report';

function measurement(
  reqPerSec: number,
  cpu: Record<string, number | null>,
  more: Partial<Measurement> = {},
): Measurement {
  return {
    name: 'x',
    url: 'POST /x',
    rate: 0,
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
    warmupRequests: 0,
    cpu,
    // Cores at reqPerSec requests per second: µs per request.
    cpuUs: Object.fromEntries(
      Object.entries(cpu).map(([k, v]) => [k, v === null ? null : Math.round((v * 1e6) / reqPerSec)]),
    ),
    cpuUsPerRequest: { server: null, redis: null },
    redisCommands: [],
    ...more,
  };
}

describe('bench CPU budget line', () => {
  it('allows an event the baseline machine CPU per request divided by the target ratio, and splits what it cost', () => {
    // Baseline: 1.5 cores at 15,000 req/s = 100 µs per request, so 0.3x allows 333 µs.
    const baseline = measurement(15_000, { machine: 1.5 });
    // Events: 1.6 cores at 2,000 req/s = 800 µs: 300 + 250 + 100 + 50 known, 100 elsewhere.
    const events = measurement(2_000, { machine: 1.6, laurel: 0.6, redis: 0.5, postgres: 0.2, loadgen: 0.1 });
    expect(renderBudget(baseline, events)).toBe(
      "CPU budget of the 0.3× bar: an event may cost the machine 333 µs (the baseline's 100 µs ÷ 0.3); " +
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

describe("bench line for issue 16's consolidated layout", () => {
  it("sets figure 1's bar beside what the layout, the baseline's script and the event cost Redis", () => {
    const at = (redis: number, server: number | null, more: Partial<Measurement> = {}) =>
      measurement(1500, { machine: 0.9 }, { cpuUsPerRequest: { server, redis }, ...more });
    const layout = at(120, 150);
    expect(layoutFloor(layout)).toEqual({ redisUs: 120, serverUs: 150, machineUs: 600, failed: 0 });
    expect(renderLayoutFloor(layout, at(60, 100), at(330, 350), 1500)).toBe(
      "issue 16's consolidated layout at 1500 req/s (POST /baseline/layout): Redis 120 µs per request " +
        "(figure 1's bar 90; the baseline's script 60, the event 330, 2.75× the layout's), its server 150 µs, machine 600 µs",
    );
  });

  it('says when the layout had failed requests, and ? for a probe it could not read', () => {
    const layout = measurement(
      1500,
      { machine: null },
      {
        cpuUsPerRequest: { server: null, redis: null },
        non2xx: 3,
        errors: 1,
      },
    );
    const line = renderLayoutFloor(layout, layout, layout, 1500);
    expect(line).toContain('Redis ? µs per request');
    expect(line).toContain('the event ?), its server ? µs, machine ? µs; 4 requests failed');
  });
});

describe('bench issue-16 figures', () => {
  const rate = 1500;
  const inputs = (more: Partial<FigureInputs> = {}): FigureInputs => ({
    rate,
    connections: 50,
    apiProcesses: 1,
    baseline: measurement(10_000, { machine: 1.8 }),
    events: measurement(3_500, { machine: 1.9 }),
    baselineAtRate: measurement(rate, { machine: 0.3 }, { rate, p99: 10 }),
    // Cores at 1,500 req/s: redis 80 µs, API 120 µs, machine 400 µs (bench processes 180 + 80 + 40 + 20).
    eventsAtRate: measurement(
      rate,
      {
        redis: 0.12,
        'laurel-api': 0.18,
        laurel: 0.27,
        'postgres-own': 0.06,
        loadgen: 0.03,
        machine: 0.6,
      },
      { rate, p99: 12 },
    ),
    // Evenly paced: 3 ÷ 2.5 ms = 1.2x; autocannon's bursts above: 12 ÷ 10 ms.
    baselinePaced: measurement(rate, {}, { rate, p99: 2.5, paced: true }),
    eventsPaced: measurement(rate, {}, { rate, p99: 3, paced: true }),
    writerUs: 95,
    // Redis 90 + API 130 = 220 µs against 200 for new users.
    veteransAtRate: measurement(rate, { redis: 0.135, 'laurel-api': 0.195 }, { rate }),
    bytesPerNewUser: 1800,
    bytesPerVeteran: 7000,
    reads: [
      { label: 'top 100', m: measurement(9_000, {}) },
      { label: 'around a user', m: measurement(7_000, {}) },
    ],
    clusterAtRate: { skipped: '--no-cluster' },
    ...more,
  });

  it("says how many times the issue's consolidated layout figures 1, 2 and 4 cost, unless it failed", () => {
    // The layout at 1,500 req/s: its Redis 40 µs, its server 60, machine 200. Its Redis is the one its
    // scenario names (cpuUsPerRequest), not `redis`, which with --mode cluster is the Cluster's (here 7).
    const layoutAtRate = measurement(
      1500,
      { redis: 0.0105, 'redis-single': 0.06, baseline: 0.09, machine: 0.3 },
      { rate: 1500, cpuUsPerRequest: { server: 60, redis: 40 } },
    );
    const figures = issueFigures(inputs({ layoutAtRate }));
    expect(figures.slice(0, 4).map((f) => f.measured)).toEqual([
      "80 µs (2.00× the issue's layout's 40 µs)",
      "120 µs (2.00× the issue's layout's 60 µs)",
      '95 µs',
      "400 µs (bench processes 320 µs; 2.00× the issue's layout's 200 µs)",
    ]);
    // The bars do not move with it.
    expect(figures.slice(0, 4).map((f) => f.met)).toEqual([true, true, true, false]);
    const failed = issueFigures(inputs({ layoutAtRate: { ...layoutAtRate, non2xx: 1 } }));
    expect(failed.slice(0, 4).map((f) => f.measured)).toEqual([
      '80 µs',
      '120 µs',
      '95 µs',
      '400 µs (bench processes 320 µs)',
    ]);
  });

  it('computes every figure of the issue and checks it against its bar', () => {
    const figures = issueFigures(inputs());
    expect(
      figures.map((f) => [f.id, f.value === null ? null : Math.round(f.value * 100) / 100, f.met]),
    ).toEqual([
      ['1', 80, true],
      ['2', 120, true],
      ['3', 95, true],
      ['4', 400, false],
      ['5', 0.35, true],
      ['6', 1.2, true],
      ['7', 1.1, true],
      ['8', 1800, true],
      ['9', 7000, false],
      ['10a', 0.9, true],
      ['10b', 0.7, false],
      ['11', null, null],
    ]);
    expect(figures[3]!.measured).toBe('400 µs (bench processes 320 µs)');
    expect(figures[5]!.measured).toBe(
      "1.20× (3 ÷ 2.5 ms; in autocannon's per-second bursts 1.20×, 12 ÷ 10 ms)",
    );
    expect(figures[6]!.measured).toBe('1.10× (220 ÷ 200 µs)');
    expect(figures[8]!.measured).toBe('6.8 KiB');
    expect(figures[11]!.skipped).toBe('--no-cluster');
  });

  it('prints the table with a count of what was met and why a figure was skipped', () => {
    const text = renderFigures(issueFigures(inputs()));
    const lines = text.split('\n');
    expect(lines[0]).toMatch(/^figure +measured +required +met\?$/);
    expect(lines).toContainEqual(
      expect.stringMatching(/^1\. Redis CPU per event, new users \(at 1500\/s\) +80 µs +≤ 90 µs +yes$/),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/^9\. Redis memory per veteran user +6\.8 KiB +≤ 6\.0 KiB +NO$/),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/^11\. API CPU per event, 3-master Cluster .* +skipped$/),
    );
    expect(lines.slice(-3)).toEqual([
      '8 of 11 measured figures met, 1 not measured',
      'skipped:',
      '  11: --no-cluster',
    ]);
  });

  it('does not count a figure whose scenario had failed requests, and shows ? for a probe it could not read', () => {
    const figures = issueFigures(
      inputs({
        events: measurement(3_500, {}, { non2xx: 5 }),
        eventsAtRate: measurement(rate, { redis: 0.12, 'laurel-api': null }, { rate }),
        veteransAtRate: { skipped: 'no veterans' },
        clusterAtRate: measurement(rate, { 'laurel-api': 0.2 }, { rate }),
      }),
    );
    const byId = new Map(figures.map((f) => [f.id, f]));
    expect(byId.get('5')).toMatchObject({
      met: false,
      measured: '0.35× (3500 ÷ 10000 req/s) (5 failed requests)',
    });
    expect(byId.get('2')).toMatchObject({ value: null, measured: '?', met: null });
    expect(byId.get('7')).toMatchObject({ measured: 'skipped', met: null, skipped: 'no veterans' });
    // The Cluster ratio needs the single-Redis API CPU, which could not be read.
    expect(byId.get('11')).toMatchObject({ value: null, met: null });
  });

  it('compares each scenario of the per-scenario table with the baseline run at the same rate', () => {
    const closed = measurement(10_000, {}, { name: 'baseline' });
    const fixed = measurement(rate, {}, { name: 'baseline @1500/s', rate });
    const lagging = measurement(1_425, {}, { name: 'events @1500/s', rate });
    const events = measurement(3_000, {}, { name: 'events' });
    const paced = measurement(1_500, {}, { name: 'baseline @1500/s paced', rate, paced: true });
    const pacedEvents = measurement(1_200, {}, { name: 'events @1500/s paced', rate, paced: true });
    const rows = renderTable([closed, events, fixed, lagging, paced, pacedEvents], [closed, fixed, paced])
      .split('\n')
      .slice(2);
    expect(rows.map((r) => r.split(/ {2,}/)[5])).toEqual([
      '1.00x',
      '0.30x',
      '1.00x',
      '0.95x',
      '1.00x',
      '0.80x',
    ]);
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

  it("counts a database's own backends as its own, and other databases' backends only in the total", async () => {
    if (!existsSync('/proc')) return;
    const url = inject('services').databaseUrl;
    const database = new URL(url).pathname.slice(1);
    const db = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await db`select 1`;
      const mine = new PostgresCpu([database]);
      const other = new PostgresCpu(['laurel_no_such_database']);
      // The other tracker's window holds this one's (sampled before it and after it): other tests'
      // backends run meanwhile, and what they use between two samples counts in both or in the wider.
      const o0 = await other.sample();
      const m0 = await mine.sample();
      await db`select count(*) from generate_series(1, 3000000)`;
      const m1 = await mine.sample();
      const o1 = await other.sample();
      const busy = m1!.own - m0!.own;
      // The query ran in a backend of `database`: its own share; the other tracker sees it only in all.
      expect(busy).toBeGreaterThan(0);
      expect(o1!.all - o0!.all).toBeGreaterThanOrEqual(busy - 0.05);
      expect(o1!.own - o0!.own).toBeLessThan(busy);
    } finally {
      await db.end();
    }
  });
});

describe('cpuFigures', () => {
  it('computes µs per request from the unrounded cores, not from the 2-decimal value shown', () => {
    // 10 s at 1,500/s; the API used 2.46 s of CPU (0.246 cores), Redis 2.54 s (0.254 cores): both show
    // 0.25 cores, but cost 164 and 169 µs per request.
    const { cpu, cpuUs } = cpuFigures(
      { api: 100, redis: 50, gone: null },
      { api: 102.46, redis: 52.54, gone: 3 },
      10,
      15_000,
    );
    expect(cpu).toEqual({ api: 0.25, redis: 0.25, gone: null });
    expect(cpuUs).toEqual({ api: 164, redis: 169, gone: null });
  });
});

describe('bench line for --verify', () => {
  it('says how many users verify-state checked, and shows the first differences when there are any', () => {
    expect(renderVerify({ checkedUsers: 31521, differences: 0, first: [], seconds: 12.5 })).toBe(
      'verify-state: checked 31521 users in 12.5 s: no differences',
    );
    const d = { userId: 'u1', what: 'points total xp', redis: '15', postgres: '10' };
    expect(renderVerify({ checkedUsers: 2, differences: 3, first: [d], seconds: 0.4 })).toBe(
      'verify-state: checked 2 users in 0.4 s: 3 differences, the first 1:\n' +
        '  {"userId":"u1","what":"points total xp","redis":"15","postgres":"10"}',
    );
  });
});
