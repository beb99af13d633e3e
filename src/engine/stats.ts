// Small exact computations behind read endpoints (semantics §3.5, §7.2).

/** round(100 × completions / users, 2), halves away from zero; 0 without users. Exact integer arithmetic. */
export function rarity(completions: number, users: number): number {
  if (users <= 0 || completions <= 0) return 0;
  const scaled = 10_000 * completions;
  let hundredths = Math.floor(scaled / users);
  if (2 * (scaled - hundredths * users) >= users) hundredths += 1;
  return hundredths / 100;
}

export interface PointsRange {
  from: number;
  to: number;
}

/**
 * The 11 ranges of a points histogram: {0,0}, then ten ranges of width U/10 up to U, where U is 10 or
 * the smallest power of 10 ≥ the highest total (semantics §7.2).
 */
export function histogramRanges(highestTotal: number): PointsRange[] {
  let upper = 10;
  while (upper < highestTotal) upper *= 10;
  const width = upper / 10;
  const out: PointsRange[] = [{ from: 0, to: 0 }];
  for (let i = 0; i < 10; i++) out.push({ from: i * width + 1, to: (i + 1) * width });
  return out;
}
