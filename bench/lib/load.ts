import autocannon from 'autocannon';
import { pacedRun, quantile } from './paced';
import { type CommandCost, type CommandStats, commandCosts } from './redis-stats';

export interface LoadSettings {
  connections: number;
  duration: number;
  warmup: number;
  /** Requests per second over all connections; 0 = unlimited. */
  rate: number;
  /**
   * At a fixed rate: spread the requests evenly over each second (an open loop, pacedRun) rather
   * than autocannon's `overallRate`, which sends each connection's share of a second back to back.
   */
  paced?: boolean;
}

/** One scenario: where to send, and how each request is built (called once per request). */
export interface Scenario {
  name: string;
  /** Several origins share the connections round-robin (the hook for multi-instance modes). */
  origins: string[];
  method: 'GET' | 'POST';
  /** The key in the CPU probe of the process that serves it (its CPU per request is reported). */
  server: string;
  /** The key in the CPU probe of the Redis it uses; `redis` unless told. */
  redis?: string;
  headers?: Record<string, string>;
  /** Path and body of the next request. */
  next: () => { path: string; body?: string };
}

export interface Measurement {
  name: string;
  url: string;
  /** The fixed rate it ran at (requests per second over all connections); 0 = closed loop. */
  rate: number;
  reqPerSec: number;
  p50: number;
  p90: number;
  p99: number;
  maxMs: number;
  requests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /** Requests answered 2xx during the warm-up (not measured, but their side effects are real). */
  warmupRequests: number;
  /** CPU used while measuring, in cores (1.0 = one core fully busy). */
  cpu: Record<string, number | null>;
  /** CPU time per request, in µs, of every process (or the machine) the probe reports. */
  cpuUs: Record<string, number | null>;
  /** CPU time per request, in µs, of the serving process and of Redis. */
  cpuUsPerRequest: { server: number | null; redis: number | null };
  /** Where Redis spent its time during the measured seconds (server-wide, so other clients show up too). */
  redisCommands: CommandCost[];
  /** A fixed rate spread evenly over each second (pacedRun), not autocannon's bursts. */
  paced?: boolean;
  /** A paced run whose generator fell more than 20 ms behind its schedule: by how much. */
  generatorBehindMs?: number;
}

export interface Probes {
  /** Cumulative CPU seconds per process (or the machine); null where unknown. */
  cpu: () => Promise<Record<string, number | null>>;
  commands: () => Promise<CommandStats>;
}

/**
 * A fixed-duration run after a warm-up that is not counted. Latencies are in ms. autocannon's, in a
 * closed loop (`rate` 0) or at `overallRate`; with `paced`, an open loop of requests spread evenly
 * over each second (pacedRun).
 */
export async function measure(
  scenario: Scenario,
  settings: LoadSettings,
  probes: Probes,
): Promise<Measurement> {
  return settings.rate > 0 && settings.paced
    ? measurePaced(scenario, settings, probes)
    : measureAutocannon(scenario, settings, probes);
}

const headersOf = (scenario: Scenario) => ({ 'content-type': 'application/json', ...scenario.headers });

async function measureAutocannon(
  scenario: Scenario,
  settings: LoadSettings,
  probes: Probes,
): Promise<Measurement> {
  const first = scenario.next();
  const base = {
    url: scenario.origins.map((o) => `${o}${first.path}`),
    connections: settings.connections,
    method: scenario.method,
    headers: headersOf(scenario),
    timeout: 10,
    ...(settings.rate > 0 ? { overallRate: settings.rate } : {}),
    requests: [
      {
        setupRequest: (req: { path?: string; body?: string | Buffer }) => {
          const r = scenario.next();
          req.path = r.path;
          if (r.body !== undefined) req.body = r.body;
          return req;
        },
      },
    ],
  };
  let warmupRequests = 0;
  if (settings.warmup > 0) {
    const warm = await autocannon({ ...base, duration: settings.warmup });
    warmupRequests = Math.max(0, warm.requests.total - warm.non2xx);
  }
  const [cpuBefore, commandsBefore] = await Promise.all([probes.cpu(), probes.commands()]);
  const started = process.hrtime.bigint();
  const res = await autocannon({ ...base, duration: settings.duration, title: scenario.name });
  const wall = Number(process.hrtime.bigint() - started) / 1e9;
  const [cpuAfter, commandsAfter] = await Promise.all([probes.cpu(), probes.commands()]);

  const costs = costsOf(
    scenario,
    [cpuBefore, cpuAfter],
    [commandsBefore, commandsAfter],
    wall,
    res.requests.total,
  );
  const statusCodes: Record<string, number> = {};
  for (const [code, s] of Object.entries(res.statusCodeStats ?? {})) statusCodes[code] = Number(s.count);
  return {
    name: scenario.name,
    url: `${scenario.method} ${scenario.origins.join(',')}${first.path}`,
    rate: settings.rate,
    reqPerSec: round(res.requests.average, 0),
    p50: res.latency.p50,
    p90: res.latency.p90,
    p99: res.latency.p99,
    maxMs: res.latency.max,
    requests: res.requests.total,
    non2xx: res.non2xx,
    errors: res.errors,
    timeouts: res.timeouts,
    statusCodes,
    warmupRequests,
    ...costs,
  };
}

