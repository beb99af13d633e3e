import { createHash } from 'node:crypto';
import type { Snapshot } from '../catalog/snapshot';
import type { StoredFilter } from '../db/schema';
import { leaderboardStatus } from '../engine/leaderboard-status';
import type {
  AchievementDocT,
  AttributeDocT,
  BoostDocT,
  ConfigDocument,
  FilterDoc,
  LeaderboardDocT,
  LevelDocT,
  MetricDocT,
  PointsSystemDocT,
  StreakDocT,
  TriggerDocT,
  WebhookDocT,
} from './document';
import { FORMAT } from './document';

/**
 * The configuration as a flat list of items, each with a stable identity built from keys: what the
 * plan compares, what apply changes and what the audit log records. Values are in the document's
 * shape with a fixed field order, so two equal configurations serialise to the same bytes.
 */
export type Resource =
  | 'attribute'
  | 'metric'
  | 'achievement'
  | 'streak settings'
  | 'points system'
  | 'points trigger'
  | 'points level'
  | 'points boost'
  | 'leaderboard'
  | 'webhook endpoint'
  | 'api key';

export interface Item {
  resource: Resource;
  /** Identity within the resource, from keys: `lessons`, `user:plan`, `xp/metric:lessons#1`, `https://…#1`. */
  key: string;
  value: Record<string, unknown>;
  /** The database id (current items only). */
  id?: string;
  /** The owning points system's key (triggers, levels, boosts). */
  system?: string;
}

export const canonAttribute = (a: AttributeDocT) => ({ key: a.key, name: a.name, type: a.type });

export const canonMetric = (m: MetricDocT) => ({
  key: m.key,
  name: m.name,
  unitType: m.unitType,
  units: m.units,
});

const canonFilters = (f: FilterDoc[] | undefined) =>
  (f ?? []).map((x) => ({ attribute: x.attribute, value: x.value }));

export const canonAchievement = (a: AchievementDocT) => ({
  key: a.key,
  name: a.name,
  description: a.description,
  badge: a.badge,
  trigger: a.trigger,
  status: a.status,
  ...(a.trigger === 'metric'
    ? { metric: a.metric, metricValue: a.metricValue, eventAttributes: canonFilters(a.eventAttributes) }
    : {}),
  ...(a.trigger === 'streak' ? { streakLength: a.streakLength } : {}),
  ...(a.trigger === 'achievement' ? { achievements: a.achievements ?? [] } : {}),
  userAttributes: canonFilters(a.userAttributes),
});

export const canonTrigger = (t: TriggerDocT) => ({
  type: t.type,
  points: t.points,
  status: t.status,
  ...(t.type === 'metric'
    ? {
        metric: t.metric,
        metricThreshold: t.metricThreshold,
        eventAttributes: canonFilters(t.eventAttributes),
      }
    : {}),
  ...(t.type === 'achievement' ? { achievement: t.achievement } : {}),
  ...(t.type === 'streak' ? { streakLength: t.streakLength } : {}),
  ...(t.type === 'time'
    ? {
        timeUnit:
          t.timeUnit === undefined
            ? undefined
            : t.timeUnit.startsWith('hour')
              ? ('hours' as const)
              : ('days' as const),
        timeInterval: t.timeInterval,
      }
    : {}),
  userAttributes: canonFilters(t.userAttributes),
});

export const canonLevel = (l: LevelDocT) => ({
  key: l.key,
  name: l.name,
  description: l.description,
  badge: l.badge,
  points: l.points,
});

export const canonBoost = (b: BoostDocT) => ({
  name: b.name,
  start: b.start,
  end: b.end,
  multiplier: b.multiplier,
  rounding: b.rounding,
  userAttributes: canonFilters(b.userAttributes),
});

export const canonSystem = (p: PointsSystemDocT) => ({
  key: p.key,
  name: p.name,
  description: p.description,
  badge: p.badge,
  maxPoints: p.maxPoints,
});

export const canonStreak = (s: StreakDocT) => ({
  enabled: s.enabled,
  frequency: s.frequency,
  mode: s.mode,
  conditions: s.conditions.map((c) => ({ metric: c.metric, threshold: c.threshold })),
  freezesEnabled: s.freezesEnabled,
  maxFreezes: s.maxFreezes,
  initialFreezes: s.initialFreezes,
  freezeAutoEarnAmount: s.freezeAutoEarnAmount,
  freezeAutoEarnInterval: s.freezeAutoEarnInterval,
});

export const canonLeaderboard = (b: LeaderboardDocT) => ({
  key: b.key,
  name: b.name,
  description: b.description,
  status: b.status,
  rankBy: b.rankBy,
  metric: b.metric,
  pointsSystem: b.pointsSystem,
  maxParticipants: b.maxParticipants,
  start: b.start,
  end: b.end,
  breakdownAttributes: [...b.breakdownAttributes],
  runUnit: b.runUnit,
  runInterval: b.runInterval,
});

