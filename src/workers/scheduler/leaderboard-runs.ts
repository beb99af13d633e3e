import { and, asc, eq } from 'drizzle-orm';
import type { LeaderboardRow } from '../../catalog/snapshot';
import { leaderboardRunResults } from '../../db/schema';
import type { Deps } from '../../deps';
import { leaderboardStatus, utcDate } from '../../engine/leaderboard-status';
import { dropFinalisedRun, finalisedAt, finaliseRun, type Ranked } from '../../services/leaderboards';
import { addDays } from '../../engine/periods';
import { type Run, runByIndex, runContaining } from '../../engine/runs';
import {
  anySubscriber,
  leaderboardPayload,
  recordWebhookEvents,
  type WebhookEvent,
  webhookEventId,
  withNames,
} from '../webhook-events';
import { doneMarkers, ms } from './due';

/**
 * Leaderboard runs: leaderboard.started when a run begins (or at activation), finalisation 12 hours
 * after a run's last UTC day — snapshot to Postgres, then leaderboard.finished per group. Boards
 * move from scheduled to active and to finished by the clock (leaderboardStatus); what the job adds
 * is the snapshot and the webhooks. Activity stops counting at finalisation (user-op boardsFor).
 */
export async function leaderboardRuns(deps: Deps): Promise<{ started: number; finalised: number }> {
  const snap = deps.catalog.snapshot;
  const now = deps.clock.now();
  let started = 0;
  let finalised = 0;
  const boards = snap.leaderboards.filter((b) => {
    const s = leaderboardStatus(b, now);
    return (s === 'active' || s === 'finished') && b.activatedAt;
  });
  const markers = await doneMarkers(
    deps,
    boards.flatMap((b) => [`lb|${b.id}|started`, `lb|${b.id}|final`]),
  );
  for (const b of boards) {
    const first = firstRunIndex(b);
    // Runs that have begun (UTC date), from the one in progress at activation.
    const today = utcDate(now);
    let si = Number(markers.get(`lb|${b.id}|started`) ?? first);
    for (;;) {
      const run = runByIndex(b, si);
      if (!run || run.start > today) break;
      await runStarted(deps, b, run);
      started++;
      si++;
      await deps.redis.hset(deps.keys.sched.done, `lb|${b.id}|started`, String(si));
    }
    let fi = Number(markers.get(`lb|${b.id}|final`) ?? first);
    for (;;) {
      const run = runByIndex(b, fi);
      if (!run) break;
      const at = finalisedAt(b, run, now);
      if (at === null) break;
      await finaliseRun(deps, b, run);
      await runFinished(deps, b, run, at);
      await dropFinalisedRun(deps, b, run);
      finalised++;
      fi++;
      await deps.redis.hset(deps.keys.sched.done, `lb|${b.id}|final`, String(fi));
    }
  }
  return { started, finalised };
}

async function runStarted(deps: Deps, b: LeaderboardRow, run: Run): Promise<void> {
  const snap = deps.catalog.snapshot;
  if (!anySubscriber(snap, ['leaderboard.started'])) return;
  const at = Math.max(Date.parse(`${run.start}T00:00:00Z`), ms(b.activatedAt));
  await recordWebhookEvents(
    deps.db,
    [
      {
        id: webhookEventId(`leaderboard.started|${b.id}|${ms(b.activatedAt)}|${run.start}`),
        type: 'leaderboard.started',
        timestamp: at,
        fields: { leaderboard: leaderboardPayload(snap, b, run, 'active', null, []) },
      },
    ],
    deps.clock.now(),
  );
}

async function runFinished(deps: Deps, b: LeaderboardRow, run: Run, at: number): Promise<void> {
  const snap = deps.catalog.snapshot;
  if (!anySubscriber(snap, ['leaderboard.finished'])) return;
  const rows = await deps.db
    .select()
    .from(leaderboardRunResults)
    .where(and(eq(leaderboardRunResults.leaderboardId, b.id), eq(leaderboardRunResults.runStart, run.start)))
    .orderBy(asc(leaderboardRunResults.groupKey), asc(leaderboardRunResults.rank));
  const groups = new Map<string, Ranked[]>();
  if (!b.breakdownAttributes.length) groups.set('', []);
  for (const r of rows) {
    const list = groups.get(r.groupKey) ?? [];
    if (list.length < 10) list.push({ userId: r.userId, rank: r.rank, value: r.value });
    groups.set(r.groupKey, list);
  }
  const status =
    run.end !== null && b.end !== null && run.end >= b.end ? 'finished' : leaderboardStatus(b, at);
  const events: WebhookEvent[] = [];
  for (const [group, top] of groups) {
    events.push({
      id: webhookEventId(`leaderboard.finished|${b.id}|${run.start}|${group}`),
      type: 'leaderboard.finished',
      timestamp: at,
      fields: {
        leaderboard: leaderboardPayload(snap, b, run, status, group, await withNames(deps, top)),
      },
    });
  }
  await recordWebhookEvents(deps.db, events, deps.clock.now());
}

/** The first run that can hold activity: the one in progress a day before activation (local dates lag UTC). */
function firstRunIndex(b: LeaderboardRow): number {
  if (!b.activatedAt) return 0;
  const d = addDays(utcDate(b.activatedAt.getTime()), -1);
  const clamped = d < b.start ? b.start : b.end !== null && d > b.end ? b.end : d;
  return runContaining(b, clamped)?.index ?? 0;
}
