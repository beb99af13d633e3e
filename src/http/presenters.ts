import type { AchievementRow, BoostRow, PointsSystemConfig, Snapshot, TriggerRow } from '../catalog/snapshot';
import type { StoredFilter } from '../db/schema';
import { boostStatus } from '../engine/boost-status';
import { fromMicros } from '../engine/decimal';
import { periodBounds } from '../engine/periods';
import type { LuaAward, LuaStreak } from '../engine/user-op';

// Response shapes of the application API (application-api.md §7), built from configuration rows.

export const isoMs = (ms: number) => new Date(ms).toISOString();

const memos = new WeakMap<Snapshot, Map<string, unknown>>();

/**
 * A response fragment derived only from configuration, built once per snapshot (the hot path sends
 * the same trigger, achievement and board objects over and over). Callers must not mutate it.
 */
export function memo<T>(snap: Snapshot, key: string, build: () => T): T {
  let m = memos.get(snap);
  if (!m) {
    m = new Map();
    memos.set(snap, m);
  }
  let v = m.get(key) as T | undefined;
  if (v === undefined) {
    v = build();
    m.set(key, v);
  }
  return v;
}

export function attributeFilters(snap: Snapshot, filters: StoredFilter[]) {
  return filters.map((f) => ({
    key: snap.attributesById.get(f.attributeId)?.key ?? '',
    value: f.attributeValue,
  }));
}

/** AchievementResponse (+ achievedAt when given). */
export function achievementResponse(snap: Snapshot, a: AchievementRow, achievedAt?: number | null) {
  const base = memo(snap, `a:${a.id}`, () => achievementBase(snap, a));
  if (achievedAt === undefined) return base;
  return { ...base, achievedAt: achievedAt === null ? null : isoMs(achievedAt) };
}

function achievementBase(snap: Snapshot, a: AchievementRow): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: a.id,
    name: a.name,
    trigger: a.trigger,
    key: a.key,
    description: a.description,
    badgeUrl: a.badgeUrl,
    userAttributes: attributeFilters(snap, a.userAttributes),
  };
  if (a.trigger === 'metric') {
    const m = a.metricId ? snap.metricsById.get(a.metricId) : undefined;
    out.metricId = a.metricId;
    out.metricName = m?.name ?? '';
    out.metricValue = a.metricValue;
    const ef = attributeFilters(snap, a.eventAttributes);
    out.eventAttributes = ef;
    if (ef.length) out.eventAttribute = ef[0];
  }
  if (a.trigger === 'streak') out.streakLength = a.streakLength;
  if (a.trigger === 'achievement') out.achievementIds = a.achievementIds;
  return out;
}

/** PointsTrigger; deleted triggers show as archived. */
export function triggerResponse(snap: Snapshot, t: TriggerRow) {
  return memo(snap, `t:${t.id}`, () => buildTrigger(snap, t));
}

function buildTrigger(snap: Snapshot, t: TriggerRow) {
  const out: Record<string, unknown> = {
    id: t.id,
    type: t.type,
    points: t.points,
    status: t.deletedAt ? 'archived' : t.status,
    created: t.created.toISOString(),
    updated: t.updated.toISOString(),
    userAttributes: attributeFilters(snap, t.userAttributes),
  };
  if (t.type === 'metric') {
    out.metricId = t.metricId;
    out.metricName = (t.metricId && snap.metricsById.get(t.metricId)?.name) ?? '';
    out.metricThreshold = t.metricThreshold;
    const ef = attributeFilters(snap, t.eventAttributes);
    out.eventAttributes = ef;
    if (ef.length) out.eventAttribute = ef[0];
  }
  if (t.type === 'streak') out.streakLengthThreshold = t.streakLength;
  if (t.type === 'achievement') {
    out.achievementId = t.achievementId;
    out.achievementName = (t.achievementId && snap.achievementsById.get(t.achievementId)?.name) ?? '';
  }
  if (t.type === 'time') {
    out.timeUnit = t.timeUnit === 'hours' ? 'hour' : 'day';
    out.timeInterval = t.timeInterval;
  }
  return out;
}