export const canonWebhook = (w: WebhookDocT) => ({
  url: w.url,
  description: w.description,
  eventTypes: [...w.eventTypes],
  enabled: w.enabled,
});

/** Identity of a trigger: its type and what it references (the fields that never change on an active trigger). */
export const triggerIdentity = (t: { type: string; metric?: string; achievement?: string }) =>
  `${t.type}${t.metric ? `:${t.metric}` : t.achievement ? `:${t.achievement}` : ''}`;

/** Numbers identities that may repeat (`#1`, `#2`, … in order). */
export function ordinal(): (base: string) => string {
  const seen = new Map<string, number>();
  return (base) => {
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    return `${base}#${n}`;
  };
}

const filtersOf = (snap: Snapshot, f: StoredFilter[]): FilterDoc[] =>
  f.map((x) => ({
    attribute: snap.attributesById.get(x.attributeId)?.key ?? x.attributeId,
    value: x.attributeValue,
  }));

const badgeOf = (url: string | null) => (url ? { url } : null);
const metricKey = (snap: Snapshot, id: string | null) =>
  id === null ? undefined : (snap.metricsById.get(id)?.key ?? id);

/** The document's leaderboard status: `scheduled` and `active` are both "activated". */
export const docLeaderboardStatus = (s: string): LeaderboardDocT['status'] =>
  s === 'inactive' ? 'inactive' : s === 'finished' ? 'finished' : 'active';

/** The configuration held by a snapshot, as a document (without its version). */
export function documentOf(snap: Snapshot, nowMs: number): ConfigDocument {
  return {
    format: FORMAT,
    attributes: [...snap.attributesById.values()].map((a) => canonAttribute(a)),
    metrics: snap.metrics.map((m) => canonMetric({ ...m })),
    achievements: snap.achievements.map((a) =>
      canonAchievement({
        key: a.key,
        name: a.name,
        description: a.description,
        badge: badgeOf(a.badgeUrl),
        trigger: a.trigger,
        status: a.status,
        metric: metricKey(snap, a.metricId),
        metricValue: a.metricValue ?? undefined,
        eventAttributes: filtersOf(snap, a.eventAttributes),
        streakLength: a.streakLength ?? undefined,
        achievements: a.achievementIds.map((id) => snap.achievementsById.get(id)?.key ?? id),
        userAttributes: filtersOf(snap, a.userAttributes),
      }),
    ),
    streak: canonStreak({
      ...snap.streak,
      conditions: snap.streak.conditions.map((c) => ({
        metric: metricKey(snap, c.metricId)!,
        threshold: c.threshold,
      })),
    }),
    pointsSystems: snap.systems.map((p) => ({
      ...canonSystem({
        key: p.key,
        name: p.name,
        description: p.description,
        badge: badgeOf(p.badgeUrl),
        maxPoints: p.maxPoints,
      }),
      triggers: p.triggers.map((t) =>
        canonTrigger({
          type: t.type,
          points: t.points,
          status: t.status,
          metric: metricKey(snap, t.metricId),
          metricThreshold: t.metricThreshold ?? undefined,
          eventAttributes: filtersOf(snap, t.eventAttributes),
          achievement:
            t.achievementId === null
              ? undefined
              : (snap.achievementsById.get(t.achievementId)?.key ?? t.achievementId),
          streakLength: t.streakLength ?? undefined,
          timeUnit: t.timeUnit ?? undefined,
          timeInterval: t.timeInterval ?? undefined,
          userAttributes: filtersOf(snap, t.userAttributes),
        }),
      ),
      levels: p.levels.map((l) => canonLevel({ ...l, badge: badgeOf(l.badgeUrl) })),
      // User-specific boosts belong to one user, like streak pauses: operations, not configuration.
      boosts: p.boosts
        .filter((b) => b.userId === null)
        .map((b) => canonBoost({ ...b, userAttributes: filtersOf(snap, b.userAttributes) })),
    })),
    leaderboards: snap.leaderboards.map((b) =>
      canonLeaderboard({
        ...b,
        status: docLeaderboardStatus(leaderboardStatus(b, nowMs)),
        metric: metricKey(snap, b.metricId) ?? null,
        pointsSystem:
          b.pointsSystemId === null
            ? null
            : (snap.systemsById.get(b.pointsSystemId)?.key ?? b.pointsSystemId),
        breakdownAttributes: b.breakdownAttributes.map((id) => snap.attributesById.get(id)?.key ?? id),
      }),
    ),
    webhooks: snap.webhookEndpoints.map((w) =>
      canonWebhook({ ...w, eventTypes: w.eventTypes as WebhookDocT['eventTypes'] }),
    ),
  };
}

/** The version of a configuration: a digest of its document, so any change anywhere changes it. */
export function versionOf(doc: ConfigDocument): string {
  const { version: _v, $schema: _s, ...rest } = doc;
  return createHash('sha256').update(JSON.stringify(rest)).digest('hex').slice(0, 24);
}

/** The exported document with its version. */
export function exportDocument(snap: Snapshot, nowMs: number): ConfigDocument {
  const { format, ...rest } = documentOf(snap, nowMs);
  return { format, version: versionOf({ format, ...rest }), ...rest };
}

