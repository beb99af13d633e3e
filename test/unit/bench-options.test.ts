import { describe, expect, it } from 'vitest';
import { parseOptions } from '../../bench/lib/options';
import { apiNodeOptions, workerNodeOptions } from '../../bench/lib/processes';

describe('bench options', () => {
  it('gives Laurel no extra node options unless BENCH_NODE_ARGS names some', () => {
    expect(parseOptions([], {}).nodeArgs).toEqual([]);
    expect(parseOptions([], { BENCH_NODE_ARGS: '' }).nodeArgs).toEqual([]);
    expect(
      parseOptions([], { BENCH_NODE_ARGS: ' --single-threaded-gc  --max-semi-space-size=32 ' }).nodeArgs,
    ).toEqual(['--single-threaded-gc', '--max-semi-space-size=32']);
  });

  it("starts API and worker processes with README's young generations, after the caller's NODE_OPTIONS", () => {
    expect(apiNodeOptions({})).toBe('--max-semi-space-size=32');
    expect(workerNodeOptions({})).toBe('--max-semi-space-size=64');
    expect(apiNodeOptions({ NODE_OPTIONS: '--enable-source-maps' })).toBe(
      '--enable-source-maps --max-semi-space-size=32',
    );
    // BENCH_API_NODE_OPTIONS replaces the recommendation; empty leaves Node's default.
    expect(apiNodeOptions({ BENCH_API_NODE_OPTIONS: '--max-semi-space-size=64' })).toBe(
      '--max-semi-space-size=64',
    );
    expect(apiNodeOptions({ BENCH_API_NODE_OPTIONS: '' })).toBe('');
    expect(workerNodeOptions({ BENCH_WORKER_NODE_OPTIONS: '--max-semi-space-size=128' })).toBe(
      '--max-semi-space-size=128',
    );
  });

  it('runs verify-state after the scenarios only when asked (--verify or BENCH_VERIFY)', () => {
    expect(parseOptions([], {}).verify).toBe(false);
    expect(parseOptions(['--verify'], {}).verify).toBe(true);
    expect(parseOptions([], { BENCH_VERIFY: '1' }).verify).toBe(true);
    expect(parseOptions([], { BENCH_VERIFY: '0' }).verify).toBe(false);
  });

  it('refuses services that are not on this machine', () => {
    expect(() => parseOptions([], { REDIS_URL: 'redis://10.0.0.5:6379' })).toThrow(
      /must point at this machine/,
    );
  });
});
