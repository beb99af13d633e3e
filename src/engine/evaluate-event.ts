/**
 * The event op of lua/applyUserOp.lua evaluated in TypeScript, from the user's state as Redis holds it:
 * the first stage of moving the evaluation out of Redis (bench/HISTORY.md, "What figure 1 would take").
 * With EVALUATE_EVENTS on (off by default), src/services/evaluated-op.ts evaluates single events
 * with it and commits their writes through lua/commitUserOp.lua. It reads what the script reads (the user hash, the period
 * history, the idempotency buckets) and answers what the script would write, in the script's formats,
 * and the record it would answer; test/lua/evaluate-event.property.test.ts runs both on the same ops
 * and compares every field. Each step below names the Lua it mirrors; a change to one must follow the
 * other.
 *
 * Covered: an event (op 'event', not quiet) of a new or existing user whose stored zone is the one the
 * caller assumed, without a change of zone, and whose idempotency key (if any) is not remembered.
 * Anything else answers `{ kind: 'script' }`: the caller leaves the op to the user script, which also
 * answers what this does not (a replay, an error TZ with the zone to recompute in).
 */
import { profileAttributes, type RecentAward, STREAK_PACKS, splitUserHash } from '../redis/user-hash';
import type { LuaFilter, UserScriptContext, UserScriptInput } from '../redis/user-script';
import { matchesFilters as matches } from './filters';
import { levelOf } from './levels';
import { dayIndex, type Frequency, periodBounds } from './periods';
import type { Plan, PlanSystem } from './plan';
import { formatHistory, HISTORY_MAX, storedPauses } from './streak-view';
import { crossedMultiples, floorDiv } from './trigger-counters';

/** What the script reads for an event before it writes. */
export interface EventState {
  /** The user hash (HGETALL): empty for a user who does not exist. */
  hash: Record<string, string>;
  /** The period history (GET of the user's history key), null when absent. */
  hist: string | null;
  /** Whether the idempotency key is remembered in the current or the previous bucket (lib/idempotency.lua). */
  idemRemembered: boolean;
}

/** What the script would write for the op, in the order it writes, and what it would answer. */
export interface EventWrites {
  kind: 'writes';
  /** Fields removed from the user hash before anything else (a profile field back to its default). */
  premoved: string[] | null;
  /** The user was created by this op: ZADD NX of the shard's user index. */
  created: boolean;
  /** HSET of the idempotency bucket (field, value), when the event has a key. */
  idem: { field: string; value: string } | null;
  /** The streak's writes (streakCommit): the earlier version's fields to remove, and the history. */
  streakLegacy: string[] | null;
  streakStaleHist: boolean;
  /** The new period history; false to delete it; null to leave it. */
  hist: string | false | null;
  /** Per system with awards: its index in plan.systems (0-based) and the list entries, in push order. */
  awardLists: Array<{ system: number; entries: string[] }>;
  /** The user hash's fields after the op that differ from what was read (one HSET: later wins). */
  puts: Map<string, string>;
  /** Per board of ctx.boards (0-based index) the user's new value on its run. */
  boardValues: Map<number, number>;
  /** The record, without the moves the script makes itself (moves, boards[].ap). */
  record: Record<string, unknown>;
  /** The outbox entry's field x without ts (Redis TIME at commit). */
  extra: Record<string, unknown>;
  /** The outbox entry carries the wire objects (field w). */
  levelNews: boolean;
}

export type EventEvaluation =
  | EventWrites
  | { kind: 'error'; err: 'OVERFLOW' | 'POINTS_OVERFLOW' | 'NO_USER' }
  | { kind: 'script'; reason: string };

// ------------------------------------------------------------------ lib/numbers.lua

const MAX_SAFE = 9_007_199_254_000_000;
const MAX_POINTS = 9_007_199_254;

/** fmt: an integer's digits ('%d'; '%.0f' for anything else). */
function fmt(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) <= 9_007_199_254_740_992) return String(n);
  return n.toFixed(0);
}

/** num: a stored number, or `dflt` when absent. */
function num(s: string | undefined, dflt: number): number;
function num(s: string | undefined, dflt: null): number | null;
function num(s: string | undefined, dflt: number | null): number | null {
  if (s === undefined) return dflt;
  const n = Number(s);
  if (s.trim() === '' || Number.isNaN(n)) throw new Error(`not a number: ${s}`);
  return n;
}

