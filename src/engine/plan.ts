import type { AchievementRow, PointsSystemConfig, Snapshot, TriggerRow } from '../catalog/snapshot';
import type { StoredFilter } from '../db/schema';
import type { LuaFilter, PlanWire, WireLevel } from '../redis/user-script';
import { toMicros } from './decimal';
import { levelResponse, systemBase } from './levels';
import { boostFields, triggerShape } from './points-shapes';

export interface PlanSystem {
  id: string;
  /** maxPoints, or -1 for no cap. */
  max: number;
  uc: Array<{ id: string; p: number; uf: LuaFilter[] }>;
  mt: Array<{ id: string; p: number; thr: number; ep: number; ef: LuaFilter[]; uf: LuaFilter[] }>;
  st: Array<{ id: string; p: number; len: number; uf: LuaFilter[] }>;
  at: Array<{ id: string; p: number; ach: string; uf: LuaFilter[] }>;
  /** Time triggers (granted by the scheduler). */
  tt: Array<{ id: string; p: number; uf: LuaFilter[] }>;
  /** Level thresholds, ascending (the script answers levels as positions in this list). */
  lv?: number[];
}

export type PlanKind = 'event' | 'complete' | 'upsert' | 'grant' | 'backdate' | 'freeze' | 'restore';

/** The configuration one user op needs, in the shape lua/applyUserOp.lua reads. */
export interface Plan {
  metricId?: string;
  api?: { id: string; locked: boolean; uf: LuaFilter[] };
  achievements: {
    metric: Array<{ id: string; thr: number; active: boolean; ef: LuaFilter[]; uf: LuaFilter[] }>;
    streak: Array<{ id: string; len: number; uf: LuaFilter[] }>;
    composite: Array<{ id: string; pre: string[]; uf: LuaFilter[] }>;
  };
  streak: {
    on: boolean;
    epoch: number;
    freq: 'daily' | 'weekly' | 'monthly';
    mode: 'all' | 'any';
    conds: Array<{ m: string; thr: number }>;
    freezesOn: boolean;
    maxF: number;
    initF: number;
  };
  systems: PlanSystem[];
  breakdownKeys: string[];
}

export interface CompiledPlan {
  plan: Plan;
  /** The plan as JSON, encoded once and reused for every call. */
  json: string;
  /** Per system of the plan, its levels as of this snapshot (plan.systems[i].lv's objects). */
  levels: Map<string, WireLevel[]>;
  /**
   * The wire objects (PlanWire) of the plan's systems, levels and triggers as JSON: ARGV[3], copied to
   * the outbox as is (an op that may apply boosts sends opWire()'s instead).
   */
  wire: string;
  /** `wire` before encoding. */
  wireObjects: PlanWire;
}

function luaFilters(snap: Snapshot, filters: StoredFilter[]): LuaFilter[] {
  return filters.map((f) => [
    snap.attributesById.get(f.attributeId)?.key ?? `#${f.attributeId}`,
    f.attributeValue,
  ]);
}

const activeTriggers = (sys: PointsSystemConfig, type: TriggerRow['type']) =>
  sys.triggers.filter((t) => t.type === type && t.status === 'active');

