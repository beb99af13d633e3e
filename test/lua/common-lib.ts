// Typed calls of the functions of lua/lib/ (numbers, calendar, filters, streak) through the harness, shared by its unit tests and
// the property tests that compare it with the TypeScript copies. Each takes a list of cases and runs
// them in one EVAL.
import type { Frequency } from '../../src/engine/periods';
import { arr, type LuaHarness } from './harness';

/** Day index of each [year, month, day]. */
export async function luaDaysFromCivil(
  h: LuaHarness,
  dates: Array<[number, number, number]>,
): Promise<number[]> {
  const out = await h.run<string[]>(
    ['streak', 'filters'],
    `local out = {}
     for i, d in ipairs(INPUT) do out[i] = N(daysFromCivil(d[1], d[2], d[3])) end
     return out`,
    dates,
  );
  return arr(out).map(Number);
}

/** 'YYYY-MM-DD' of each day index. */
export async function luaDateOfDay(h: LuaHarness, days: number[]): Promise<string[]> {
  return arr(
    await h.run<string[]>(
      ['streak', 'filters'],
      `local out = {}
       for i, z in ipairs(INPUT) do out[i] = dateOfDay(z) end
       return out`,
      days,
    ),
  );
}

/** [first, last] day index of each period. */
export async function luaPeriodDays(
  h: LuaHarness,
  periods: Array<[Frequency, number]>,
): Promise<Array<[number, number]>> {
  const out = await h.run<Array<[string, string]>>(
    ['streak', 'filters'],
    `local out = {}
     for i, p in ipairs(INPUT) do
       local first, last = periodDays(p[1], p[2])
       out[i] = { N(first), N(last) }
     end
     return out`,
    periods,
  );
  return arr(out).map(([a, b]) => [Number(a), Number(b)]);
}

/** Quotient and remainder of each [a, b]. */
export async function luaFloordiv(
  h: LuaHarness,
  pairs: Array<[number, number]>,
): Promise<Array<[number, number]>> {
  const out = await h.run<Array<[string, string]>>(
    ['streak', 'filters'],
    `local out = {}
     for i, p in ipairs(INPUT) do
       local q, r = floordiv(p[1], p[2])
       out[i] = { N(q), N(r) }
     end
     return out`,
    pairs,
  );
  return arr(out).map(([q, r]) => [Number(q), Number(r)]);
}

export type Filters = Array<[string, string]>;

/** matches(filters, attrs) of each case; filters undefined = nil. */
export async function luaMatches(
  h: LuaHarness,
  cases: Array<{ filters?: Filters | undefined; attrs: Record<string, string> }>,
): Promise<boolean[]> {
  return arr(
    await h.run<boolean[]>(
      ['streak', 'filters'],
      `local out = {}
       for i, c in ipairs(INPUT) do out[i] = matches(c.filters, c.attrs) end
       return out`,
      cases,
    ),
  );
}

export interface RolloverInput {
  freq: Frequency;
  length: number;
  lastMet?: number | undefined;
  freezes: number;
  started?: string | undefined;
  cur: number;
  /** [firstDay, lastDay] pairs. */
  pauses: Array<[number, number]>;
  freezesOn: boolean;
  /** [firstDay, lastDay] skipped by a time-zone change in this request. */
  skip?: [number, number] | undefined;
}

export interface RolloverResult {
  length: number;
  lastMet: number | undefined;
  freezes: number;
  started: string | undefined;
  lost: number;
  /** [idx, length, freeze, pause] per resolved period. */
  resolved: Array<[number, number, boolean, boolean]>;
}

/** rollover() of each case: the state after it and what it resolved. */
export async function luaRollover(h: LuaHarness, cases: RolloverInput[]): Promise<RolloverResult[]> {
  const out = await h.run<
    Array<{
      length: string;
      lastMet?: string;
      freezes: string;
      started?: string;
      lost: string;
      resolved: unknown;
    }>
  >(
    ['streak', 'filters'],
    `local out = {}
     for i, c in ipairs(INPUT) do
       local st = { length = c.length, lastMet = c.lastMet, freezes = c.freezes, started = c.started }
       local resolved, lost = rollover(c.freq, st, c.cur, c.pauses, c.freezesOn, c.skip)
       local res = {}
       for j, r in ipairs(resolved) do res[j] = { N(r[1]), N(r[2]), r[3], r[4] } end
       out[i] = { length = N(st.length), lastMet = N(st.lastMet), freezes = N(st.freezes), started = st.started,
                  lost = N(lost), resolved = res }
     end
     return out`,
    cases,
  );
  return arr(out).map((r) => ({
    length: Number(r.length),
    lastMet: r.lastMet === undefined ? undefined : Number(r.lastMet),
    freezes: Number(r.freezes),
    started: r.started,
    lost: Number(r.lost),
    resolved: arr(r.resolved as Array<[string, string, boolean, boolean]>).map(([i, l, f, p]) => [
      Number(i),
      Number(l),
      f,
      p,
    ]),
  }));
}
