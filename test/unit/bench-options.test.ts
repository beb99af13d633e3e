import { describe, expect, it } from 'vitest';
import { parseOptions } from '../../bench/lib/options';

describe('bench options', () => {
  it('gives Laurel no extra node options unless BENCH_NODE_ARGS names some', () => {
    expect(parseOptions([], {}).nodeArgs).toEqual([]);
    expect(parseOptions([], { BENCH_NODE_ARGS: '' }).nodeArgs).toEqual([]);
    expect(
      parseOptions([], { BENCH_NODE_ARGS: ' --single-threaded-gc  --max-semi-space-size=32 ' }).nodeArgs,
    ).toEqual(['--single-threaded-gc', '--max-semi-space-size=32']);
  });

  it('refuses services that are not on this machine', () => {
    expect(() => parseOptions([], { REDIS_URL: 'redis://10.0.0.5:6379' })).toThrow(
      /must point at this machine/,
    );
  });
});
