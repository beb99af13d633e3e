// Boost windows and exact multiplier arithmetic (semantics §5.8, §5.9).
import { multiplierFraction } from './decimal';

export type BoostStatus = 'scheduled' | 'active' | 'finished';
export type BoostRounding = 'down' | 'up' | 'nearest';

/** Status of a boost window [start, end] (inclusive local dates, end null = open) on the date `today`. */
export function boostStatus(start: string, end: string | null, today: string): BoostStatus {
  if (today < start) return 'scheduled';
  if (end !== null && today > end) return 'finished';
  return 'active';
}

function floorDiv(num: bigint, den: bigint): bigint {
  const q = num / den;
  return num % den !== 0n && num < 0n ? q - 1n : q;
}

/** base × product of multipliers, computed exactly and rounded once (mixed modes round down); no boosts → base. */
export function applyMultipliers(
  base: number,
  boosts: Array<{ multiplier: number; rounding: BoostRounding }>,
): number {
  if (boosts.length === 0) return base;
  const baseFraction = multiplierFraction(base);
  let num = BigInt(baseFraction.num);
  let den = BigInt(baseFraction.den);
  for (const boost of boosts) {
    const f = multiplierFraction(boost.multiplier);
    num *= BigInt(f.num);
    den *= BigInt(f.den);
  }
  const modes = new Set(boosts.map((b) => b.rounding));
  const mode = modes.size === 1 ? boosts[0]!.rounding : 'down';
  let result: bigint;
  if (mode === 'down') result = floorDiv(num, den);
  else if (mode === 'up') result = -floorDiv(-num, den);
  else result = floorDiv(2n * num + den, 2n * den);
  return Number(result);
}