// ------------------------------------------------------------------ lib/streak.lua

interface Streak {
  own: boolean;
  freezes: number;
  longest: number;
  longestAt: number;
  pauses: Array<[number, number]>;
  freezeInit: string | undefined;
  raw: Record<string, string>;
  length: number;
  lastMet: number | null;
  started: string | null;
  curIdx: number | null;
  curMet: boolean;
  lengthAt: number;
  metAt: number;
  fresh: boolean;
  staleHist: boolean;
}

/**
 * loadStreak, from the user hash's streak part as src/redis/user-hash.ts splits it (the packed fields
 * spread over their names, as lib/streak.lua's streakUnpack spreads them) with the packs themselves
 * (`_`, `~`, which streakPut compares against) and whether the hash also held the scalar fields as
 * fields of their own (an earlier version's: `own`).
 */
function loadStreak(h: Record<string, string>, epoch: number, own: boolean): Streak {
  const same = num(h.epoch, -1) === epoch;
  // One literal (no spread of a shared part: V8 gives spread objects slower maps).
  return {
    own,
    freezes: num(h.freezes, 0),
    longest: num(h.longest, 0),
    longestAt: num(h.longestAt, 0),
    pauses: storedPauses(h),
    freezeInit: h.freezeInit,
    raw: h,
    length: same ? num(h.length, 0) : 0,
    lastMet: same ? num(h.lastMet, null) : null,
    started: same && h.started !== undefined && h.started !== '' ? h.started : null,
    curIdx: same ? num(h.curIdx, null) : null,
    curMet: same && h.curMet === '1',
    lengthAt: same ? num(h.lengthAt, 0) : 0,
    metAt: same ? num(h.metAt, 0) : 0,
    fresh: !same,
    // A state of another epoch: its period history is discarded with it.
    staleHist: !same && h.epoch !== undefined,
  };
}

type Resolved = [idx: number, length: number, freeze: boolean, pause: boolean];

function rollover(freq: string, st: Streak, cur: number, freezesOn: boolean): [Resolved[], number] {
  const resolved: Resolved[] = [];
  let lost = 0;
  if (st.length <= 0 || st.lastMet === null) return [resolved, lost];
  let p = st.lastMet + 1;
  while (p < cur && st.length > 0) {
    let paused = false;
    if (st.pauses.length > 0) {
      // The period's first and last day indexes (lib/calendar.lua periodDays).
      const b = periodBounds(freq as Frequency, p);
      const [first, last] = [dayIndex(b.start), dayIndex(b.end)];
      paused = st.pauses.some((pz) => pz[0] <= last && pz[1] >= first);
    }
    if (paused) {
      st.lastMet = p;
      resolved.push([p, st.length, false, true]);
    } else if (freezesOn && st.freezes >= 1) {
      st.freezes -= 1;
      st.lastMet = p;
      resolved.push([p, st.length, true, false]);
    } else {
      lost = st.length;
      st.length = 0;
      st.started = null;
    }
    p += 1;
  }
  return [resolved, lost];
}

/** histAppend: the history with the op's periods after it, the newest HISTORY_MAX kept. */
function histAppend(
  hist: string,
  periods: Array<{ idx: number; length: number; freeze?: true; pause?: true }>,
): string {
  const add = formatHistory(
    periods.map((p) => [
      p.idx,
      { length: p.length, usedFreeze: p.freeze === true, usedPause: p.pause === true },
    ]),
  );
  const all = hist === '' ? add : `${hist},${add}`;
  const entries = all.split(',');
  return entries.length > HISTORY_MAX ? entries.slice(-HISTORY_MAX).join(',') : all;
}

/** lib/streak.lua STREAK_AT and STREAK_OWN: each scalar field's pack, and the fields of their own an earlier version wrote. */
const PACKS = Object.entries(STREAK_PACKS) as Array<[string, readonly string[]]>;
const PACKED = new Set(PACKS.flatMap(([, fields]) => fields));
const STREAK_OWN = PACKS.flatMap(([, fields]) => fields.map((f) => `s:${f}`));