function compile(snap: Snapshot, kind: PlanKind, ref?: string): CompiledPlan {
  const active = snap.achievements.filter((a) => a.status === 'active');
  const s = snap.streak;
  const streakOn = s.enabled && s.conditions.length > 0;
  const plan: Plan = {
    achievements: { metric: [], streak: [], composite: [] },
    streak: {
      on: streakOn,
      epoch: s.epoch,
      freq: s.frequency,
      mode: s.mode,
      conds: s.conditions.map((c) => ({ m: c.metricId, thr: toMicros(c.threshold) })),
      freezesOn: s.freezesEnabled,
      maxF: s.maxFreezes,
      initF: s.initialFreezes,
    },
    systems: [],
    breakdownKeys: [],
  };
  if (kind === 'event') {
    plan.metricId = ref!;
    // Filtered metric achievements count matching events whatever their status, so that their
    // filtered total covers the user's whole history when they become active.
    plan.achievements.metric = snap.achievements
      .filter(
        (a) =>
          a.trigger === 'metric' && a.metricId === ref && (a.status === 'active' || a.eventAttributes.length),
      )
      .map((a) => ({
        id: a.id,
        thr: toMicros(a.metricValue ?? 0),
        active: a.status === 'active',
        ef: luaFilters(snap, a.eventAttributes),
        uf: luaFilters(snap, a.userAttributes),
      }));
  }
  if (kind === 'complete' || kind === 'backdate') {
    const a = snap.achievementsById.get(ref!) as AchievementRow;
    plan.api = { id: a.id, locked: a.status === 'locked', uf: luaFilters(snap, a.userAttributes) };
  }
  if (kind === 'event' || kind === 'complete' || kind === 'backdate') {
    plan.achievements.streak = active
      .filter((a) => a.trigger === 'streak')
      .map((a) => ({ id: a.id, len: a.streakLength ?? 1, uf: luaFilters(snap, a.userAttributes) }));
    plan.achievements.composite = active
      .filter((a) => a.trigger === 'achievement')
      .map((a) => ({ id: a.id, pre: a.achievementIds, uf: luaFilters(snap, a.userAttributes) }));
  }
  for (const sys of snap.systems) {
    const ps: PlanSystem = {
      id: sys.id,
      max: sys.maxPoints ?? -1,
      uc: activeTriggers(sys, 'user_creation').map((t) => ({
        id: t.id,
        p: t.points,
        uf: luaFilters(snap, t.userAttributes),
      })),
      mt:
        kind === 'event'
          ? activeTriggers(sys, 'metric')
              .filter((t) => t.metricId === ref)
              .map((t) => ({
                id: t.id,
                p: t.points,
                thr: toMicros(t.metricThreshold ?? 1),
                ep: t.activatedAt?.getTime() ?? 0,
                ef: luaFilters(snap, t.eventAttributes),
                uf: luaFilters(snap, t.userAttributes),
              }))
          : [],
      st:
        kind === 'event'
          ? activeTriggers(sys, 'streak').map((t) => ({
              id: t.id,
              p: t.points,
              len: t.streakLength ?? 1,
              uf: luaFilters(snap, t.userAttributes),
            }))
          : [],
      at:
        kind !== 'event' && kind !== 'complete' && kind !== 'backdate'
          ? []
          : activeTriggers(sys, 'achievement').map((t) => ({
              id: t.id,
              p: t.points,
              ach: t.achievementId ?? '',
              uf: luaFilters(snap, t.userAttributes),
            })),
      tt:
        kind === 'grant'
          ? activeTriggers(sys, 'time').map((t) => ({
              id: t.id,
              p: t.points,
              uf: luaFilters(snap, t.userAttributes),
            }))
          : [],
    };
    if (kind === 'freeze' || kind === 'restore') ps.uc = [];
    if (sys.levels.length) ps.lv = sys.levels.map((l) => l.points);
    // A user created by the op starts at the level of total 0 if there is one (semantics §5.11).
    const createsUsers = kind === 'event' || kind === 'complete' || kind === 'upsert';
    const levelAtZero = createsUsers && sys.levels.some((l) => l.points <= 0);
    if (ps.uc.length || ps.mt.length || ps.st.length || ps.at.length || ps.tt.length || levelAtZero)
      plan.systems.push(ps);
  }
  const breakdown = new Set<string>();
  for (const b of snap.leaderboards) {
    for (const id of b.breakdownAttributes) {
      const key = snap.attributesById.get(id)?.key;
      if (key) breakdown.add(key);
    }
  }
  plan.breakdownKeys = [...breakdown];
  const levels = new Map<string, WireLevel[]>();
  const wire: PlanWire = {};
  for (const ps of plan.systems) {
    const sys = snap.systemsById.get(ps.id)!;
    const lv = sys.levels.map(levelResponse);
    levels.set(ps.id, lv);
    // The triggers that can award in this plan, as webhooks show them (semantics §0: fixed at commit).
    const t: Record<string, Record<string, unknown>> = {};
    for (const list of [ps.uc, ps.mt, ps.st, ps.at, ps.tt])
      for (const { id } of list) {
        const row = snap.triggersById.get(id);
        if (row) t[id] = triggerShape(snap, row);
      }
    wire[ps.id] = { sb: systemBase(sys), lv, ...(Object.keys(t).length ? { t } : {}) };
  }
  return {
    plan,
    json: JSON.stringify(plan),
    levels,
    wire: JSON.stringify(wire),
    wireObjects: wire,
  };
}

const opWires = new WeakMap<CompiledPlan, Map<string, string>>();

/**
 * The wire JSON of an op (ARGV[3]) that may apply `boosts` (system id -> the boosts active for it):
 * the plan's, plus those boosts' fields, so that webhooks show the boosts as configured at commit.
 * The plan's own string when there are none; cached per plan and boost set.
 */
export function opWire(
  snap: Snapshot,
  compiled: CompiledPlan,
  boosts: Record<string, ReadonlyArray<{ id: string }>>,
): string {
  const systems = Object.keys(boosts).filter((id) => boosts[id]!.length > 0 && compiled.wireObjects[id]);
  if (systems.length === 0) return compiled.wire;
  const key = systems.map((id) => `${id}:${boosts[id]!.map((b) => b.id).join(',')}`).join(';');
  let perPlan = opWires.get(compiled);
  if (!perPlan) {
    perPlan = new Map();
    opWires.set(compiled, perPlan);
  }
  let out = perPlan.get(key);
  if (out === undefined) {
    const wire: PlanWire = { ...compiled.wireObjects };
    for (const id of systems) {
      const bo: NonNullable<PlanWire[string]['bo']> = {};
      for (const { id: boostId } of boosts[id]!) {
        const b = snap.boostsById.get(boostId);
        if (b && b.systemId === id) bo[boostId] = boostFields(b);
      }
      wire[id] = { ...wire[id]!, bo };
    }
    out = JSON.stringify(wire);
    // User-specific boosts make many sets: keep the cache bounded.
    if (perPlan.size >= 256) perPlan.clear();
    perPlan.set(key, out);
  }
  return out;
}

const cache = new WeakMap<Snapshot, Map<string, CompiledPlan>>();

/** The plan of an op, compiled once per configuration snapshot. O(1) after the first call. */
export function planFor(snap: Snapshot, kind: PlanKind, ref?: string): CompiledPlan {
  let perSnap = cache.get(snap);
  if (!perSnap) {
    perSnap = new Map();
    cache.set(snap, perSnap);
  }
  const cacheKey = `${kind}:${ref ?? ''}`;
  let compiled = perSnap.get(cacheKey);
  if (!compiled) {
    compiled = compile(snap, kind, ref);
    perSnap.set(cacheKey, compiled);
  }
  return compiled;
}
