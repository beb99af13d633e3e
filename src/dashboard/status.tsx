import type { FC } from 'hono/jsx';
import { webhookEndpointHealth } from '../admin/webhooks';
import type { Deps } from '../deps';
import { collectState, webhookFailuresLastHour } from '../metrics/collect';
import { historyBacklog } from './data';
import { fmt } from './ui';

// The overview's status: whether history, webhooks and the scheduler keep up, each signal once,
// with what to do where the operator should act (a failing webhook endpoint, history behind).

/** Thresholds of the "behind" state: the same as deploy/prometheus/alerts.yml. */
export const HEALTH_LIMITS = {
  historyLagSeconds: 60,
  outboxBacklog: 10_000,
  schedulerLatenessSeconds: 300,
} as const;

type State = 'ok' | 'behind' | 'unknown';

/** Something the operator should act on, shown with the signal it explains. */
export interface StatusAction {
  id: string;
  text: string;
  href?: string;
}

export interface StatusSignal {
  id: string;
  label: string;
  value: string;
  state: State;
  hint: string;
  action?: StatusAction;
}

export interface Status {
  behind: boolean;
  signals: StatusSignal[];
}

function duration(seconds: number): string {
  if (seconds < 1) return '0 s';
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

/** Failing webhook endpoints (a delivery in retry), read now: the webhook-failures signal's action. */
async function webhooksAction(deps: Deps): Promise<StatusAction | undefined> {
  const health = await webhookEndpointHealth(deps);
  const failing = deps.catalog.snapshot.webhookEndpoints.filter((w) => w.enabled && health.has(w.id));
  if (!failing.length) return undefined;
  const retrying = failing.reduce((n, w) => n + (health.get(w.id)?.retrying ?? 0), 0);
  return {
    id: 'webhooks',
    text: `${failing.length === 1 ? '1 webhook endpoint is' : `${failing.length} webhook endpoints are`} failing (${retrying} ${retrying === 1 ? 'delivery' : 'deliveries'} in retry).`,
    href: '/dashboard/webhooks',
  };
}

/** The outbox's oldest record, read now (not the second-old shared state): the history-lag signal's action. */
async function historyAction(deps: Deps): Promise<StatusAction | undefined> {
  const backlog = await historyBacklog(deps);
  if (backlog.oldestAgeMs <= HEALTH_LIMITS.historyLagSeconds * 1000) return undefined;
  return {
    id: 'history',
    text: `History is ${Math.round(backlog.oldestAgeMs / 1000)} s behind: ${backlog.records} ${backlog.records === 1 ? 'record waits' : 'records wait'} in the Redis outbox. Check that a worker process runs and that Postgres is reachable.`,
  };
}

/**
 * The overview's status signals (the same reads as the scrape-time gauges of /metrics, at most a
 * second old): history lag, outbox backlog, webhook failures in the past hour, scheduler lateness, and
 * whether Redis and Postgres answer. A signal with an action (read now) is behind.
 */
export async function readStatus(deps: Deps): Promise<Status> {
  const [s, failures, webhooks, history] = await Promise.all([
    collectState(deps, 1000),
    webhookFailuresLastHour(deps).catch(() => null),
    webhooksAction(deps),
    historyAction(deps),
  ]);
  const lag = s.outbox ? Math.max(0, ...s.outbox.oldestAge) : null;
  const backlog = s.outbox ? s.outbox.backlog.reduce((a, b) => a + b, 0) : null;
  const lateness = s.scheduler ? Math.max(0, ...s.scheduler.queues.map((q) => q.latenessSeconds)) : null;
  const due = s.scheduler ? s.scheduler.queues.reduce((n, q) => n + q.due, 0) : null;
  const signals: StatusSignal[] = [
    {
      id: 'history-lag',
      label: 'History lag',
      value: lag === null ? '–' : duration(lag),
      state: lag === null ? 'unknown' : lag > HEALTH_LIMITS.historyLagSeconds ? 'behind' : 'ok',
      hint: 'oldest event not yet in the Postgres history',
      action: history,
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
      action: webhooks,
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
  for (const x of signals) if (x.action) x.state = 'behind';
  return { behind: signals.some((x) => x.state !== 'ok'), signals };
}

const STATE_BADGE: Record<State, [string, string]> = {
  ok: ['active', 'ok'],
  behind: ['failed', 'behind'],
  unknown: ['inactive', 'unknown'],
};

/** The status card of the overview: a one-line verdict, then each signal with its state and action. */
export const StatusPanel: FC<{ status: Status }> = ({ status }) => {
  const behind = status.signals.filter((s) => s.state !== 'ok');
  return (
    <div class="card" id="health" data-state={status.behind ? 'behind' : 'ok'}>
      <h2>Health</h2>
      <p
        style={`margin:0 0 12px;padding:8px 12px;border-radius:8px;font-weight:600;${
          status.behind
            ? 'background:var(--danger-soft);color:var(--danger)'
            : 'background:var(--brand-soft);color:var(--brand)'
        }`}
      >
        {status.behind
          ? `Behind: ${behind.map((s) => `${s.label.toLowerCase()} ${s.value}`).join(', ')}`
          : 'All caught up: history, webhooks and the scheduler keep up.'}
      </p>
      <div class="stats">
        {status.signals.map((s) => (
          <div class="stat" data-signal={s.id} data-state={s.state}>
            <div class="l">
              {s.label} <span class={`badge ${STATE_BADGE[s.state][0]}`}>{STATE_BADGE[s.state][1]}</span>
            </div>
            <div class="v">{s.value}</div>
            {s.action ? (
              <div class="h" role="alert" data-warning={s.action.id}>
                {s.action.text} {s.action.href ? <a href={s.action.href}>Show</a> : null}
              </div>
            ) : (
              <div class="h">{s.hint}</div>
            )}
          </div>
        ))}
      </div>
    </div>
  );
};
