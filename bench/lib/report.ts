import type { Measurement } from './load';

/** The bar the event endpoint is held to (issue: event throughput ≥ 0.5 × baseline, p99 ≤ 25 ms at 50 connections). */
export const TARGETS = { minRatio: 0.5, maxP99Ms: 25, atConnections: 50 } as const;

function pad(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
}

/** A plain-text table: endpoint, req/s, latencies, ratio of req/s to the baseline, CPU cost per request. */
export function renderTable(rows: Measurement[], baseline: Measurement | undefined): string {
  const head = [
    'endpoint',
    'req/s',
    'p50 ms',
    'p90 ms',
    'p99 ms',
    'vs baseline',
    'errors',
    'µs cpu/req server+redis',
  ];
  const body = rows.map((m) => [
    m.name,
    String(m.reqPerSec),
    m.p50.toFixed(1),
    m.p90.toFixed(1),
    m.p99.toFixed(1),
    baseline && m !== baseline
      ? `${(m.reqPerSec / baseline.reqPerSec).toFixed(2)}x`
      : baseline
        ? '1.00x'
        : '-',
    String(m.non2xx + m.errors),
    `${m.cpuUsPerRequest.server ?? '?'} + ${m.cpuUsPerRequest.redis ?? '?'}`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = widths.map((w) => '-'.repeat(w)).join('  ');
  return [pad(head, widths), line, ...body.map((r) => pad(r, widths))].join('\n');
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${Math.round(n)} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** CPU in cores per process during each scenario (the machine column shows how saturated the box was). */
export function renderCpu(rows: Measurement[]): string {
  return rows
    .map(
      (m) =>
        `  ${m.name}: ${Object.entries(m.cpu)
          .map(([k, v]) => `${k} ${v ?? '?'}`)
          .join(', ')}${
          m.cpu.machine && m.reqPerSec
            ? ` (machine ${Math.round((m.cpu.machine * 1e6) / m.reqPerSec)} µs/req)`
            : ''
        }`,
    )
    .join('\n');
}

/** The Redis commands that cost the most time per request of one scenario. */
export function renderRedisCommands(m: Measurement): string {
  return m.redisCommands
    .map(
      (c) =>
        `  ${c.command.padEnd(16)} ${String(c.usecPerRequest).padStart(8)} µs/req  (${c.calls} calls, ${c.usecPerCall} µs each)`,
    )
    .join('\n');
}

/** µs of CPU per request from cores used during a scenario, or null when unknown. */
function usPerRequest(m: Measurement, cores: number | null | undefined): number | null {
  return cores === null || cores === undefined || !m.reqPerSec
    ? null
    : Math.round((cores * 1e6) / m.reqPerSec);
}

/**
 * The throughput bar as a CPU budget: when both scenarios keep the machine busy (or run at the same
 * fixed rate), their throughput ratio is the inverse ratio of the machine CPU each request costs, so
 * an event may cost at most the baseline's machine CPU per request ÷ the target ratio. Prints that
 * budget and where an event's machine CPU went.
 */
export function renderBudget(baseline: Measurement, events: Measurement): string | null {
  const b = usPerRequest(baseline, baseline.cpu.machine);
  const e = usPerRequest(events, events.cpu.machine);
  if (b === null || e === null) return null;
  const parts: Array<[string, number | null]> = [
    ['laurel', usPerRequest(events, events.cpu.laurel)],
    ['redis', usPerRequest(events, events.cpu.redis)],
    ['postgres', usPerRequest(events, events.cpu.postgres)],
    ['load generator', usPerRequest(events, events.cpu.loadgen)],
  ];
  const known = parts.reduce((sum, [, v]) => sum + (v ?? 0), 0);
  return (
    `CPU budget of the ${TARGETS.minRatio}× bar: an event may cost the machine ${Math.round(b / TARGETS.minRatio)} µs ` +
    `(the baseline's ${b} µs ÷ ${TARGETS.minRatio}); it cost ${e} µs: ` +
    `${parts.map(([k, v]) => `${k} ${v ?? '?'}`).join(', ')}, rest (kernel, other processes) ${e - known}`
  );
}
