// Webhook events (semantics §8): which events a change causes, their payloads, and how they are
// recorded as deliveries. Events of user ops are derived from outbox records inside the history
// writer's transaction, so they commit atomically with the history (the durable outbox, §8.3).
import { createHash, randomUUID } from 'node:crypto';
import { and, eq, isNull, sql } from 'drizzle-orm';
import type { BoostRow, LeaderboardRow, PointsSystemConfig, Snapshot } from '../catalog/snapshot';
import { webhookDeliveries, webhookEndpoints } from '../db/schema';
import type { Deps } from '../deps';
import { boostStatus } from '../engine/boost-status';
import { decodeGroup, type Ranked, userNames } from '../services/leaderboards';
import { crossSlotPipeline, execValues } from '../redis/batch';
import { periodIndex } from '../engine/periods';
import type { Run } from '../engine/runs';
import { achievementResponse } from '../wire/achievements';
import { awardResponse } from '../wire/points';
import { isoMs } from '../wire/common';
import { levelOf, levelResponse, systemBase } from '../engine/levels';
import { streakResponse } from '../wire/streaks';
import { userResponse } from '../wire/users';
import { leaderboardBase } from '../wire/leaderboards';
import type { OutboxEntry, OutboxRecord } from '../redis/user-script';
import type { RecordHook } from './history-writer';

export type WebhookEventType =
  | 'achievement.completed'
  | 'streak.started'
  | 'streak.extended'
  | 'streak.lost'
  | 'streak.freeze_consumed'
  | 'streak.freeze_earned'
  | 'points.changed'
  | 'points.level_changed'
  | 'points.boost_started'
  | 'points.boost_finished'
  | 'leaderboard.started'
  | 'leaderboard.changed'
  | 'leaderboard.finished'
  | 'leaderboard.rank_changed';

export interface WebhookEvent {
  /** Stable id (header X-Webhook-Id and body `id`): derived from what caused the event. */
  id: string;
  type: WebhookEventType;
  /** When the event occurred (ms). */
  timestamp: number;
  fields: Record<string, unknown>;
}

/** A UUID-shaped id derived from the event's natural identity, so a re-derived event keeps its id. */
export function webhookEventId(natural: string): string {
  const h = createHash('sha256').update(natural).digest('hex');
  // Version 8 (custom) UUID layout: stable and recognisable as derived.
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((Number.parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The exact body sent: `id`, `type`, `timestamp` first, then the type's fields. */
export const webhookBody = (e: WebhookEvent) =>
  JSON.stringify({ id: e.id, type: e.type, timestamp: isoMs(e.timestamp), ...e.fields });

type Tx = Parameters<Parameters<Deps['db']['transaction']>[0]>[0];
type Executor = Deps['db'] | Tx;

/**
 * Records events as pending deliveries, one per enabled endpoint subscribed to the type (read in
 * the same transaction). Idempotent: (event id, endpoint) is unique, so re-deriving an event adds nothing.
 */
export async function recordWebhookEvents(
  db: Executor,
  events: WebhookEvent[],
  nowMs: number,
): Promise<number> {
  if (!events.length) return 0;
  const endpoints = await db
    .select({ id: webhookEndpoints.id, eventTypes: webhookEndpoints.eventTypes })
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.enabled, true), isNull(webhookEndpoints.deletedAt)));
  const rows: Array<typeof webhookDeliveries.$inferInsert> = [];
  const now = new Date(nowMs);
  for (const e of events) {
    const body = webhookBody(e);
    const payload = JSON.parse(body) as Record<string, unknown>;
    for (const ep of endpoints) {
      if (!ep.eventTypes.includes(e.type)) continue;
      rows.push({
        id: randomUUID(),
        endpointId: ep.id,
        eventId: e.id,
        type: e.type,
        payload,
        body,
        status: 'pending',
        attempts: 0,
        nextAttemptAt: now,
        created: now,
      });
    }
  }
  let inserted = 0;
  for (let i = 0; i < rows.length; i += 500) {
    const res = await db
      .insert(webhookDeliveries)
      .values(rows.slice(i, i + 500))
      .onConflictDoNothing({ target: [webhookDeliveries.eventId, webhookDeliveries.endpointId] })
      .returning({ id: webhookDeliveries.id });
    inserted += res.length;
  }
  return inserted;
}