/** streakPut: the changed streak fields, the scalar ones packed; the earlier version's fields to remove. */
function streakPut(
  raw: Record<string, string>,
  sf: string[],
  put: (f: string, v: string) => void,
  own: boolean,
): string[] | null {
  const v: Record<string, string> = {};
  let changed = false;
  for (let i = 0; i < sf.length; i += 2) {
    const f = sf[i]!;
    const x = sf[i + 1]!;
    if (PACKED.has(f)) {
      v[f] = x;
      if ((raw[f] ?? '') !== x) changed = true;
    } else if (raw[f] !== x) put(f, x);
  }
  if (!changed && !own && raw._ !== undefined && raw['~'] !== undefined) return null;
  // Each pack whose value changed (none set and none stored: nothing to write).
  for (const [name, fields] of PACKS) {
    const packed = fields.map((f) => v[f] ?? raw[f] ?? '').join('|');
    const before = raw[name];
    if (packed !== before && !(before === undefined && packed === '|'.repeat(fields.length - 1)))
      put(name, packed);
  }
  return own ? STREAK_OWN : null;
}

function streakFields(S: Plan['streak'], st: Streak, sums: Record<string, number>): string[] {
  const sf = [
    'epoch',
    fmt(S.epoch),
    'length',
    fmt(st.length),
    'freezes',
    fmt(st.freezes),
    'longest',
    fmt(st.longest),
    'longestAt',
    fmt(st.longestAt),
  ];
  if (st.freezeInit) sf.push('freezeInit', '1');
  if (S.on) {
    sf.push('curIdx', fmt(st.curIdx!), 'curMet', st.curMet ? '1' : '0');
    sf.push('lengthAt', fmt(st.lengthAt), 'metAt', fmt(st.metAt));
    if (st.lastMet !== null) sf.push('lastMet', fmt(st.lastMet));
    sf.push('started', st.started ?? '');
    for (const c of S.conds) sf.push(`s:${c.m}`, fmt(sums[c.m] ?? 0));
  }
  return sf;
}

function conditionsMet(S: Plan['streak'], sums: Record<string, number>): boolean {
  if (S.mode === 'any') return S.conds.some((c) => (sums[c.m] ?? 0) >= c.thr);
  if (S.conds.length === 0) return false;
  return S.conds.every((c) => (sums[c.m] ?? 0) >= c.thr);
}

// ------------------------------------------------------------------ lib/points.lua

/** levelAt: the level a total reaches, as its 1-based position in the thresholds, false for none. */
function levelAt(lv: number[] | undefined, total: number): number | false {
  const levels = (lv ?? []).map((points, i) => ({ points, position: i + 1 }));
  return levelOf({ levels }, total)?.position ?? false;
}

const triggerFields = (t: { id: string; ep: number }): [string, string] => {
  const suffix = `${t.id}:${fmt(t.ep)}`;
  return [`mtT:${suffix}`, `mtH:${suffix}`];
};

interface AwardContext {
  created: boolean;
  attrs: Record<string, string>;
  eattrs: Record<string, string>;
  boosts: UserScriptContext['boosts'];
  counters: Map<string, number>;
  stored: (f: string) => number;
  streakLen: number | null;
  completions: Array<{ id: string }>;
  nextId: () => string;
  date: number;
}

