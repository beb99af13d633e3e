import { describe, expect, it } from 'vitest';
import {
  finalisationMs,
  type LeaderboardStatus,
  leaderboardStatus,
  utcDate,
} from '../../src/engine/leaderboard-status';

const at = (iso: string) => Date.parse(iso);

describe('leaderboardStatus', () => {
  it.each<[LeaderboardStatus, string, string | null, string, LeaderboardStatus]>([
    ['inactive', '2025-01-01', null, '2025-03-10T12:00:00Z', 'inactive'],
    ['inactive', '2025-01-01', '2025-01-31', '2025-03-10T12:00:00Z', 'inactive'],
    ['finished', '2025-01-01', null, '2025-01-02T00:00:00Z', 'finished'],
    ['scheduled', '2025-03-11', null, '2025-03-10T23:59:59.999Z', 'scheduled'],
    ['scheduled', '2025-03-11', null, '2025-03-11T00:00:00Z', 'active'],
    ['scheduled', '2025-03-01', '2025-03-05', '2025-03-10T12:00:00Z', 'finished'],
    ['scheduled', '2025-03-01', '2025-03-09', '2025-03-10T11:59:59.999Z', 'active'],
    ['active', '2025-03-01', null, '2099-01-01T00:00:00Z', 'active'],
    ['active', '2025-03-01', '2025-03-09', '2025-03-10T11:59:59.999Z', 'active'],
    ['active', '2025-03-01', '2025-03-09', '2025-03-10T12:00:00Z', 'finished'],
    ['active', '2024-12-01', '2024-12-31', '2025-01-01T12:00:00Z', 'finished'],
    ['active', '2024-02-01', '2024-02-29', '2024-03-01T11:00:00Z', 'active'],
  ])('stored %s, start %s, end %s at %s is %s', (status, start, end, now, expected) => {
    expect(leaderboardStatus({ status, start, end }, at(now))).toBe(expected);
  });

  it('finalises 12:00 UTC on the day after the end, across month and year ends', () => {
    expect(new Date(finalisationMs('2024-02-29')).toISOString()).toBe('2024-03-01T12:00:00.000Z');
    expect(new Date(finalisationMs('2025-12-31')).toISOString()).toBe('2026-01-01T12:00:00.000Z');
  });

  it('uses the UTC date of the instant', () => {
    expect(utcDate(at('2025-03-10T23:59:59.999Z'))).toBe('2025-03-10');
    expect(utcDate(at('2025-03-11T00:00:00Z'))).toBe('2025-03-11');
  });
});