/** Whether any enabled endpoint listens to one of these types (skips work nobody would receive). */
export function anySubscriber(snap: Snapshot, types?: WebhookEventType[]): boolean {
  return snap.webhookEndpoints.some(
    (ep) => ep.enabled && (!types || types.some((t) => ep.eventTypes.includes(t))),
  );
}

// ---------------------------------------------------------------- user ops (outbox records)

/** Events caused by one outbox record (semantics §8.4, with the exclusions of §8.5). */
export function eventsOfRecord(
  snap: Snapshot,
  r: OutboxRecord & { granted?: number; slot?: number; streak: { lost?: number; extended?: boolean } },
  profile: Record<string, string>,
): WebhookEvent[] {
  const op = r.op as string;
  // Restores, backdates and streak recomputes fire nothing; idempotent replays write no record at all.
  if (op === 'restore' || op === 'backdate' || op === 'recompute') return [];
  const out: WebhookEvent[] = [];
  const user = () => userResponse(snap, profile);
  const ev = (type: WebhookEventType, key: string, fields: Record<string, unknown>, at = r.now) =>
    out.push({ id: webhookEventId(`${r.id}|${type}|${key}`), type, timestamp: at, fields });

  for (const c of r.completions) {
    const a = snap.achievementsById.get(c.id);
    if (a)
      ev(
        'achievement.completed',
        c.id,
        { user: user(), achievement: achievementResponse(snap, a, c.at) },
        c.at,
      );
  }

  const s = r.streak;
  if (s) {
    const periods = s.periods ?? [];
    const consumed = periods.filter((p) => p.freeze).length;
    if (consumed > 0) ev('streak.freeze_consumed', '', { user: user(), consumed, freezes: s.freezes ?? 0 });
    if ((s.lost ?? 0) > 0) ev('streak.lost', '', { user: user(), length: s.lost });
    if (s.extended && s.length > 0) {
      const freq = r.freq ?? snap.streak.frequency;
      const streak = streakResponse(snap, s as never, periodIndex(freq, r.date));
      ev(s.length === 1 ? 'streak.started' : 'streak.extended', '', { user: user(), streak });
    }
  }
  if (op === 'freeze' && r.slot !== undefined && (r.granted ?? 0) > 0) {
    ev('streak.freeze_earned', String(r.slot), { user: user(), earned: r.granted, freezes: s?.freezes ?? 0 });
  }

  // Levels, system fields, and the awards' triggers and boosts as configured at commit (the record's),
  // not as configured now; records written before they carried them fall back to the current
  // configuration.
  const committed = new Map((r.levels ?? []).map((l) => [l.sys, l]));
  const systems = new Set([...r.awards.map((g) => g.sys), ...committed.keys()]);
  for (const sysId of systems) {
    const sys = snap.systemsById.get(sysId);
    const lv = committed.get(sysId);
    const group = r.awards.find((g) => g.sys === sysId);
    const awards = group?.awards ?? [];
    const base = lv?.sb ?? (sys ? systemBase(sys) : null);
    if (!base) continue;
    const first = awards[0];
    const total = awards.length ? awards[awards.length - 1]!.total : 0;
    const now = lv ? lv.a || null : sys ? levelOf(sys, total) : null;
    const level = now ? levelResponse(now) : null;
    const before = lv ? lv.b || null : sys && first ? levelOf(sys, first.total - first.awarded) : null;
    if (awards.length && (sys || lv?.t)) {
      ev('points.changed', sysId, {
        user: user(),
        points: {
          ...base,
          total,
          added: awards.reduce((n, a) => n + a.awarded, 0),
          level,
          awards: [...awards].reverse().map((a) => awardResponse(snap, sys, a, r.date, lv)),
        },
      });
    }
    if ((before?.id ?? null) !== (now?.id ?? null)) {
      ev('points.level_changed', sysId, {
        user: user(),
        points: { ...base, total },
        previousLevel: before ? levelResponse(before) : null,
        newLevel: level,
      });
    }
  }
  return out;
}

