import type { Difference } from '../../src/rebuild/verify';
import type { Measurement } from './load';

/** The bar of issue 16 ("Event path at half the cost, and flat as users age"), one entry per figure. */
export const TARGETS = {
  /** Redis CPU per event of a new user, µs, at the fixed rate. */
  maxRedisUs: 90,
  /** CPU per event of the API process(es), µs, at the fixed rate. */
  maxApiUs: 130,
  /** History writer (worker process) + Postgres CPU per event, µs, until the outbox has drained. */
  maxWriterUs: 100,
  /** CPU per event of the whole machine, µs, at the fixed rate. */
  maxMachineUs: 350,
  /** Events ÷ baseline throughput, closed loop. */
  minRatio: 0.3,
  /** Event p99 ÷ baseline p99, both at the fixed rate, evenly paced. */
  maxP99Ratio: 1.3,
  /** Veteran ÷ new users, Redis + API CPU per event, at the fixed rate. */
  maxVeteranRatio: 1.15,
  /** Redis memory per user after one event, bytes. */
  maxBytesPerNewUser: 2048,
  /** Redis memory per veteran user, bytes. */
  maxBytesPerVeteran: 6144,
  /** Each leaderboard read ÷ baseline throughput, closed loop. */
  minReadRatio: 0.8,
  /** API CPU per event on a 3-master Redis Cluster ÷ on a single Redis, at the fixed rate. */
  maxClusterRatio: 1.2,
} as const;

function pad(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
}

/**
 * A plain-text table: endpoint, req/s, latencies, ratio of req/s to the baseline run at the same rate
 * (closed loop or the same fixed rate; at a fixed rate below 1.00x the server did not keep up), CPU
 * cost per request.
 */
