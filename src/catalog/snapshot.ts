import type { Db } from '../db/client';
import * as s from '../db/schema';

export type ApiKeyRow = typeof s.apiKeys.$inferSelect;
export type AttributeRow = typeof s.attributes.$inferSelect;
export type MetricRow = typeof s.metrics.$inferSelect;
export type PointsSystemRow = typeof s.pointsSystems.$inferSelect;
export type TriggerRow = typeof s.pointsTriggers.$inferSelect;
export type LevelRow = typeof s.pointsLevels.$inferSelect;
export type BoostRow = typeof s.pointsBoosts.$inferSelect;
export type AchievementRow = typeof s.achievements.$inferSelect;
export type StreakSettingsRow = typeof s.streakSettings.$inferSelect;
export type LeaderboardRow = typeof s.leaderboards.$inferSelect;
export type WebhookEndpointRow = typeof s.webhookEndpoints.$inferSelect;
export type PauseRow = typeof s.streakPauses.$inferSelect;

export interface PointsSystemConfig extends PointsSystemRow {
  /** Non-deleted triggers, creation order. */
  triggers: TriggerRow[];
  /** Non-deleted levels, ascending by threshold. */
  levels: LevelRow[];
  /** Non-deleted boosts, ordered by start then creation. */
  boosts: BoostRow[];
}

export const DEFAULT_STREAK_SETTINGS: StreakSettingsRow = {
  id: 1,
  enabled: false,
  frequency: 'daily',
  mode: 'all',
  conditions: [],
  freezesEnabled: false,
  maxFreezes: 1,
  initialFreezes: 0,
  freezeAutoEarnAmount: null,
  freezeAutoEarnInterval: null,
  enabledAt: null,
  autoEarnEnabledAt: null,
  epoch: 0,
  updated: new Date(0),
};

/**
 * The whole configuration, loaded once from Postgres and held in memory by every process.
 * Request paths read only this; it is reloaded when an admin change is published.
 */
export class Snapshot {
  readonly apiKeysByPrefix = new Map<string, ApiKeyRow>();
  readonly attributesById = new Map<string, AttributeRow>();
  readonly userAttributesByKey = new Map<string, AttributeRow>();
  readonly eventAttributesByKey = new Map<string, AttributeRow>();
  readonly metricsById = new Map<string, MetricRow>();
  readonly metricsByKey = new Map<string, MetricRow>();
  readonly systemsById = new Map<string, PointsSystemConfig>();
  readonly systemsByKey = new Map<string, PointsSystemConfig>();
  /** The boosts of the systems above (non-deleted), by id. */
  readonly boostsById = new Map<string, BoostRow>();
  /** Every trigger ever created, deleted ones included (awards keep showing them as archived). */
  readonly triggersById = new Map<string, TriggerRow>();
  readonly achievementsById = new Map<string, AchievementRow>();
  readonly achievementsByKey = new Map<string, AchievementRow>();
  readonly leaderboardsById = new Map<string, LeaderboardRow>();
  readonly leaderboardsByKey = new Map<string, LeaderboardRow>();
  readonly webhookEndpoints: WebhookEndpointRow[] = [];
  /** Non-deleted metrics / achievements / boards in creation order. */
  readonly metrics: MetricRow[] = [];
  readonly achievements: AchievementRow[] = [];
  readonly leaderboards: LeaderboardRow[] = [];
  readonly systems: PointsSystemConfig[] = [];
  streak: StreakSettingsRow = DEFAULT_STREAK_SETTINGS;
  /** Increases with every load; derived caches key on it. */
  readonly version: number;

  constructor(version: number) {
    this.version = version;
  }
}

const byCreated = <T extends { created: Date; id: string }>(a: T, b: T) =>
  a.created.getTime() - b.created.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Loads every configuration table (a few small queries; run at start-up and on change). */
export async function loadSnapshot(db: Db, version: number): Promise<Snapshot> {
  const [keys, attrs, mets, systems, triggers, levels, boosts, achs, streak, boards, hooks] =
    await Promise.all([
      db.select().from(s.apiKeys),
      db.select().from(s.attributes),
      db.select().from(s.metrics),
      db.select().from(s.pointsSystems),
      db.select().from(s.pointsTriggers),
      db.select().from(s.pointsLevels),
      db.select().from(s.pointsBoosts),
      db.select().from(s.achievements),
      db.select().from(s.streakSettings),
      db.select().from(s.leaderboards),
      db.select().from(s.webhookEndpoints),
    ]);
  const snap = new Snapshot(version);
  for (const k of keys) snap.apiKeysByPrefix.set(k.prefix, k);
  for (const a of attrs.sort(byCreated)) {
    if (a.deletedAt) continue;
    snap.attributesById.set(a.id, a);
    (a.type === 'user' ? snap.userAttributesByKey : snap.eventAttributesByKey).set(a.key, a);
  }
  for (const m of mets.sort(byCreated)) {
    if (m.deletedAt) continue;
    snap.metricsById.set(m.id, m);
    snap.metricsByKey.set(m.key, m);
    snap.metrics.push(m);
  }
  for (const t of triggers) snap.triggersById.set(t.id, t);
  for (const p of systems.sort(byCreated)) {
    if (p.deletedAt) continue;
    const cfg: PointsSystemConfig = {
      ...p,
      triggers: triggers.filter((t) => t.systemId === p.id && !t.deletedAt).sort(byCreated),
      levels: levels.filter((l) => l.systemId === p.id && !l.deletedAt).sort((a, b) => a.points - b.points),
      boosts: boosts
        .filter((b) => b.systemId === p.id && !b.deletedAt)
        .sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : byCreated(a, b))),
    };
    snap.systemsById.set(p.id, cfg);
    for (const b of cfg.boosts) snap.boostsById.set(b.id, b);
    snap.systemsByKey.set(p.key, cfg);
    snap.systems.push(cfg);
  }
  for (const a of achs.sort(byCreated)) {
    if (a.deletedAt) continue;
    snap.achievementsById.set(a.id, a);
    snap.achievementsByKey.set(a.key, a);
    snap.achievements.push(a);
  }
  if (streak[0]) snap.streak = streak[0];
  for (const b of boards.sort(byCreated)) {
    if (b.deletedAt) continue;
    snap.leaderboardsById.set(b.id, b);
    snap.leaderboardsByKey.set(b.key, b);
    snap.leaderboards.push(b);
  }
  for (const h of hooks.sort(byCreated)) if (!h.deletedAt) snap.webhookEndpoints.push(h);
  return snap;
}
