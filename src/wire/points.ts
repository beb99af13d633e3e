import type { BoostRow, PointsSystemConfig, Snapshot, TriggerRow } from '../catalog/snapshot';
import { boostStatus } from '../engine/boost-status';
import { type BoostFields, triggerShape } from '../engine/points-shapes';
import type { LuaAward } from '../services/user-op';
import { isoMs, memo } from './common';

// PointsLevel and the system's base fields are in engine/levels.ts, a trigger's object and a boost's
// fields in engine/points-shapes.ts: the user script's wire side channel carries them so that
// webhooks describe the configuration at commit.

/** PointsTrigger; deleted triggers show as archived. */
export function triggerResponse(snap: Snapshot, t: TriggerRow) {
  return memo(snap, `t:${t.id}`, () => triggerShape(snap, t));
}

/** PointsBoost, with the status on `today` (user's local date or UTC date by context). */
export function boostResponse(b: BoostFields, today: string) {
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

/** Trigger objects and boost fields of a system as configured when an op committed (outbox `w`). */
export interface CommittedAwardConfig {
  t?: Record<string, Record<string, unknown>> | undefined;
  bo?: Record<string, BoostFields> | undefined;
}

/**
 * PointsAward from a stored award. Its trigger and boosts are described as `committed` holds them
 * when it has them (webhooks: the configuration at commit), else as configured in `snap`.
 */
export function awardResponse(
  snap: Snapshot,
  sys: PointsSystemConfig | undefined,
  a: LuaAward,
  today: string,
  committed?: CommittedAwardConfig,
) {
  const trigger = committed?.t?.[a.trigger] ?? current(snap, a.trigger);
  const boosts = a.boosts
    .map((id) => committed?.bo?.[id] ?? (sys && snapBoost(snap, sys, id)))
    .filter((b): b is BoostRow | BoostFields => b !== undefined)
    .map((b) => boostResponse(b, today));
  return {
    id: a.id,
    awarded: a.awarded,
    date: isoMs(a.date),
    total: a.total,
    trigger,
    boosts,
  };
}

/** A boost of the system, as the snapshot has it (undefined when deleted or of another system). */
function snapBoost(snap: Snapshot, sys: PointsSystemConfig, id: string): BoostRow | undefined {
  const b = snap.boostsById.get(id);
  return b && b.systemId === sys.id ? b : undefined;
}

function current(snap: Snapshot, triggerId: string) {
  const t = snap.triggersById.get(triggerId);
  return t ? triggerResponse(snap, t) : { id: triggerId, status: 'archived' };
}