function awardPoints(sys: PlanSystem, start: number, ctx: AwardContext): [RecentAward[], number, boolean] {
  const awards: RecentAward[] = [];
  let total = start;
  let overflow = false;
  const boosts = ctx.boosts[sys.id] ?? [];
  const award = (t: { id: string; uf: LuaFilter[] }, base: number) => {
    if (base === 0 || !matches(t.uf, ctx.attrs)) return;
    let x = base;
    const applied: string[] = [];
    let n = 1;
    let d = 1;
    let mode: string | null = null;
    for (const b of boosts) {
      if (matches(b.uf, ctx.attrs)) {
        n *= b.num;
        d *= b.den;
        applied.push(b.id);
        if (mode === null) mode = b.r;
        else if (mode !== b.r) mode = 'down';
      }
    }
    if (applied.length > 0) {
      const q = floorDiv(base * n, d);
      const r = base * n - q * d;
      x = q;
      if (mode === 'up' && r > 0) x = q + 1;
      if (mode === 'nearest' && 2 * r >= d) x = q + 1;
    }
    let next: number;
    if (x > 0) {
      next = total + x;
      if (sys.max >= 0) next = Math.min(next, Math.max(total, sys.max));
    } else next = Math.max(total + x, 0);
    const awarded = next - total;
    if (awarded === 0) return;
    if (next > MAX_POINTS) overflow = true;
    total = next;
    awards.push({ id: ctx.nextId(), awarded, total: next, trigger: t.id, boosts: applied, date: ctx.date });
  };
  if (ctx.created) for (const t of sys.uc) award(t, t.p);
  for (const t of sys.mt) {
    const [tf, hf] = triggerFields(t);
    const t1 = ctx.counters.get(tf);
    // Only triggers whose total this op moved (below: the event matches their filters, and they were
    // active before the op).
    if (t1 === undefined) continue;
    const h = ctx.stored(hf);
    const k = crossedMultiples({ total: h, high: h }, t1, t.thr);
    const mark = t1 > h ? t1 : h;
    if (mark !== h) ctx.counters.set(hf, mark);
    if (k > 0) award(t, k * t.p);
  }
  if (ctx.streakLen !== null) for (const t of sys.st) if (ctx.streakLen % t.len === 0) award(t, t.p);
  for (const c of ctx.completions) for (const t of sys.at) if (t.ach === c.id) award(t, t.p);
  return [awards, total, overflow];
}

const awardEntry = (a: RecentAward) =>
  `${fmt(a.total)}|${fmt(a.awarded)}|${a.id}|${fmt(a.date)}|${a.trigger}|${a.boosts.join(',')}`;

// ------------------------------------------------------------------ lua/applyUserOp.lua derivedId

/** The k-th id an op mints: its event id with the number of its last 12 hex digits advanced by k. */
export function derivedId(eventId: string, k: number): string {
  const tail = BigInt(`0x${eventId.slice(24)}`);
  const next = (tail + BigInt(k)) % 281474976710656n;
  return eventId.slice(0, 24) + next.toString(16).padStart(12, '0');
}

// ------------------------------------------------------------------ the op