/** Flattens a document into items (children of a points system carry the system's key). */
export function itemsOf(doc: ConfigDocument): Item[] {
  const out: Item[] = [];
  for (const a of doc.attributes ?? [])
    out.push({ resource: 'attribute', key: `${a.type}:${a.key}`, value: canonAttribute(a) });
  for (const m of doc.metrics ?? []) out.push({ resource: 'metric', key: m.key, value: canonMetric(m) });
  for (const a of doc.achievements ?? [])
    out.push({ resource: 'achievement', key: a.key, value: canonAchievement(a) });
  if (doc.streak) out.push({ resource: 'streak settings', key: 'streak', value: canonStreak(doc.streak) });
  for (const p of doc.pointsSystems ?? []) {
    out.push({ resource: 'points system', key: p.key, value: canonSystem(p) });
    const t = ordinal();
    for (const x of p.triggers ?? [])
      out.push({
        resource: 'points trigger',
        key: `${p.key}/${t(triggerIdentity(x))}`,
        value: canonTrigger(x),
        system: p.key,
      });
    for (const l of p.levels ?? [])
      out.push({ resource: 'points level', key: `${p.key}/${l.key}`, value: canonLevel(l), system: p.key });
    const b = ordinal();
    for (const x of p.boosts ?? [])
      out.push({
        resource: 'points boost',
        key: `${p.key}/${b(x.name)}`,
        value: canonBoost(x),
        system: p.key,
      });
  }
  for (const b of doc.leaderboards ?? [])
    out.push({ resource: 'leaderboard', key: b.key, value: canonLeaderboard(b) });
  const w = ordinal();
  for (const x of doc.webhooks ?? [])
    out.push({ resource: 'webhook endpoint', key: w(x.url), value: canonWebhook(x) });
  return out;
}

/** The current items with their database ids (same order and identities as `itemsOf(documentOf(snap))`). */
export function currentItems(snap: Snapshot, nowMs: number): Item[] {
  const items = itemsOf(documentOf(snap, nowMs));
  const ids: string[] = [
    ...[...snap.attributesById.values()].map((a) => a.id),
    ...snap.metrics.map((m) => m.id),
    ...snap.achievements.map((a) => a.id),
    'streak',
    ...snap.systems.flatMap((p) => [
      p.id,
      ...p.triggers.map((t) => t.id),
      ...p.levels.map((l) => l.id),
      ...p.boosts.filter((b) => b.userId === null).map((b) => b.id),
    ]),
    ...snap.leaderboards.map((b) => b.id),
    ...snap.webhookEndpoints.map((w) => w.id),
  ];
  return items.map((item, i) => ({ ...item, id: ids[i] }));
}

/** What the audit log compares: the configuration items and the API keys (never their secrets). */
export function auditItems(snap: Snapshot, nowMs: number): Item[] {
  const keys = [...snap.apiKeysByPrefix.values()].map<Item>((k) => ({
    resource: 'api key',
    key: k.prefix,
    value: {
      name: k.name,
      kind: k.kind,
      prefix: k.prefix,
      status: k.status,
      rateLimitPerSecond: k.rateLimitPerSecond,
    },
  }));
  return [...itemsOf(documentOf(snap, nowMs)), ...keys];
}

export const itemId = (i: Pick<Item, 'resource' | 'key'>) => `${i.resource}|${i.key}`;

export interface ItemChange {
  resource: Resource;
  key: string;
  action: 'create' | 'update' | 'delete';
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

/** Item-by-item differences between two lists of items. */
export function diffItems(before: Item[], after: Item[]): ItemChange[] {
  const old = new Map(before.map((i) => [itemId(i), i]));
  const out: ItemChange[] = [];
  const seen = new Set<string>();
  for (const a of after) {
    const id = itemId(a);
    seen.add(id);
    const b = old.get(id);
    if (!b) out.push({ resource: a.resource, key: a.key, action: 'create', before: null, after: a.value });
    else if (JSON.stringify(b.value) !== JSON.stringify(a.value))
      out.push({ resource: a.resource, key: a.key, action: 'update', before: b.value, after: a.value });
  }
  for (const b of before) {
    if (!seen.has(itemId(b)))
      out.push({ resource: b.resource, key: b.key, action: 'delete', before: b.value, after: null });
  }
  return out;
}

/** The fields whose values differ (fields the desired value leaves undefined are not compared). */
export function changedFields(
  current: Record<string, unknown>,
  desired: Record<string, unknown>,
): Record<string, { before: unknown; after: unknown }> {
  const out: Record<string, { before: unknown; after: unknown }> = {};
  for (const f of new Set([...Object.keys(current), ...Object.keys(desired)])) {
    if (!(f in desired) || desired[f] === undefined) continue;
    if (JSON.stringify(current[f]) !== JSON.stringify(desired[f]))
      out[f] = { before: current[f] ?? null, after: desired[f] };
  }
  return out;
}
