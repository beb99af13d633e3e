// Calendar arithmetic on local dates ('YYYY-MM-DD') and IANA zones (semantics §0, §4.2). Dates are
// converted to day indexes (days since 1970-01-01) with integer civil-calendar formulas, so no
// server-local time and no Date parsing quirks are involved. Zone offsets come from Intl directly:
// date-fns-tz's getTimezoneOffset reads its Date argument as a wall-clock time, not an instant, which
// gives the wrong offset in the hours around a DST transition.

const DAY_MS = 86_400_000;
const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
// IANA names start with a letter (Etc/GMT+5, America/Port-au-Prince); this rejects '+05:00'-style offsets.
const ZONE_NAME_RE = /^[A-Za-z][A-Za-z0-9_+\-/]*$/;

export type Frequency = 'daily' | 'weekly' | 'monthly';

// Intl also accepts case variants ('europe/london'), so user input could grow these caches without end.
const MAX_CACHED_ZONES = 2000;
const knownZones = new Set<string>();

/** True for IANA time-zone names known to the runtime (incl. 'UTC'); false for offsets and unknown names. */
export function isValidTimeZone(tz: string): boolean {
  if (knownZones.has(tz)) return true;
  if (!ZONE_NAME_RE.test(tz)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    return false;
  }
  if (knownZones.size >= MAX_CACHED_ZONES) knownZones.clear();
  knownZones.add(tz);
  return true;
}

function isLeapYear(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

/** Number of days in a month (month 1–12). */
export function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Splits a 'YYYY-MM-DD' date into numbers; throws RangeError for malformed or impossible dates. */
export function parseDate(date: string): { year: number; month: number; day: number } {
  const match = DATE_RE.exec(date);
  if (match) {
    const year = Number(match[1]);
    const month = Number(match[2]);
    const day = Number(match[3]);
    if (month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month)) return { year, month, day };
  }
  throw new RangeError(`Invalid date: ${date}`);
}

