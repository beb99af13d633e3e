// Leaderboard runs (semantics §6.1, §6.2): which run a local date falls in, and when a run is final.
import { addDays, dayIndex, daysInMonth, formatDate, parseDate } from './periods';

export type RunUnit = 'day' | 'month' | 'year';

export interface BoardTiming {
  start: string;
  end: string | null;
  runUnit: RunUnit | null;
  runInterval: number;
}

export interface Run {
  index: number;
  start: string;
  end: string | null;
}

const DAY_MS = 86_400_000;

function stepMonths(board: BoardTiming): number {
  return board.runUnit === 'year' ? board.runInterval * 12 : board.runInterval;
}

/** Start date of repeating run i (i ≥ 0), stepping from the original start and clamping month ends. */
function repeatingRunStart(board: BoardTiming, index: number): string {
  if (board.runUnit === 'day') return addDays(board.start, index * board.runInterval);
  const { year, month, day } = parseDate(board.start);
  const months = year * 12 + (month - 1) + index * stepMonths(board);
  const y = Math.floor(months / 12);
  const m = months - y * 12 + 1;
  return formatDate(y, m, Math.min(day, daysInMonth(y, m)));
}

const LAST_DATE = '9999-12-31';

function assertInterval(board: BoardTiming): void {
  if (board.runUnit !== null && !(Number.isInteger(board.runInterval) && board.runInterval >= 1)) {
    throw new RangeError(`Invalid runInterval: ${board.runInterval}`);
  }
}

/** Run i of a board with its dates, or null when the board has no such run. O(1). */
export function runByIndex(board: BoardTiming, index: number): Run | null {
  assertInterval(board);
  if (!Number.isInteger(index) || index < 0) return null;
  if (board.end !== null && board.end < board.start) return null;
  if (board.runUnit === null) return index === 0 ? { index: 0, start: board.start, end: board.end } : null;
  const start = repeatingRunStart(board, index);
  // Dates stop at 9999-12-31: a later start (five-digit year) is no run, and the run the next one
  // would follow there ends on the last date.
  if (start.length > LAST_DATE.length || (board.end !== null && start > board.end)) return null;
  const nextStart = repeatingRunStart(board, index + 1);
  const naturalEnd = nextStart.length > LAST_DATE.length ? LAST_DATE : addDays(nextStart, -1);
  const end = board.end !== null && board.end < naturalEnd ? board.end : naturalEnd;
  return { index, start, end };
}

/** Runs already found, per board object (snapshot rows are immutable) and date; bounded per board. */
const containing = new WeakMap<BoardTiming, Map<string, Readonly<Run> | null>>();

/**
 * The run containing a date, or null when the date is outside the board's life. O(1); every event
 * asks it for each of its boards with one of a handful of dates, so answers are remembered.
 */
export function runContaining(board: BoardTiming, date: string): Readonly<Run> | null {
  let known = containing.get(board);
  const hit = known?.get(date);
  if (hit !== undefined) return hit;
  const run = computeRunContaining(board, date);
  if (!known) {
    known = new Map();
    containing.set(board, known);
  } else if (known.size >= 1000) known.clear();
  known.set(date, run ? Object.freeze(run) : null);
  return run;
}

function computeRunContaining(board: BoardTiming, date: string): Run | null {
  assertInterval(board);
  parseDate(date);
  if (date < board.start || (board.end !== null && date > board.end)) return null;
  if (board.runUnit === null) return runByIndex(board, 0);
  let index: number;
  if (board.runUnit === 'day') {
    index = Math.floor((dayIndex(date) - dayIndex(board.start)) / board.runInterval);
  } else {
    const s = parseDate(board.start);
    const d = parseDate(date);
    const monthsApart = d.year * 12 + d.month - (s.year * 12 + s.month);
    index = Math.floor(monthsApart / stepMonths(board));
    // Run `index` starts in a month ≤ date's month; a clamped or later day may still put it after the date.
    if (repeatingRunStart(board, index) > date) index -= 1;
  }
  return runByIndex(board, index);
}

/** Epoch ms at which a run ending on runEnd is finalised: 12:00 UTC on the following day. */
export function runFinalizationMs(runEnd: string): number {
  return (dayIndex(runEnd) + 1) * DAY_MS + 12 * 3_600_000;
}
