import { eq } from 'drizzle-orm';
import { DEFAULT_STREAK_SETTINGS, type StreakSettingsRow } from '../catalog/snapshot';
import { streakSettings } from '../db/schema';
import type { Deps } from '../deps';
import { markStreakEpoch, settleStreakEpoch, unmarkStreakEpoch } from '../services/streak-recompute';
import { unprocessable } from '../errors';
import { z } from '../zod';
import { iso } from './common';

export const StreakSettingsSchema = z
  .object({
    enabled: z.boolean(),
    frequency: z.enum(['daily', 'weekly', 'monthly']),
    mode: z.enum(['all', 'any']),
    conditions: z.array(
      z.object({
        metricId: z.uuid(),
        metricKey: z.string().nullable(),
        metricName: z.string().nullable(),
        threshold: z.number(),
      }),
    ),
    freezesEnabled: z.boolean(),
    maxFreezes: z.number().int(),
    initialFreezes: z.number().int(),
    freezeAutoEarnAmount: z.number().int().nullable(),
    freezeAutoEarnInterval: z.number().int().nullable().describe('Days'),
    updated: z.string(),
  })
  .openapi('StreakSettings');

/**
 * The PATCH body. Only JSON types are checked here (a mismatch is structural → 400); value rules
 * are checked against the resulting settings by `checkSettings` (→ 422).
 */
export const StreakSettingsPatchSchema = z
  .object({
    enabled: z.boolean().nullable().optional(),
    frequency: z.string().nullable().optional(),
    mode: z.string().nullable().optional(),
    conditions: z
      .array(z.object({ metricId: z.string(), threshold: z.number() }))
      .nullable()
      .optional(),
    freezesEnabled: z.boolean().nullable().optional(),
    maxFreezes: z.number().nullable().optional(),
    initialFreezes: z.number().nullable().optional(),
    freezeAutoEarnAmount: z.number().nullable().optional(),
    freezeAutoEarnInterval: z.number().nullable().optional(),
  })
  .openapi('StreakSettingsPatch');

export type StreakSettingsPatch = z.output<typeof StreakSettingsPatchSchema>;

const NULLABLE = new Set(['freezeAutoEarnAmount', 'freezeAutoEarnInterval']);

export function showStreakSettings(deps: Deps, s: StreakSettingsRow) {
  const metrics = deps.catalog.snapshot.metricsById;
  return {
    enabled: s.enabled,
    frequency: s.frequency,
    mode: s.mode,
    conditions: s.conditions.map((c) => ({
      metricId: c.metricId,
      metricKey: metrics.get(c.metricId)?.key ?? null,
      metricName: metrics.get(c.metricId)?.name ?? null,
      threshold: c.threshold,
    })),
    freezesEnabled: s.freezesEnabled,
    maxFreezes: s.maxFreezes,
    initialFreezes: s.initialFreezes,
    freezeAutoEarnAmount: s.freezeAutoEarnAmount,
    freezeAutoEarnInterval: s.freezeAutoEarnInterval,
    updated: iso(s.updated),
  };
}

/** The stored singleton, or the defaults when it was never written. */
export async function getStreakSettings(deps: Deps): Promise<StreakSettingsRow> {
  const [row] = await deps.db.select().from(streakSettings).where(eq(streakSettings.id, 1));
  return row ?? DEFAULT_STREAK_SETTINGS;
}

const isInt = (n: number, min: number, max = Number.MAX_SAFE_INTEGER) =>
  Number.isInteger(n) && n >= min && n <= max;

/** Value rules of admin §12 over the whole resulting settings; the first problem is a 422. */
function checkSettings(deps: Deps, s: StreakSettingsRow): void {
  const fail = (m: string) => {
    throw unprocessable(m);
  };
  if (!['daily', 'weekly', 'monthly'].includes(s.frequency))
    fail('frequency must be daily, weekly or monthly');
  if (!['all', 'any'].includes(s.mode)) fail('mode must be all or any');
  if (s.conditions.length > 20) fail('conditions must have at most 20 items');
  const seen = new Set<string>();
  for (const [i, c] of s.conditions.entries()) {
    if (!deps.catalog.snapshot.metricsById.has(c.metricId))
      fail(`conditions.${i}.metricId: metric does not exist`);
    if (seen.has(c.metricId)) fail(`conditions.${i}.metricId: metric is given twice`);
    seen.add(c.metricId);
    if (!(Number.isFinite(c.threshold) && c.threshold > 0))
      fail(`conditions.${i}.threshold must be greater than 0`);
  }
  if (s.enabled && s.conditions.length === 0) fail('Streaks cannot be enabled without conditions');
  if (!isInt(s.maxFreezes, 1, 100)) fail('maxFreezes must be an integer from 1 to 100');
  if (!isInt(s.initialFreezes, 0, s.maxFreezes))
    fail('initialFreezes must be an integer from 0 to maxFreezes');
  const amount = s.freezeAutoEarnAmount;
  const interval = s.freezeAutoEarnInterval;
  if (amount !== null && !isInt(amount, 1)) fail('freezeAutoEarnAmount must be an integer of at least 1');
  if (interval !== null && !isInt(interval, 1))
    fail('freezeAutoEarnInterval must be an integer of at least 1');
  if ((amount === null) !== (interval === null)) {
    fail('freezeAutoEarnAmount and freezeAutoEarnInterval must both be set or both be null');
  }
}