/** Formats year, month (1–12) and day as 'YYYY-MM-DD'. */
export function formatDate(year: number, month: number, day: number): string {
  return `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

// Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian, eras of 400 years).
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function civilFromDays(index: number): { year: number; month: number; day: number } {
  const z = index + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day };
}

/** Days since 1970-01-01 of a 'YYYY-MM-DD' date. O(1). */
export function dayIndex(date: string): number {
  const { year, month, day } = parseDate(date);
  return daysFromCivil(year, month, day);
}

/** The 'YYYY-MM-DD' date of a day index (days since 1970-01-01). O(1). */
export function dateOfDay(index: number): string {
  const { year, month, day } = civilFromDays(index);
  return formatDate(year, month, day);
}

/** The date n days after (or before, n < 0) a date. */
export function addDays(date: string, n: number): string {
  return dateOfDay(dayIndex(date) + n);
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(tz: string): Intl.DateTimeFormat {
  let formatter = formatters.get(tz);
  if (!formatter) {
    if (!isValidTimeZone(tz)) throw new RangeError(`Invalid time zone: ${tz}`);
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    if (formatters.size >= MAX_CACHED_ZONES) formatters.clear();
    formatters.set(tz, formatter);
  }
  return formatter;
}

// en-US output, e.g. '3/10/2024 AD, 01:59:59'; parsing format() is several times faster than formatToParts.
const WALL_CLOCK_RE = /^(\d+)\/(\d+)\/(\d+) (A|B)\w*, (\d+):(\d+):(\d+)$/;

/** Wall-clock fields of an instant in tz; throws RangeError for unknown zones. */
function wallClock(instantMs: number, tz: string) {
  const formatter = formatterFor(tz);
  const match = WALL_CLOCK_RE.exec(formatter.format(instantMs));
  const fields = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0 };
  let bc = false;
  if (match) {
    fields.month = Number(match[1]);
    fields.day = Number(match[2]);
    fields.year = Number(match[3]);
    bc = match[4] === 'B';
    fields.hour = Number(match[5]);
    fields.minute = Number(match[6]);
    fields.second = Number(match[7]);
  } else {
    // A runtime whose ICU prints differently: fall back to the structured (slower) form.
    for (const part of formatter.formatToParts(instantMs)) {
      if (part.type === 'era') bc = part.value.startsWith('B');
      else if (part.type in fields) fields[part.type as keyof typeof fields] = Number(part.value);
    }
  }
  if (bc) fields.year = 1 - fields.year;
  return fields;
}

/** Offset of tz from UTC at an instant, in ms (whole seconds, as Intl reports wall clocks). */
function zoneOffsetMs(instantMs: number, tz: string): number {
  const w = wallClock(instantMs, tz);
  const wallMs =
    (daysFromCivil(w.year, w.month, w.day) * 86_400 + w.hour * 3600 + w.minute * 60 + w.second) * 1000;
  return wallMs - Math.floor(instantMs / 1000) * 1000;
}

/** Calendar date ('YYYY-MM-DD') at an instant in an IANA zone. */
export function localDate(nowMs: number, tz: string): string {
  // Hot path (every op): answer from the day window last seen in this zone when it still applies.
  const win = dayWindows.get(tz);
  if (win && nowMs >= win.from && nowMs < win.to) return win.date;
  const date = rawLocalDate(nowMs, tz);
  const from = instantOfLocalMidnight(date, tz);
  const to = instantOfLocalMidnight(addDays(date, 1), tz);
  if (nowMs >= from && nowMs < to) {
    if (dayWindows.size >= MAX_CACHED_ZONES) dayWindows.clear();
    dayWindows.set(tz, { date, from, to });
  }
  return date;
}

/** The local day last answered per zone, with its bounds [from, to). */
const dayWindows = new Map<string, { date: string; from: number; to: number }>();

function rawLocalDate(nowMs: number, tz: string): string {
  const w = wallClock(nowMs, tz);
  return formatDate(w.year, w.month, w.day);
}

/** Index of the period containing a date: day index, ISO week index (1969-12-29 → 0) or year·12 + month − 1. */
export function periodIndex(freq: Frequency, date: string): number {
  switch (freq) {
    case 'daily':
      return dayIndex(date);
    case 'weekly':
      return Math.floor((dayIndex(date) + 3) / 7);
    case 'monthly': {
      const { year, month } = parseDate(date);
      return year * 12 + month - 1;
    }
  }
}

/** First and last date of a period given by its index (inverse of periodIndex). */
export function periodBounds(freq: Frequency, index: number): { start: string; end: string } {
  switch (freq) {
    case 'daily': {
      const date = dateOfDay(index);
      return { start: date, end: date };
    }
    case 'weekly': {
      const monday = index * 7 - 3;
      return { start: dateOfDay(monday), end: dateOfDay(monday + 6) };
    }
    case 'monthly': {
      const year = Math.floor(index / 12);
      const month = index - year * 12 + 1;
      return { start: formatDate(year, month, 1), end: formatDate(year, month, daysInMonth(year, month)) };
    }
  }
}

/** The Monday starting the ISO week that contains a date. */
export function isoWeekStart(date: string): string {
  return dateOfDay(Math.floor((dayIndex(date) + 3) / 7) * 7 - 3);
}

/** The 1st of the month that contains a date. */
export function monthStart(date: string): string {
  const { year, month } = parseDate(date);
  return formatDate(year, month, 1);
}

/** Epoch ms of 00:00 local time on a date in tz; when midnight is skipped by DST, the date's first instant. */
export function instantOfLocalMidnight(date: string, tz: string): number {
  const key = `${tz}|${date}`;
  let found = midnights.get(key);
  if (found === undefined) {
    found = computeLocalMidnight(date, tz);
    if (midnights.size >= 10_000) midnights.clear();
    midnights.set(key, found);
  }
  return found;
}

/** Memo of instantOfLocalMidnight (a pure function of its arguments). */
const midnights = new Map<string, number>();

function computeLocalMidnight(date: string, tz: string): number {
  const utcMidnight = dayIndex(date) * DAY_MS;
  // Offsets a day either side cover any transition near this midnight.
  const offsets = new Set([
    zoneOffsetMs(utcMidnight - DAY_MS, tz),
    zoneOffsetMs(utcMidnight, tz),
    zoneOffsetMs(utcMidnight + DAY_MS, tz),
  ]);
  let earliest = Number.POSITIVE_INFINITY;
  for (const offset of offsets) {
    const candidate = utcMidnight - offset;
    if (zoneOffsetMs(candidate, tz) === offset) earliest = Math.min(earliest, candidate);
  }
  if (earliest !== Number.POSITIVE_INFINITY) return earliest;
  // Midnight falls in a gap: binary-search the transition, the first instant whose local date is `date`.
  let before = utcMidnight - Math.max(...offsets);
  let onDate = utcMidnight - Math.min(...offsets);
  while (onDate - before > 1) {
    const mid = Math.floor((before + onDate) / 2);
    if (rawLocalDate(mid, tz) < date) before = mid;
    else onDate = mid;
  }
  return onDate;
}
