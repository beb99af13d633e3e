import { execFileSync } from 'node:child_process';

/** One sample of a Prometheus text scrape. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format (the subset prom-client writes: no timestamps, no exemplars). */
export function parseScrape(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparsable scrape line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** Sum of every series of `name` whose labels include `match` (0 when there is none). */
export function metric(text: string, name: string, match: Record<string, string> = {}): number {
  return parseScrape(text)
    .filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);
}

/** True when the scrape has at least one series of `name` with those labels. */
export function hasSeries(text: string, name: string, match: Record<string, string> = {}): boolean {
  return parseScrape(text).some(
    (s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v),
  );
}

/**
 * Runs promtool (Debian's `prometheus` package; .ci/run installs it). Never skipped: a machine
 * without promtool fails the test that needs it. Returns stdout+stderr; throws on a non-zero exit.
 */
export function promtool(args: string[], input?: string): string {
  try {
    return execFileSync('promtool', args, { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { code?: string; stdout?: string; stderr?: string; status?: number };
    if (e.code === 'ENOENT') throw new Error('promtool not found: apt-get install prometheus (see .ci/run)');
    throw new Error(`promtool ${args.join(' ')} exited ${e.status}:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}
