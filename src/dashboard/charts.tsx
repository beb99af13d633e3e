import { formatInTimeZone } from 'date-fns-tz';
import type { FC } from 'hono/jsx';
import { fmt } from './ui';

// Inline SVG charts: small, static, readable without JavaScript.

/** Vertical bars with a label under each (histograms, events per minute). */
export const BarChart: FC<{
  bars: Array<{ label: string; value: number; title?: string }>;
  height?: number;
  unit?: string;
  /** Drawing width: about the card's width in pixels, so text keeps its size. */
  width?: number;
}> = (p) => {
  const W = p.width ?? 640;
  const h = p.height ?? 180;
  const top = 14;
  const bottom = 30;
  const left = 36;
  const max = Math.max(1, ...p.bars.map((b) => b.value));
  const n = Math.max(1, p.bars.length);
  const slot = (W - left - 8) / n;
  const bw = Math.max(2, slot * 0.72);
  const y = (v: number) => top + (h - top - bottom) * (1 - v / max);
  const ticks = [0, max / 2, max].map((v) => Math.round(v));
  const every = Math.ceil(n / 12);
  return (
    <svg class="chart" viewBox={`0 0 ${W} ${h}`} role="img" aria-label={p.unit ?? 'bar chart'}>
      {ticks.map((t) => (
        <g>
          <line x1={left} x2={W - 4} y1={y(t)} y2={y(t)} stroke="#eef0f3" />
          <text x={left - 6} y={y(t) + 4} text-anchor="end">
            {fmt(t)}
          </text>
        </g>
      ))}
      {p.bars.map((b, i) => {
        const x = left + i * slot + (slot - bw) / 2;
        return (
          <g>
            <rect
              x={x}
              y={y(b.value)}
              width={bw}
              height={Math.max(0, h - bottom - y(b.value))}
              rx="2"
              fill="#2f6f4f"
            >
              <title>{b.title ?? `${b.label}: ${fmt(b.value)}`}</title>
            </rect>
            {i % every === 0 ? (
              <text x={x + bw / 2} y={h - bottom + 15} text-anchor="middle">
                {b.label}
              </text>
            ) : null}
          </g>
        );
      })}
    </svg>
  );
};

/** A step line over time (points total, rank). `invert` puts small values on top (rank 1 is best). */
export const LineChart: FC<{
  points: Array<{ t: number; v: number }>;
  invert?: boolean;
  label: string;
  height?: number;
  width?: number;
}> = (p) => {
  const W = p.width ?? 640;
  const h = p.height ?? 200;
  const top = 24;
  const bottom = 28;
  const left = 48;
  const right = 12;
  if (p.points.length === 0) return null;
  const ts = p.points.map((x) => x.t);
  const vs = p.points.map((x) => x.v);
  let t0 = Math.min(...ts);
  let t1 = Math.max(...ts);
  if (t0 === t1) {
    t0 -= 3_600_000;
    t1 += 3_600_000;
  }
  let v0 = Math.min(0, ...vs);
  let v1 = Math.max(...vs);
  if (p.invert) {
    v0 = 1;
    v1 = Math.max(2, v1);
  }
  if (v0 === v1) v1 = v0 + 1;
  const x = (t: number) => left + ((W - left - right) * (t - t0)) / (t1 - t0);
  const yRaw = (v: number) => (h - top - bottom) * ((v - v0) / (v1 - v0));
  const y = (v: number) => (p.invert ? top + yRaw(v) : h - bottom - yRaw(v));
  let d = '';
  p.points.forEach((pt, i) => {
    if (i === 0) d += `M${x(pt.t).toFixed(1)},${y(pt.v).toFixed(1)}`;
    else d += ` H${x(pt.t).toFixed(1)} V${y(pt.v).toFixed(1)}`;
  });
  const last = p.points.at(-1)!;
  d += ` H${(W - right).toFixed(1)}`;
  const tickVals = p.invert ? [v0, Math.round((v0 + v1) / 2), v1] : [v0, (v0 + v1) / 2, v1];
  const day = (t: number) => formatInTimeZone(t, 'UTC', 'MM-dd HH:mm');
  return (
    <svg class="chart" viewBox={`0 0 ${W} ${h}`} role="img" aria-label={p.label}>
      {tickVals.map((v) => (
        <g>
          <line x1={left} x2={W - right} y1={y(v)} y2={y(v)} stroke="#eef0f3" />
          <text x={left - 6} y={y(v) + 4} text-anchor="end">
            {p.invert ? `#${Math.round(v)}` : fmt(Math.round(v))}
          </text>
        </g>
      ))}
      <path d={d} fill="none" stroke="#2f6f4f" stroke-width="2.2" />
      {p.points.map((pt) => (
        <circle cx={x(pt.t)} cy={y(pt.v)} r="3.2" fill="#fff" stroke="#2f6f4f" stroke-width="1.6">
          <title>{`${day(pt.t)} UTC: ${p.invert ? '#' : ''}${fmt(pt.v)}`}</title>
        </circle>
      ))}
      <text x={left} y={h - 8}>
        {day(t0)}
      </text>
      <text x={W - right} y={h - 8} text-anchor="end">
        {day(t1)}
      </text>
      <text
        x={x(last.t) - 6}
        y={y(last.v) - 8}
        text-anchor="end"
        style="fill:#1c2330;font-weight:600;font-size:12px"
      >
        {`${p.invert ? '#' : ''}${fmt(last.v)}`}
      </text>
    </svg>
  );
};