/**
 * History-writer hook: records the webhook events of a batch in the batch's own transaction. The
 * User payload is the stored profile (the record's when it carries one).
 */
export const webhookEventsHook: RecordHook = async (tx, entries: OutboxEntry[], deps: Deps) => {
  const snap = deps.catalog.snapshot;
  if (!anySubscriber(snap)) return;
  const profiles = new Map<string, Record<string, string>>();
  const need = [...new Set(entries.filter((e) => !e.record.profile?.id).map((e) => e.record.user))];
  // One socket write on a single Redis (profiles live in different slots: one command each on Cluster).
  const pipe = crossSlotPipeline(deps.redis);
  for (const id of need) pipe.hgetall(deps.keys.user(id).hash);
  const fetched = need.length ? await execValues(pipe) : [];
  for (const [i, id] of need.entries()) profiles.set(id, (fetched[i] as Record<string, string>) ?? { id });
  const events: WebhookEvent[] = [];
  for (const { record } of entries) {
    const profile = record.profile?.id ? record.profile : (profiles.get(record.user) ?? { id: record.user });
    events.push(...eventsOfRecord(snap, record as never, profile));
  }
  await recordWebhookEvents(tx, events, deps.clock.now());
};

// ---------------------------------------------------------------- boosts and leaderboards

/** `boost` object of points.boost_started / points.boost_finished (semantics §8.4). */
export function boostPayload(sys: PointsSystemConfig, b: BoostRow, status: 'active' | 'finished') {
  return {
    id: b.id,
    name: b.name,
    status,
    userId: b.userId,
    pointsSystemId: sys.id,
    pointsSystemKey: sys.key,
    pointsSystemName: sys.name,
    start: b.start,
    end: b.end,
    multiplier: b.multiplier,
    rounding: b.rounding,
  };
}

export function boostEvent(
  sys: PointsSystemConfig,
  b: BoostRow,
  transition: 'started' | 'finished',
  at: number,
): WebhookEvent {
  const type = transition === 'started' ? 'points.boost_started' : 'points.boost_finished';
  return {
    id: webhookEventId(`${type}|${b.id}`),
    type,
    timestamp: at,
    fields: { boost: boostPayload(sys, b, transition === 'started' ? 'active' : 'finished') },
  };
}

/** Current UTC status of a boost (for webhooks: semantics §5.8). */
export const utcBoostStatus = (b: BoostRow, nowMs: number) =>
  boostStatus(b.start, b.end, new Date(nowMs).toISOString().slice(0, 10));

/** `leaderboard` object of leaderboard.* payloads: the run's dates, status, rankings, group. */
export function leaderboardPayload(
  snap: Snapshot,
  board: LeaderboardRow,
  run: Run,
  status: string,
  group: string | null,
  rankings: Array<Ranked & { userName: string | null }>,
) {
  const out: Record<string, unknown> = {
    ...leaderboardBase(snap, board),
    start: run.start,
    end: run.end,
    status,
    rankings: rankings.map((r) => ({ userId: r.userId, userName: r.userName, rank: r.rank, value: r.value })),
  };
  if (board.breakdownAttributes.length && group !== null) {
    out.breakdownAttributeValues = decodeGroup(snap, board, group);
  }
  return out;
}

/** Display names of ranked users (the application API's `userName`, from the same brief cache). */
export async function withNames(deps: Deps, ranked: Ranked[]) {
  const names = await userNames(
    deps,
    ranked.map((r) => r.userId),
  );
  return ranked.map((r, i) => ({ ...r, userName: names[i] ?? null }));
}

/** Deletes delivery log rows past the retention window (never pending ones). */
export async function pruneDeliveries(deps: Deps): Promise<void> {
  const before = new Date(deps.clock.now() - deps.config.WEBHOOK_RETENTION_DAYS * 86_400_000).toISOString();
  await deps.db.execute(
    sql`delete from ${webhookDeliveries} where ${webhookDeliveries.status} <> 'pending' and ${webhookDeliveries.created} < ${before}`,
  );
}