/** PointsBoost, with the status on `today` (user's local date or UTC date by context). */
export function boostResponse(b: BoostRow, today: string) {
  return {
    id: b.id,
    name: b.name,
    status: boostStatus(b.start, b.end, today),
    start: b.start,
    end: b.end,
    multiplier: b.multiplier,
    rounding: b.rounding,
  };
}

export { levelOf, levelResponse, systemBase } from '../engine/levels';

/** PointsAward from a stored award. */
export function awardResponse(snap: Snapshot, sys: PointsSystemConfig, a: LuaAward, today: string) {
  const trigger = snap.triggersById.get(a.trigger);
  const boosts = a.boosts
    .map((id) => sys.boosts.find((b) => b.id === id))
    .filter((b): b is BoostRow => b !== undefined)
    .map((b) => boostResponse(b, today));
  return {
    id: a.id,
    awarded: a.awarded,
    date: isoMs(a.date),
    total: a.total,
    trigger: trigger ? triggerResponse(snap, trigger) : { id: a.trigger, status: 'archived' },
    boosts,
  };
}

/** BaseStreakResponse for a streak state seen on the period `periodIdx` (the user's today). */
export function streakResponse(
  snap: Snapshot,
  s: Pick<LuaStreak, 'length' | 'started' | 'lastMet' | 'freezes'>,
  periodIdx: number,
) {
  const cfg = snap.streak;
  const freq = cfg.frequency;
  const enabled = cfg.enabled && cfg.conditions.length > 0;
  const current = periodBounds(freq, periodIdx);
  const length = enabled ? s.length : 0;
  const out: Record<string, unknown> = {
    length,
    frequency: freq,
    started: length > 0 ? (s.started ?? null) : null,
    periodStart: enabled ? current.start : null,
    periodEnd: enabled ? current.end : null,
    expires: length > 0 && s.lastMet !== undefined ? periodBounds(freq, s.lastMet + 1).end : null,
  };
  if (cfg.freezesEnabled) {
    out.freezes = s.freezes ?? 0;
    out.maxFreezes = cfg.maxFreezes;
  }
  if (cfg.freezeAutoEarnAmount !== null && cfg.freezeAutoEarnInterval !== null) {
    out.freezeAutoEarnInterval = cfg.freezeAutoEarnInterval;
    out.freezeAutoEarnAmount = cfg.freezeAutoEarnAmount;
  }
  return out;
}

export const metricTotal = (micros: number) => fromMicros(micros);

/** User (application-api §7.3) from a stored profile hash: only configured attributes are shown. */
export function userResponse(snap: Snapshot, p: Record<string, string>) {
  const attributes: Record<string, string> = {};
  for (const [field, value] of Object.entries(p)) {
    if (field.startsWith('a:') && snap.userAttributesByKey.has(field.slice(2)))
      attributes[field.slice(2)] = value;
  }
  const tokens = p.dt ? (JSON.parse(p.dt) as unknown) : [];
  return {
    id: p.id ?? '',
    email: p.email ?? null,
    name: p.name ?? null,
    tz: p.tz ?? null,
    deviceTokens: Array.isArray(tokens) ? (tokens as string[]) : [],
    subscribeToEmails: p.sub !== '0',
    attributes,
    control: false,
    created: isoMs(Number(p.created)),
    updated: isoMs(Number(p.updated ?? p.created)),
  };
}

export const NOTIFICATION_TYPES = [
  'achievement_completed',
  'recap',
  'reactivation',
  'streak_reminder',
] as const;

/** NotificationPreferences from a stored profile: the types set so far (`p:<type>` JSON lists). */
export function notificationPreferences(p: Record<string, string>) {
  const out: Record<string, string[]> = {};
  for (const type of NOTIFICATION_TYPES) {
    const raw = p[`p:${type}`];
    if (raw === undefined) continue;
    const list = JSON.parse(raw) as unknown;
    out[type] = Array.isArray(list) ? (list as string[]) : [];
  }
  return out;
}