/**
 * Applies a PATCH as a whole: validated against the resulting settings, then written with the side
 * fields of semantics §4.10 (enabledAt, autoEarnEnabledAt, epoch). Nothing changes on a 422.
 */
export async function updateStreakSettings(
  deps: Deps,
  patch: StreakSettingsPatch,
): Promise<StreakSettingsRow> {
  for (const [field, value] of Object.entries(patch)) {
    if (value === null && !NULLABLE.has(field)) throw unprocessable(`${field} cannot be null`);
  }
  const nowMs = deps.clock.now();
  let marked: number | undefined;
  const committing = deps.db.transaction(async (tx) => {
    await tx
      .insert(streakSettings)
      .values({ ...DEFAULT_STREAK_SETTINGS })
      .onConflictDoNothing({ target: streakSettings.id });
    // Locks the singleton so concurrent PATCHes are validated one after the other.
    const [current] = await tx.select().from(streakSettings).where(eq(streakSettings.id, 1)).for('update');
    const prev = current!;
    const next: StreakSettingsRow = {
      ...prev,
      enabled: patch.enabled ?? prev.enabled,
      frequency: (patch.frequency ?? prev.frequency) as StreakSettingsRow['frequency'],
      mode: (patch.mode ?? prev.mode) as StreakSettingsRow['mode'],
      conditions: patch.conditions
        ? patch.conditions.map((c) => ({ metricId: c.metricId, threshold: c.threshold }))
        : prev.conditions,
      freezesEnabled: patch.freezesEnabled ?? prev.freezesEnabled,
      maxFreezes: patch.maxFreezes ?? prev.maxFreezes,
      initialFreezes: patch.initialFreezes ?? prev.initialFreezes,
      freezeAutoEarnAmount:
        patch.freezeAutoEarnAmount === undefined ? prev.freezeAutoEarnAmount : patch.freezeAutoEarnAmount,
      freezeAutoEarnInterval:
        patch.freezeAutoEarnInterval === undefined
          ? prev.freezeAutoEarnInterval
          : patch.freezeAutoEarnInterval,
      updated: new Date(nowMs),
    };
    checkSettings(deps, next);
    const now = new Date(nowMs);
    const enabling = next.enabled && !prev.enabled;
    const disabling = !next.enabled && prev.enabled;
    if (enabling) next.enabledAt = now;
    // Enabling, disabling and a new frequency each discard or recompute every user's streak.
    if (enabling || disabling || next.frequency !== prev.frequency) next.epoch = prev.epoch + 1;
    const autoEarnOn = (s: StreakSettingsRow) =>
      s.freezeAutoEarnAmount !== null && s.freezeAutoEarnInterval !== null;
    if (autoEarnOn(next) && !autoEarnOn(prev)) next.autoEarnEnabledAt = now;
    // The new epoch's work below is marked pending before the commit, so that a crash before its end
    // leaves it to a scheduler pass (src/services/streak-recompute.ts resumeStreakEpoch).
    if (next.epoch !== prev.epoch) {
      await markStreakEpoch(deps, next.epoch);
      marked = next.epoch;
    }
    const { id: _id, ...values } = next;
    const [written] = await tx.update(streakSettings).set(values).where(eq(streakSettings.id, 1)).returning();
    return { row: written!, prev };
  });
  const result = await committing.catch(async (err) => {
    if (marked !== undefined) await unmarkStreakEpoch(deps, marked);
    throw err;
  });
  await deps.catalog.changed();
  const { row, prev } = result;
  if (row.epoch !== prev.epoch) {
    // Lengths of the previous epoch leave every cross-user index (semantics §4.1, §4.11, §6.4); after
    // a frequency change every streak is recomputed from recorded activity (§4.10). The settings have
    // committed: should this fail, the scheduler's next pass does it again (so the change is answered).
    const recompute = row.enabled && prev.enabled && row.frequency !== prev.frequency;
    await settleStreakEpoch(deps, row.epoch, recompute).catch((err) =>
      deps.logger.error(
        { err, epoch: row.epoch },
        'streak reset or recompute failed; the scheduler resumes it',
      ),
    );
  }
  return row;
}
