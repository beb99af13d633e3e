// The streak of one user as of now, for reads (semantics §0 lazy correctness, §4.4, §4.5). The user
// script only resolves ended periods when the user acts, so a read projects the same rollover as
// rollover() in lua/lib/streak.lua over the stored hash, without writing anything.
import { dayIndex, type Frequency, periodBounds } from './periods';

export interface StreakViewSettings {
  /** Streaks enabled with at least one condition. */
  enabled: boolean;
  frequency: Frequency;
  freezesEnabled: boolean;
  /** Settings epoch: a stored state of another epoch was discarded (semantics §4.10). */
  epoch: number;
}

export interface StreakPeriodRecord {
  length: number;
  usedFreeze: boolean;
  usedPause: boolean;
}

export interface StreakView {
  length: number;
  /** Local date the current streak started; undefined when length is 0. */
  started: string | undefined;
  /** Index of the latest met-or-bridged period. */
  lastMet: number | undefined;
  freezes: number;
  /** When the latest met period was met (ms); undefined when length is 0. */
  metAt: number | undefined;
  /** Length lost by a break detected by the projection (0 if none). */
  lost: number;
  /** Stored and projected period records of the current epoch, by period index. */
  periods: Map<number, StreakPeriodRecord>;
}

const int = (s: string | undefined, def: number) => (s === undefined || s === '' ? def : Number(s));

/**
 * The stored period history of settings epoch `epoch`: the hash's `hist` field (the newest 100 met or
 * bridged periods of the hash's epoch, "<idx>:<length>[f|p]" joined by ',', see lua/lib/streak.lua),
 * plus the per-period fields `h:<epoch>:<idx>` of the older layout that the next write folds in.
 */
export function storedPeriods(raw: Record<string, string>, epoch: number): Map<number, StreakPeriodRecord> {
  const out = new Map<number, StreakPeriodRecord>();
  const prefix = `h:${epoch}:`;
  for (const [field, value] of Object.entries(raw)) {
    if (!field.startsWith(prefix)) continue;
    const [length, freeze, pause] = value.split('|');
    out.set(Number(field.slice(prefix.length)), {
      length: Number(length),
      usedFreeze: freeze === '1',
      usedPause: pause === '1',
    });
  }
  if (raw.hist && Number(raw.epoch) === epoch) {
    for (const [idx, record] of parseHistory(raw.hist)) out.set(idx, record);
  }
  return out;
}

/** Entries of a `hist` field, oldest first. */
export function parseHistory(hist: string): Array<[number, StreakPeriodRecord]> {
  const out: Array<[number, StreakPeriodRecord]> = [];
  for (const entry of hist.split(',')) {
    const m = /^(-?\d+):(\d+)([fp]?)$/.exec(entry);
    if (!m) continue;
    out.push([Number(m[1]), { length: Number(m[2]), usedFreeze: m[3] === 'f', usedPause: m[3] === 'p' }]);
  }
  return out;
}

/** The `hist` field for period records of one epoch (any order): the newest 100 by period, as the script keeps them. */
export function formatHistory(records: Array<[number, StreakPeriodRecord]>): string {
  return [...records]
    .sort((a, b) => a[0] - b[0])
    .slice(-HISTORY_MAX)
    .map(([idx, r]) => `${idx}:${r.length}${r.usedFreeze ? 'f' : r.usedPause ? 'p' : ''}`)
    .join(',');
}

/** Periods of history kept in Redis (lua/lib/streak.lua HIST_MAX); older ones are in streak_periods. */
export const HISTORY_MAX = 100;

/** Pauses of the stored hash: [firstDayIndex, lastDayIndex] pairs (cjson may write [] as {}). */
export function storedPauses(raw: Record<string, string>): Array<[number, number]> {
  if (!raw.pauses) return [];
  const parsed = JSON.parse(raw.pauses) as unknown;
  return Array.isArray(parsed) ? (parsed as Array<[number, number]>) : [];
}

/**
 * Projects the stored streak hash onto the current period `periodIdx`: every ended, unmet period
 * after the latest met one is bridged by a pause, else by a freeze, else breaks the streak — the
 * rollover the next user op will apply. O(missed periods).
 */
export function viewStreak(
  raw: Record<string, string>,
  settings: StreakViewSettings,
  periodIdx: number,
): StreakView {
  const freezes = int(raw.freezes, 0);
  const sameEpoch = raw.epoch !== undefined && Number(raw.epoch) === settings.epoch;
  if (!settings.enabled || !sameEpoch) {
    return {
      length: 0,
      started: undefined,
      lastMet: undefined,
      freezes,
      metAt: undefined,
      lost: 0,
      periods: settings.enabled ? storedPeriods(raw, settings.epoch) : new Map(),
    };
  }
  const periods = storedPeriods(raw, settings.epoch);
  const view: StreakView = {
    length: int(raw.length, 0),
    started: raw.started ? raw.started : undefined,
    lastMet: raw.lastMet === undefined || raw.lastMet === '' ? undefined : Number(raw.lastMet),
    freezes,
    metAt: raw.metAt ? Number(raw.metAt) : undefined,
    lost: 0,
    periods,
  };
  if (view.length > 0 && view.lastMet !== undefined) {
    const pauses = storedPauses(raw);
    for (let p = view.lastMet + 1; p < periodIdx && view.length > 0; p++) {
      const bounds = periodBounds(settings.frequency, p);
      const first = dayIndex(bounds.start);
      const last = dayIndex(bounds.end);
      if (pauses.some(([from, to]) => from <= last && to >= first)) {
        view.lastMet = p;
        periods.set(p, { length: view.length, usedFreeze: false, usedPause: true });
      } else if (settings.freezesEnabled && view.freezes >= 1) {
        view.freezes -= 1;
        view.lastMet = p;
        periods.set(p, { length: view.length, usedFreeze: true, usedPause: false });
      } else {
        view.lost = view.length;
        view.length = 0;
        view.started = undefined;
      }
    }
  }
  if (view.length <= 0) {
    view.length = 0;
    view.started = undefined;
    view.metAt = undefined;
  }
  return view;
}

export interface StreakHistoryItem {
  periodStart: string;
  periodEnd: string;
  length: number;
  usedFreeze?: boolean;
  usedPause: boolean;
}

/**
 * The last `count` periods, oldest → newest, ending with the current one (StreakResponse.streakHistory):
 * the length at the end of each period, the current length for the current period, 0 where nothing
 * was recorded (before the user existed, after a break).
 */
export function streakHistory(
  view: StreakView,
  settings: StreakViewSettings,
  periodIdx: number,
  count: number,
): StreakHistoryItem[] {
  if (!settings.enabled) return [];
  const out: StreakHistoryItem[] = [];
  for (let idx = periodIdx - count + 1; idx <= periodIdx; idx++) {
    const bounds = periodBounds(settings.frequency, idx);
    const rec = view.periods.get(idx);
    const item: StreakHistoryItem = {
      periodStart: bounds.start,
      periodEnd: bounds.end,
      length: idx === periodIdx ? view.length : (rec?.length ?? 0),
      usedPause: rec?.usedPause ?? false,
    };
    if (settings.freezesEnabled) item.usedFreeze = rec?.usedFreeze ?? false;
    out.push(item);
  }
  return out;
}