/** Evaluates one event op (lua/applyUserOp.lua applyOne with op 'event', not quiet). */
export function evaluateEvent(
  plan: Plan,
  input: UserScriptInput,
  ctx: UserScriptContext,
  state: EventState,
): EventEvaluation {
  if (input.op !== 'event') return { kind: 'script', reason: 'not an event' };
  if (state.idemRemembered) return { kind: 'script', reason: 'idempotency replay' };
  const U = splitUserHash(state.hash);
  const prof = U.profile;
  const storedAttrs = profileAttributes(prof);
  const exists = prof.created !== undefined;
  const user = input.user;
  const storedTz = prof.tz ?? 'UTC';
  const tz = user.tz ?? storedTz;
  if (tz !== input.assumedTz) return { kind: 'script', reason: 'zone to recompute' };
  if (exists && user.tz && user.tz !== storedTz) return { kind: 'script', reason: 'change of zone' };
  if (input.mustExist && !exists) return { kind: 'error', err: 'NO_USER' };

  const S = plan.streak;
  const metricId = plan.metricId!;
  const cur = input.periodIdx;
  const now = input.now;
  const puts = new Map<string, string>();
  const put = (prefix: string, f: string, v: string) => puts.set(prefix + f, v);

  let ids = 0;
  const nextId = () => derivedId(input.eventId, ++ids);

  const streakPart = U.streak;
  for (const [pack] of PACKS) {
    const v = state.hash[`s:${pack}`];
    if (v !== undefined) streakPart[pack] = v;
  }
  const st = loadStreak(
    streakPart,
    S.epoch,
    state.hash['s:epoch'] !== undefined || state.hash['s:longestAt'] !== undefined,
  );
  const attrs = user.attrs ? { ...storedAttrs, ...user.attrs } : storedAttrs;
  const done = U.achievements;

  const counters = new Map<string, number>();
  const stored = (f: string) => num(U.counters[f], 0);
  const counter = (f: string) => {
    let c = counters.get(f);
    if (c === undefined) {
      c = stored(f);
      counters.set(f, c);
    }
    return c;
  };
  let overflow = false;
  const bounded = (value: number) => {
    if (Math.abs(value) > MAX_SAFE) overflow = true;
    return value;
  };

  const v = Number(input.value);
  const eattrs = input.eattrs ?? {};
  const total1 = bounded(num(U.metrics[metricId], 0) + v);
  for (const a of plan.achievements.metric) {
    if (a.ef && a.ef.length > 0 && matches(a.ef, eattrs))
      counters.set(`af:${a.id}`, bounded(counter(`af:${a.id}`) + v));
  }
  for (const sys of plan.systems) {
    for (const t of sys.mt) {
      // Counted from the trigger's activation (semantics §5.3; lua/applyUserOp.lua).
      if (now >= t.ep && matches(t.ef, eattrs)) {
        const [tf] = triggerFields(t);
        counters.set(tf, bounded(counter(tf) + v));
      }
    }
  }

  // Streak: resolve ended periods, then open the current one (streakAdvance).
  let resolved: Resolved[] = [];
  let lost = 0;
  let eff = cur;
  let sums: Record<string, number> = {};
  if (S.on) {
    [resolved, lost] = rollover(S.freq, st, cur, S.freezesOn);
    if (st.lastMet !== null && st.length > 0 && cur < st.lastMet) eff = st.lastMet;
    if (st.curIdx !== eff) {
      st.curIdx = eff;
      st.curMet = st.length > 0 && st.lastMet === eff;
    } else {
      for (const c of S.conds) sums[c.m] = num(st.raw[`s:${c.m}`], 0);
    }
    for (const c of S.conds) if (c.m === metricId) sums[c.m] = bounded((sums[c.m] ?? 0) + v);
  } else {
    st.length = 0;
    sums = {};
  }

  // Boards: the user's slots (lib/user-boards.lua), parsed once per op: its latest run's value and
  // the one before.
  type SlotEntry = { run: string; value: number | null; raw: string } | undefined;
  const slotEntry = (raw: string | undefined): SlotEntry => {
    if (raw === undefined) return undefined;
    const i = raw.indexOf('|');
    return { run: raw.slice(0, i), value: num(raw.slice(i + 1), null), raw };
  };
  const slots = new Map<string, [SlotEntry, SlotEntry]>();
  const slot = (id: string) => {
    let s = slots.get(id);
    if (!s) {
      s = [slotEntry(U.boards[id]), slotEntry(U.boards[`${id}~`])];
      slots.set(id, s);
    }
    return s;
  };
  const boardValue = (id: string, run: string) => {
    const s = slot(id);
    if (s[0] && s[0].run === run) return s[0].value ?? 0;
    if (s[1] && s[1].run === run) return s[1].value ?? 0;
    return 0;
  };
  const boardStore = (id: string, run: string, value: number) => {
    const s = slot(id);
    const raw = `${run}|${fmt(value)}`;
    if (s[0] === undefined || s[0].run === run) put('b:', id, raw);
    else if (run > s[0].run) {
      put('b:', id, raw);
      put('b:', `${id}~`, s[0].raw);
    } else if (s[1] === undefined || run >= s[1].run) put('b:', `${id}~`, raw);
  };
  const nvAt = new Map<number, number>();
  if (v !== 0) {
    ctx.boards.forEach((b, i) => {
      if (b.kind === 'metric' && b.ref === metricId) nvAt.set(i, bounded(boardValue(b.id, b.run) + v));
    });
  }
  if (overflow) return { kind: 'error', err: 'OVERFLOW' };

  // Profile (upsertProfile).
  const created = !exists;
  let premoved: string[] | null = null;
  let profileChanged = created;
  const setField = (field: string, value: string) => {
    if (prof[field] !== value) {
      put('', field, value);
      prof[field] = value;
      profileChanged = true;
    }
  };
  const setOrDefault = (field: string, value: string, dflt: string) => {
    if (value !== dflt) setField(field, value);
    else if (prof[field] !== undefined) {
      if (prof[field] !== dflt) profileChanged = true;
      delete prof[field];
      premoved ??= [];
      premoved.push(field);
    }
  };
  if (created) {
    setField('id', user.id);
    setField('created', fmt(now));
  }
  if (user.email) setField('email', user.email);
  if (user.name) setField('name', user.name);
  if (user.tz) setField('tz', user.tz);
  if (user.dt) setOrDefault('dt', user.dt, '[]');
  if (user.sub !== undefined) setOrDefault('sub', user.sub ? '1' : '0', '1');
  for (const [k, val] of Object.entries(user.attrs ?? {})) setField(`a:${k}`, val);
  for (const [k, val] of Object.entries(user.prefs ?? {})) setField(`p:${k}`, val);
  if (profileChanged && !created) {
    const at = fmt(now);
    if (at !== prof.created) setField('updated', at);
  }
  const seq = num(prof.seq, 0) + 1;
  put('', 'seq', fmt(seq));

  if (created && S.freezesOn && st.freezeInit === undefined) {
    st.freezes = Math.min(Math.max(st.freezes, S.initF), Math.max(st.freezes, S.maxF));
    st.freezeInit = '1';
  }
  put('m:', metricId, fmt(total1));

  let increased = false;
  if (S.on && !st.curMet && conditionsMet(S, sums)) {
    // streakExtend
    if (st.length > 0 && st.lastMet === eff - 1) st.length += 1;
    else {
      st.length = 1;
      st.started = input.localDate;
    }
    st.lastMet = eff;
    st.curMet = true;
    st.lengthAt = now;
    st.metAt = now;
    if (st.length > st.longest) {
      st.longest = st.length;
      st.longestAt = now;
    }
    increased = true;
  }
  const streakChanged = increased || lost > 0;

  const periods: Array<{ idx: number; length: number; freeze?: true; pause?: true }> = resolved.map(
    ([idx, length, freeze, pause]) => ({
      idx,
      length,
      ...(freeze ? { freeze: true as const } : {}),
      ...(pause ? { pause: true as const } : {}),
    }),
  );
  if (increased) periods.push({ idx: eff, length: st.length });

  let sh: string[] | null = null;
  let streakLegacy: string[] | null = null;
  let streakStaleHist = false;
  let hist: string | false | null = null;
  if (S.on || st.freezeInit) {
    sh = streakFields(S, st, sums);
    // streakWrite
    if (S.on && periods.length > 0) {
      hist = histAppend(st.fresh ? '' : (state.hist ?? ''), periods);
    } else if (st.staleHist) hist = false;
    streakLegacy = streakPut(st.raw, sh, (f, x) => put('s:', f, x), st.own);
    streakStaleHist = st.raw.hist !== undefined;
    if (st.started === '') st.started = null;
  }

  // Achievements (evaluateAchievements).
  const completions: Array<{ id: string; cid: string; at: string }> = [];
  let completed = 0;
  const take = (id: string) => {
    const c = { id, cid: nextId(), at: fmt(now) };
    const encoded = `${fmt(now)}|${c.cid}`;
    done[id] = encoded;
    put('d:', id, encoded);
    completions.push(c);
    completed += 1;
  };
  for (const a of plan.achievements.metric) {
    const value = a.ef && a.ef.length > 0 ? counter(`af:${a.id}`) : total1;
    if (a.active && done[a.id] === undefined && value >= a.thr && matches(a.uf, attrs)) take(a.id);
  }
  const streakLen = increased ? st.length : null;
  if (streakLen !== null) {
    for (const a of plan.achievements.streak) {
      if (done[a.id] === undefined && streakLen >= a.len && matches(a.uf, attrs)) take(a.id);
    }
  }
  if (completed > 0) {
    let more = true;
    while (more) {
      more = false;
      for (const a of plan.achievements.composite) {
        if (done[a.id] === undefined && matches(a.uf, attrs) && a.pre.every((p) => done[p] !== undefined)) {
          take(a.id);
          more = true;
        }
      }
    }
  }

  // Points.
  const pointsReply: Array<Record<string, unknown>> = [];
  const pointsAdded = new Map<string, number>();
  let levelNews = false;
  let pointsOverflow = false;
  const awardLists: Array<{ system: number; entries: string[] }> = [];
  const pctx: AwardContext = {
    created,
    attrs,
    eattrs,
    boosts: ctx.boosts,
    counters,
    stored,
    streakLen,
    completions,
    nextId,
    date: input.at ?? now,
  };
  plan.systems.forEach((sys, i) => {
    const before = num(U.points[sys.id], 0);
    const [awards, total, over] = awardPoints(sys, before, pctx);
    if (over) pointsOverflow = true;
    const lb = created ? false : levelAt(sys.lv, before);
    const la = levelAt(sys.lv, total);
    const wire = () =>
      awards.map((a) => ({
        id: a.id,
        awarded: fmt(a.awarded),
        total: fmt(a.total),
        trigger: a.trigger,
        boosts: a.boosts,
        date: fmt(a.date),
      }));
    if (awards.length > 0) {
      put('n:', sys.id, fmt(total));
      // LPUSH order: each award in turn, so the list's head is the last.
      awardLists.push({ system: i, entries: awards.map(awardEntry) });
      pointsReply.push({
        sys: sys.id,
        total: fmt(total),
        added: fmt(total - before),
        awards: wire(),
        lb,
        la,
      });
      pointsAdded.set(sys.id, total - before);
      levelNews = true;
    } else if (created && la) {
      pointsReply.push({ sys: sys.id, total: fmt(total), added: '0', awards: [], lb, la });
      levelNews = true;
    }
  });
  if (pointsOverflow) return { kind: 'error', err: 'POINTS_OVERFLOW' };

  const cw: string[] = [];
  for (const [f, val] of counters) {
    cw.push(f, fmt(val));
    put('c:', f, fmt(val));
  }

  const boards: Array<{ id: string; run: string; value: string }> = [];
  const boardValues = new Map<number, number>();
  ctx.boards.forEach((b, i) => {
    let nv: number | undefined;
    if (b.kind === 'metric') nv = nvAt.get(i);
    else if (b.kind === 'points' && pointsAdded.has(b.ref))
      nv = boardValue(b.id, b.run) + pointsAdded.get(b.ref)!;
    else if (b.kind === 'streak' && streakChanged) nv = st.length;
    if (nv !== undefined) {
      boardStore(b.id, b.run, nv);
      boards.push({ id: b.id, run: b.run, value: fmt(nv) });
      boardValues.set(i, nv);
    }
  });

  let battrs: Record<string, string> | undefined;
  for (const k of plan.breakdownKeys ?? []) {
    if (attrs[k] !== undefined) {
      battrs ??= {};
      battrs[k] = attrs[k]!;
    }
  }

  const streakOut: Record<string, unknown> = {
    length: fmt(st.length),
    freezes: fmt(st.freezes),
    extended: increased,
    periods: periods.map((p) => ({ ...p, idx: fmt(p.idx), length: fmt(p.length) })),
    lost: fmt(lost),
    changed: streakChanged,
  };
  if (st.started !== null) streakOut.started = st.started;
  if (st.lastMet !== null) streakOut.lastMet = fmt(st.lastMet);
  if (st.pauses.length > 0) streakOut.pauses = st.pauses;

  const record: Record<string, unknown> = {
    op: 'event',
    id: input.eventId,
    user: user.id,
    now: fmt(now),
    tz,
    date: input.localDate,
    seq: fmt(seq),
    created,
    metric: metricId,
    value: fmt(v),
    total: fmt(total1),
    completions,
    points: pointsReply,
    streak: streakOut,
    boards,
    freq: S.freq,
  };
  if (input.eattrs !== undefined) record.eattrs = input.eattrs;
  if (input.idem) record.ik = input.idem.k;
  if (battrs) record.battrs = battrs;
  if (input.slot !== undefined) record.slot = input.slot;

  const extra: Record<string, unknown> = { epoch: S.epoch };
  if (sh) extra.sh = sh;
  if (cw.length > 0) extra.cw = cw;
  if (profileChanged) extra.profile = prof;

  const idem = input.idem
    ? { field: input.idem.f, value: input.idem.d ? fmt(now) : `${input.eventId}|${fmt(now)}` }
    : null;

  return {
    kind: 'writes',
    premoved,
    created,
    idem,
    streakLegacy,
    streakStaleHist,
    hist,
    awardLists,
    puts,
    boardValues,
    record,
    extra,
    levelNews,
  };
}
