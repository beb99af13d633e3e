// Fixed-point decimals with 6 fractional digits (semantics §2.1). Values travel as integer counts of
// millionths ("micros") so sums are exact; conversions go through the decimal text of a double, never
// through binary floating-point multiplication.

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Splits a finite double into its shortest decimal form: |value| = digits × 10^exponent. */
function decimalParts(value: number): { negative: boolean; digits: bigint; exponent: number } {
  const text = String(Math.abs(value));
  const match = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(text);
  if (!match) throw new RangeError(`Not a finite decimal: ${value}`);
  const whole = match[1]!;
  const fraction = match[2] ?? '';
  const exp = match[3] ? Number(match[3]) : 0;
  return {
    negative: value < 0,
    digits: BigInt(whole + fraction),
    exponent: exp - fraction.length,
  };
}

/** Rounds a finite number to the nearest millionth (halves away from zero) as integer millionths. */
export function toMicros(value: number): number {
  if (!Number.isFinite(value)) throw new RangeError(`Not a finite number: ${value}`);
  const { negative, digits, exponent } = decimalParts(value);
  const shift = exponent + 6;
  let micros: bigint;
  if (shift >= 0) {
    // Beyond 10^16 micros the value is out of range anyway; avoid building huge powers.
    if (digits !== 0n && shift > 30) throw new RangeError(`Value out of range: ${value}`);
    micros = digits * 10n ** BigInt(shift);
  } else if (-shift > digits.toString().length) {
    // Fewer than half a millionth: digits < 10^len ≤ 10^-shift / 10.
    micros = 0n;
  } else {
    const divisor = 10n ** BigInt(-shift);
    micros = digits / divisor;
    if ((digits % divisor) * 2n >= divisor) micros += 1n;
  }
  if (micros > MAX_SAFE) throw new RangeError(`Value out of range: ${value}`);
  if (micros === 0n) return 0;
  return Number(negative ? -micros : micros);
}

/** Converts integer millionths back to a number (nearest double; prints with at most 6 decimals below 10^9). */
export function fromMicros(m: number): number {
  return m / 1e6;
}

function gcd(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b < 0n ? -b : b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

/** Exact reduced fraction of a number rounded to 6 decimals (1.1 → 11/10, 2 → 2/1). */
export function multiplierFraction(m: number): { num: number; den: number } {
  const micros = BigInt(toMicros(m));
  const divisor = micros === 0n ? 1000000n : gcd(micros, 1000000n);
  return { num: Number(micros / divisor), den: Number(1000000n / divisor) };
}