export interface StreakCell {
  label: string;
  state: 'met' | 'freeze' | 'pause' | 'missed' | 'future';
  length: number;
}

const CELL_COLOURS: Record<StreakCell['state'], string> = {
  met: '#2f6f4f',
  freeze: '#60a5fa',
  pause: '#c4b5fd',
  missed: '#eef0f3',
  future: '#ffffff',
};

/** One square per period, oldest left: met, frozen, paused or missed. */
export const StreakStrip: FC<{ cells: StreakCell[] }> = ({ cells }) => {
  const W = 480;
  const size = 19;
  const gap = 4;
  const perRow = Math.floor((W + gap) / (size + gap));
  const rows = Math.max(1, Math.ceil(cells.length / perRow));
  const h = rows * (size + gap) + 26;
  return (
    <div>
      <svg class="chart" viewBox={`0 0 ${W} ${h}`} role="img" aria-label="streak history">
        {cells.map((c, i) => (
          <rect
            x={(i % perRow) * (size + gap)}
            y={Math.floor(i / perRow) * (size + gap)}
            width={size}
            height={size}
            rx="3"
            fill={CELL_COLOURS[c.state]}
            stroke={c.state === 'future' || c.state === 'missed' ? '#dde1e6' : 'none'}
          >
            <title>{`${c.label}: ${c.state}${c.length ? ` (length ${c.length})` : ''}`}</title>
          </rect>
        ))}
        {cells.length ? (
          <text x="0" y={h - 6}>
            {cells[0]!.label}
          </text>
        ) : null}
        {cells.length > 1 ? (
          <text x={(Math.min(cells.length, perRow) - 1) * (size + gap) + size} y={h - 6} text-anchor="end">
            {cells.at(-1)!.label}
          </text>
        ) : null}
      </svg>
      <div class="legend">
        {(['met', 'freeze', 'pause', 'missed'] as const).map((s) => (
          <span style="margin-right:14px">
            <svg width="10" height="10" style="margin-right:4px" aria-hidden="true">
              <rect width="10" height="10" rx="2" fill={CELL_COLOURS[s]} stroke="#dde1e6" />
            </svg>
            {s === 'freeze' ? 'frozen' : s === 'pause' ? 'paused' : s}
          </span>
        ))}
      </div>
    </div>
  );
};
