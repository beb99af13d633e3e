import type { FC } from 'hono/jsx';
import type { Deps } from '../deps';
import { collectState, webhookFailuresLastHour } from '../metrics/collect';
import { fmt } from './ui';

/** Thresholds of the "behind" state: the same as deploy/prometheus/alerts.yml. */
export const HEALTH_LIMITS = {
  historyLagSeconds: 60,
  outboxBacklog: 10_000,
  schedulerLatenessSeconds: 300,
} as const;

type State = 'ok' | 'behind' | 'unknown';

export interface HealthSignal {
  id: string;
  label: string;
  value: string;
  state: State;
  hint: string;
}

export interface Health {
  behind: boolean;
  signals: HealthSignal[];
}

function duration(seconds: number): string {
  if (seconds < 1) return '0 s';
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

/**
 * The overview's health signals (the same reads as the scrape-time gauges of /metrics, at most a
 * second old): history lag, outbox backlog, webhook failures in the past hour, scheduler lateness, and
 * whether Redis and Postgres answer.
 */
export async function readHealth(deps: Deps): Promise<Health> {
  const [s, failures] = await Promise.all([
    collectState(deps, 1000),
    webhookFailuresLastHour(deps).catch(() => null),
  ]);
  const lag = s.outbox ? Math.max(0, ...s.outbox.oldestAge) : null;
  const backlog = s.outbox ? s.outbox.backlog.reduce((a, b) => a + b, 0) : null;
  const lateness = s.scheduler ? Math.max(0, ...s.scheduler.queues.map((q) => q.latenessSeconds)) : null;
  const due = s.scheduler ? s.scheduler.queues.reduce((n, q) => n + q.due, 0) : null;
  const signals: HealthSignal[] = [
    {
      id: 'history-lag',
      label: 'History lag',
      value: lag === null ? '–' : duration(lag),
      state: lag === null ? 'unknown' : lag > HEALTH_LIMITS.historyLagSeconds ? 'behind' : 'ok',
      hint: 'oldest event not yet in the Postgres history',
    },
    {
      id: 'outbox-backlog',
      label: 'Outbox backlog',
      value: backlog === null ? '–' : fmt(backlog),
      state: backlog === null ? 'unknown' : backlog > HEALTH_LIMITS.outboxBacklog ? 'behind' : 'ok',
      hint: 'records waiting for the history writer',
    },
    {
      id: 'webhook-failures',
      label: 'Webhook failures',
      value: failures === null ? '–' : fmt(failures),
      state: failures === null ? 'unknown' : failures > 0 ? 'behind' : 'ok',
      hint: `failed attempts, last hour${s.webhooks ? `; ${fmt(s.webhooks.pending)} pending` : ''}`,
    },
    {
      id: 'scheduler-lateness',
      label: 'Scheduler lateness',
      value: lateness === null ? '–' : duration(lateness),
      state:
        lateness === null ? 'unknown' : lateness > HEALTH_LIMITS.schedulerLatenessSeconds ? 'behind' : 'ok',
      hint: `oldest due item${due === null ? '' : `; ${fmt(due)} due`}`,
    },
    {
      id: 'backends',
      label: 'Redis / Postgres',
      value: `${s.redisUp ? 'up' : 'down'} / ${s.postgresUp ? 'up' : 'down'}`,
      state: s.redisUp && s.postgresUp ? 'ok' : 'behind',
      hint: 'answered the last probe',
    },
  ];
  return { behind: signals.some((x) => x.state !== 'ok'), signals };
}

const STATE_BADGE: Record<State, [string, string]> = {
  ok: ['active', 'ok'],
  behind: ['failed', 'behind'],
  unknown: ['inactive', 'unknown'],
};

/** The health card of the overview: a one-line verdict, then each signal with its state. */
export const HealthPanel: FC<{ health: Health }> = ({ health }) => {
  const behind = health.signals.filter((s) => s.state !== 'ok');
  return (
    <div class="card" id="health" data-state={health.behind ? 'behind' : 'ok'}>
      <h2>Health</h2>
      <p
        style={`margin:0 0 12px;padding:8px 12px;border-radius:8px;font-weight:600;${
          health.behind
            ? 'background:var(--danger-soft);color:var(--danger)'
            : 'background:var(--brand-soft);color:var(--brand)'
        }`}
      >
        {health.behind
          ? `Behind: ${behind.map((s) => `${s.label.toLowerCase()} ${s.value}`).join(', ')}`
          : 'All caught up: history, webhooks and the scheduler keep up.'}
      </p>
      <div class="stats">
        {health.signals.map((s) => (
          <div class="stat" data-signal={s.id} data-state={s.state}>
            <div class="l">
              {s.label} <span class={`badge ${STATE_BADGE[s.state][0]}`}>{STATE_BADGE[s.state][1]}</span>
            </div>
            <div class="v">{s.value}</div>
            <div class="h">{s.hint}</div>
          </div>
        ))}
      </div>
    </div>
  );
};