export function renderTable(rows: Measurement[], baselines: Measurement | Measurement[] | undefined): string {
  const list = baselines === undefined ? [] : Array.isArray(baselines) ? baselines : [baselines];
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
  const body = rows.map((m) => {
    const baseline = list.find((b) => b.rate === m.rate && !!b.paced === !!m.paced);
    return [
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
    ];
  });
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
/** Redis time by command per request, or per event of requests of `eventsPerRequest` events. */
export function renderRedisCommands(m: Measurement, eventsPerRequest = 1): string {
  const unit = eventsPerRequest === 1 ? 'req' : 'event';
  return m.redisCommands
    .map(
      (c) =>
        `  ${c.command.padEnd(16)} ${(c.usecPerRequest / eventsPerRequest).toFixed(2).padStart(8)} µs/${unit}  (${c.calls} calls, ${c.usecPerCall} µs each)`,
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

/** CPU per request of issue 16's consolidated layout (bench/baseline-server.ts POST /baseline/layout). */
export function layoutFloor(m: Measurement) {
  return {
    redisUs: m.cpuUsPerRequest.redis,
    serverUs: m.cpuUsPerRequest.server,
    machineUs: cpuOf(m, 'machine'),
    failed: m.non2xx + m.errors,
  };
}

/**
 * Figure 1's bar beside the layout issue 16 set it from, measured in the same run at the same rate:
 * what the issue's minimal commands cost this Redis now, next to the baseline's one script and the event.
 */
export function renderLayoutFloor(
  layout: Measurement,
  baseline: Measurement,
  events: Measurement,
  rate: number,
): string {
  const f = layoutFloor(layout);
  const redis = (m: Measurement) => m.cpuUsPerRequest.redis ?? '?';
  const ratio = div(events.cpuUsPerRequest.redis, f.redisUs);
  return (
    `issue 16's consolidated layout at ${rate} req/s (POST /baseline/layout): Redis ${f.redisUs ?? '?'} µs per request ` +
    `(figure 1's bar ${TARGETS.maxRedisUs}; the baseline's script ${redis(baseline)}, the event ${redis(events)}` +
    `${ratio === null ? '' : `, ${x2(ratio)} the layout's`}), its server ${f.serverUs ?? '?'} µs, machine ${f.machineUs ?? '?'} µs` +
    (f.failed ? `; ${f.failed} requests failed` : '')
  );
}

/** A scenario that did not run, and why. */
export interface Skipped {
  skipped: string;
}

const isSkipped = (x: unknown): x is Skipped =>
  typeof x === 'object' && x !== null && typeof (x as Skipped).skipped === 'string';

/** What the figures of issue 16 are computed from: the measurements of one run. */
export interface FigureInputs {
  /** The fixed rate of the fixed-rate scenarios, requests per second. */
  rate: number;
  connections: number;
  /** API processes the load went to (their CPU is summed). */
  apiProcesses: number;
  /** Closed loop. */
  baseline: Measurement;
  /** Closed loop, new users. */
  events: Measurement;
  baselineAtRate: Measurement;
  /** New users at the fixed rate. */
  eventsAtRate: Measurement;
  /** The baseline and new users at the fixed rate, evenly paced (figure 6). */
  baselinePaced: Measurement;
  eventsPaced: Measurement;
  /** Worker process + Postgres CPU per event of the fixed-rate new-user scenario, µs, until drained. */
  writerUs: number | null;
  veteransAtRate: Measurement | Skipped;
  /** Redis memory per new user after one event (MEMORY USAGE census), bytes. */
  bytesPerNewUser: number;
  bytesPerVeteran: number | Skipped;
  /** Closed loop. */
  reads: Array<{ label: string; m: Measurement }> | Skipped;
  /**
   * Issue 16's consolidated layout at the fixed rate (bench/baseline-server.ts): figures 1, 2 and 4
   * also say how many times its cost the event's is.
   */
  layoutAtRate?: Measurement;
  /** New users at the fixed rate on a 3-master Redis Cluster. */
  clusterAtRate: Measurement | Skipped;
  /** Closed loop, POST /admin/v1/metrics/events with `size` events per request (issue 17). */
  batches?: { m: Measurement; size: number } | Skipped;
}

/** One row of the issue's table. */
export interface Figure {
  /** The figure's number in the issue's list (two reads: 10a, 10b). */
  id: string;
  figure: string;
  /** The number the requirement is checked against (µs, a ratio or bytes); null when not measured. */
  value: number | null;
  measured: string;
  required: string;
  /** null: not measured (skipped, or a probe could not read a process). */
  met: boolean | null;
  /** Why it was not measured. */
  skipped?: string;
}

const cpuOf = (m: Measurement, key: string): number | null => m.cpuUs[key] ?? null;
const sum = (...xs: Array<number | null>): number | null =>
  xs.some((x) => x === null) ? null : xs.reduce<number>((a, b) => a + b!, 0);
const div = (a: number | null, b: number | null): number | null =>
  a === null || b === null || b === 0 ? null : a / b;
const x2 = (r: number) => `${r.toFixed(2)}×`;

/**
 * A row: `value` checked with `ok`; any non-2xx answer or connection error in the measurements it
 * comes from invalidates it (not met, and the measured text says how many).
 */
function row(
  id: string,
  figure: string,
  value: number | null,
  text: (v: number) => string,
  required: string,
  ok: (v: number) => boolean,
  from: Measurement[],
): Figure {
  const failed = from.reduce((n, m) => n + m.non2xx + m.errors, 0);
  if (value === null) return { id, figure, value, measured: '?', required, met: null };
  return {
    id,
    figure,
    value,
    measured: `${text(value)}${failed ? ` (${failed} failed requests)` : ''}`,
    required,
    met: failed === 0 && ok(value),
  };
}

const skippedRow = (id: string, figure: string, required: string, why: string): Figure => ({
  id,
  figure,
  value: null,
  measured: 'skipped',
  required,
  met: null,
  skipped: why,
});

/** Every figure of issue 16 from one run's measurements. */
export function issueFigures(i: FigureInputs): Figure[] {
  const T = TARGETS;
  const atRate = `at ${i.rate}/s`;
  const us = (v: number) => `${Math.round(v)} µs`;
  const api = i.apiProcesses > 1 ? `${i.apiProcesses} API processes` : 'single API process';
  const ev = i.eventsAtRate;
  const out: Figure[] = [];
  // The layout's own Redis (the local one, also when the events' data is on a Cluster: --mode cluster).
  const lay =
    i.layoutAtRate && !i.layoutAtRate.non2xx && !i.layoutAtRate.errors ? layoutFloor(i.layoutAtRate) : null;
  type LayoutPart = 'redisUs' | 'serverUs' | 'machineUs';
  /** "N× the issue's layout's M µs" when the layout was measured without failures, else ''. */
  const vsLayout = (v: number, key: LayoutPart) => {
    const floor = lay?.[key];
    return floor ? `${x2(v / floor)} the issue's layout's ${us(floor)}` : '';
  };
  const withLayout = (v: number, key: LayoutPart) => {
    const text = vsLayout(v, key);
    return text ? `${us(v)} (${text})` : us(v);
  };

  out.push(
    row(
      '1',
      `Redis CPU per event, new users (${atRate})`,
      cpuOf(ev, 'redis'),
      (v) => withLayout(v, 'redisUs'),
      `≤ ${T.maxRedisUs} µs`,
      (v) => v <= T.maxRedisUs,
      [ev],
    ),
    row(
      '2',
      `API process CPU per event (${api}, ${atRate})`,
      cpuOf(ev, 'laurel-api'),
      (v) => withLayout(v, 'serverUs'),
      `≤ ${T.maxApiUs} µs`,
      (v) => v <= T.maxApiUs,
      [ev],
    ),
    row(
      '3',
      'History writer + Postgres CPU per event (until drained)',
      i.writerUs,
      us,
      `≤ ${T.maxWriterUs} µs`,
      (v) => v <= T.maxWriterUs,
      [ev],
    ),
  );

  const named = sum(cpuOf(ev, 'laurel'), cpuOf(ev, 'redis'), cpuOf(ev, 'postgres-own'), cpuOf(ev, 'loadgen'));
  out.push(
    row(
      '4',
      `Machine CPU per event (${atRate})`,
      cpuOf(ev, 'machine'),
      (v) => {
        const parts = [named === null ? '' : `bench processes ${us(named)}`, vsLayout(v, 'machineUs')];
        const text = parts.filter(Boolean).join('; ');
        return text ? `${us(v)} (${text})` : us(v);
      },
      `≤ ${T.maxMachineUs} µs`,
      (v) => v <= T.maxMachineUs,
      [ev],
    ),
    row(
      '5',
      `Events ÷ baseline throughput (closed loop, ${i.connections} connections)`,
      div(i.events.reqPerSec, i.baseline.reqPerSec),
      (v) => `${x2(v)} (${i.events.reqPerSec} ÷ ${i.baseline.reqPerSec} req/s)`,
      `≥ ${T.minRatio}×`,
      (v) => v >= T.minRatio,
      [i.events, i.baseline],
    ),
    row(
      '6',
      `Event p99 ÷ baseline p99 (${atRate}, evenly paced)`,
      div(i.eventsPaced.p99, i.baselinePaced.p99),
      (v) => {
        const bursts = div(ev.p99, i.baselineAtRate.p99);
        return (
          `${x2(v)} (${i.eventsPaced.p99} ÷ ${i.baselinePaced.p99} ms; ` +
          `in autocannon's per-second bursts ${bursts === null ? '?' : x2(bursts)}, ${ev.p99} ÷ ${i.baselineAtRate.p99} ms)`
        );
      },
      `≤ ${T.maxP99Ratio}×`,
      (v) => v <= T.maxP99Ratio,
      [i.eventsPaced, i.baselinePaced],
    ),
  );

  const vetName = `Veteran ÷ new users, Redis + API CPU per event (${atRate})`;
  if (isSkipped(i.veteransAtRate)) {
    out.push(skippedRow('7', vetName, `≤ ${T.maxVeteranRatio}×`, i.veteransAtRate.skipped));
  } else {
    const vet = sum(cpuOf(i.veteransAtRate, 'redis'), cpuOf(i.veteransAtRate, 'laurel-api'));
    const fresh = sum(cpuOf(ev, 'redis'), cpuOf(ev, 'laurel-api'));
    out.push(
      row(
        '7',
        vetName,
        div(vet, fresh),
        (v) => `${x2(v)} (${vet} ÷ ${fresh} µs)`,
        `≤ ${T.maxVeteranRatio}×`,
        (v) => v <= T.maxVeteranRatio,
        [i.veteransAtRate, ev],
      ),
    );
  }

  out.push(
    row(
      '8',
      'Redis memory per user after one event',
      i.bytesPerNewUser,
      formatBytes,
      `≤ ${formatBytes(T.maxBytesPerNewUser)}`,
      (v) => v <= T.maxBytesPerNewUser,
      [],
    ),
  );
  const vetMem = 'Redis memory per veteran user';
  if (isSkipped(i.bytesPerVeteran)) {
    out.push(skippedRow('9', vetMem, `≤ ${formatBytes(T.maxBytesPerVeteran)}`, i.bytesPerVeteran.skipped));
  } else {
    out.push(
      row(
        '9',
        vetMem,
        i.bytesPerVeteran,
        formatBytes,
        `≤ ${formatBytes(T.maxBytesPerVeteran)}`,
        (v) => v <= T.maxBytesPerVeteran,
        [],
      ),
    );
  }

  const readsRequired = `≥ ${T.minReadRatio}×`;
  if (isSkipped(i.reads)) {
    out.push(skippedRow('10', 'Leaderboard reads ÷ baseline (closed loop)', readsRequired, i.reads.skipped));
  } else {
    for (const [n, r] of i.reads.entries()) {
      out.push(
        row(
          `10${String.fromCharCode(97 + n)}`,
          `Leaderboard ${r.label} ÷ baseline (closed loop)`,
          div(r.m.reqPerSec, i.baseline.reqPerSec),
          (v) => `${x2(v)} (${r.m.reqPerSec} ÷ ${i.baseline.reqPerSec} req/s)`,
          readsRequired,
          (v) => v >= T.minReadRatio,
          [r.m, i.baseline],
        ),
      );
    }
  }

  const clusterName = `API CPU per event, 3-master Cluster ÷ single Redis (${atRate})`;
  if (isSkipped(i.clusterAtRate)) {
    out.push(skippedRow('11', clusterName, `≤ ${T.maxClusterRatio}×`, i.clusterAtRate.skipped));
  } else {
    const c = cpuOf(i.clusterAtRate, 'laurel-api');
    const single = cpuOf(ev, 'laurel-api');
    out.push(
      row(
        '11',
        clusterName,
        div(c, single),
        (v) => `${x2(v)} (${c} ÷ ${single} µs)`,
        `≤ ${T.maxClusterRatio}×`,
        (v) => v <= T.maxClusterRatio,
        [i.clusterAtRate, ev],
      ),
    );
  }
  if (i.batches !== undefined) {
    const name = 'Batch events/s ÷ single events/s (closed loop)';
    if (isSkipped(i.batches)) out.push(skippedRow('12', name, '≥ 2×', i.batches.skipped));
    else {
      const { m, size } = i.batches;
      const perEvent = (x: Measurement, n: number) => {
        const v = cpuOf(x, 'machine');
        return v === null ? '?' : `${Math.round(v / n)} µs`;
      };
      out.push(
        row(
          '12',
          `${name}, batches of ${size}`,
          div(m.reqPerSec * size, i.events.reqPerSec),
          (v) =>
            `${x2(v)} (${Math.round(m.reqPerSec * size)} ÷ ${i.events.reqPerSec} events/s; machine CPU per event ` +
            `${perEvent(m, size)} vs ${perEvent(i.events, 1)})`,
          '≥ 2×',
          (v) => v >= 2,
          [m, i.events],
        ),
      );
    }
  }
  return out;
}

/** The issue's table: figure | measured | required | met?, numbered, and a count of what was met. */
export function renderFigures(figures: Figure[]): string {
  const head = ['figure', 'measured', 'required', 'met?'];
  const body = figures.map((f) => [
    `${f.id}. ${f.figure}`,
    f.measured,
    f.required,
    f.skipped !== undefined ? 'skipped' : f.met === null ? '?' : f.met ? 'yes' : 'NO',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = widths.map((w) => '-'.repeat(w)).join('  ');
  const text = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  const measured = figures.filter((f) => f.met !== null);
  const met = measured.filter((f) => f.met).length;
  const skipped = figures
    .map((f) => (f.skipped !== undefined ? `  ${f.id}: ${f.skipped}` : null))
    .filter((s): s is string => s !== null);
  return [
    text(head),
    line,
    ...body.map(text),
    `${met} of ${measured.length} measured figures met${figures.length > measured.length ? `, ${figures.length - measured.length} not measured` : ''}`,
    ...(skipped.length ? ['skipped:', ...skipped] : []),
  ].join('\n');
}

/** `--verify`: verify-state over every user the run wrote (src/rebuild/verify.ts). */
export interface Verified {
  checkedUsers: number;
  /** How many differences it found (each a user and what differs). */
  differences: number;
  /** The first ten, as verify-state reports them. */
  first: Difference[];
  seconds: number;
}

/** One line, and the first differences under it when there are any. */
export function renderVerify(v: Verified): string {
  const head = `verify-state: checked ${v.checkedUsers} users in ${v.seconds} s: `;
  if (v.differences === 0) return `${head}no differences`;
  return [
    `${head}${v.differences} differences, the first ${v.first.length}:`,
    ...v.first.map((d) => `  ${JSON.stringify(d)}`),
  ].join('\n');
}