async function measurePaced(
  scenario: Scenario,
  settings: LoadSettings,
  probes: Probes,
): Promise<Measurement> {
  let firstPath: string | undefined;
  const next = () => {
    const r = scenario.next();
    firstPath ??= r.path;
    return r;
  };
  const run = (seconds: number) =>
    pacedRun({
      origins: scenario.origins,
      method: scenario.method,
      headers: headersOf(scenario),
      next,
      rate: settings.rate,
      seconds,
      connections: settings.connections,
      timeoutMs: 10_000,
    });
  let warmupRequests = 0;
  if (settings.warmup > 0) {
    const warm = await run(settings.warmup);
    warmupRequests = Math.max(0, warm.requests - warm.non2xx - warm.errors - warm.timeouts);
  }
  const [cpuBefore, commandsBefore] = await Promise.all([probes.cpu(), probes.commands()]);
  const res = await run(settings.duration);
  const [cpuAfter, commandsAfter] = await Promise.all([probes.cpu(), probes.commands()]);
  const costs = costsOf(
    scenario,
    [cpuBefore, cpuAfter],
    [commandsBefore, commandsAfter],
    res.wall,
    res.requests,
  );
  const q = (x: number) => quantile(res.latencies, x);
  return {
    name: scenario.name,
    url: `${scenario.method} ${scenario.origins.join(',')}${firstPath ?? ''}`,
    rate: settings.rate,
    paced: true,
    reqPerSec: round(res.requests / res.wall, 0),
    p50: q(0.5),
    p90: q(0.9),
    p99: q(0.99),
    maxMs: q(1),
    requests: res.requests,
    non2xx: res.non2xx,
    errors: res.errors,
    timeouts: res.timeouts,
    statusCodes: res.statusCodes,
    warmupRequests,
    ...costs,
    ...(res.maxBehindMs > 20 ? { generatorBehindMs: Math.round(res.maxBehindMs) } : {}),
  };
}

/** A measurement's CPU and Redis figures, from the probes read before and after its measured seconds. */
function costsOf(
  scenario: Scenario,
  [cpuBefore, cpuAfter]: Array<Record<string, number | null>>,
  [commandsBefore, commandsAfter]: CommandStats[],
  wall: number,
  requests: number,
): Pick<Measurement, 'cpu' | 'cpuUs' | 'cpuUsPerRequest' | 'redisCommands'> {
  const { cpu, cpuUs } = cpuFigures(cpuBefore!, cpuAfter!, wall, requests);
  return {
    cpu,
    cpuUs,
    cpuUsPerRequest: {
      server: cpuUs[scenario.server] ?? null,
      redis: cpuUs[scenario.redis ?? 'redis'] ?? null,
    },
    redisCommands: commandCosts(commandsBefore!, commandsAfter!, requests),
  };
}

/**
 * Cores used per process over a measurement (shown to 2 decimals) and CPU µs per request, computed
 * from the unrounded value: 0.01 core is 6.7 µs per request at 1,500/s, so rounding first printed the
 * same figure for unrelated processes.
 */
export function cpuFigures(
  before: Record<string, number | null>,
  after: Record<string, number | null>,
  wall: number,
  requests: number,
): { cpu: Record<string, number | null>; cpuUs: Record<string, number | null> } {
  const cpu: Record<string, number | null> = {};
  const cpuUs: Record<string, number | null> = {};
  for (const [k, end] of Object.entries(after)) {
    const start = before[k];
    const cores = end === null || start === null || start === undefined ? null : (end - start) / wall;
    cpu[k] = cores === null ? null : round(cores, 2);
    cpuUs[k] = perRequest(cores, requests, wall);
  }
  return { cpu, cpuUs };
}

function perRequest(cores: number | null | undefined, requests: number, wall: number): number | null {
  return cores === null || cores === undefined || !requests
    ? null
    : Math.round((cores * wall * 1e6) / requests);
}

export function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
