import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * `npm start` gives Laurel the young generation README's "Running in production" recommends for API
 * processes, in NODE_OPTIONS ahead of the caller's own (V8 takes the last of a repeated flag), so an
 * operator's NODE_OPTIONS still wins.
 */
const start: string = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')).scripts.start;

/**
 * What a process started the way the start script starts Laurel gets (npm runs scripts with sh): its
 * NODE_OPTIONS, and the largest new space it reaches while it churns short-lived objects (two
 * semi-spaces: 32 MiB with Node's default 16 MiB semi-space).
 */
const PROBE = `
const v8 = require('v8');
let keep = [], max = 0;
for (let i = 0; i < 3e6; i++) {
  keep.push({ a: i, b: 'x' + i });
  if (keep.length > 200000) keep = [];
  if (i % 10000 === 0) max = Math.max(max, v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size);
}
console.log(JSON.stringify({ options: process.env.NODE_OPTIONS, newSpaceMiB: max / 1048576 }));
`;
function started(callers?: string): { options: string; newSpaceMiB: number } {
  expect(start.endsWith(' tsx src/main.ts')).toBe(true);
  const probing = start.replace(/ tsx src\/main\.ts$/, ' node -e "$PROBE"');
  const env: NodeJS.ProcessEnv = { ...process.env, PROBE };
  if (callers === undefined) delete env.NODE_OPTIONS;
  else env.NODE_OPTIONS = callers;
  return JSON.parse(execFileSync('sh', ['-c', probing], { env, encoding: 'utf8' }));
}

describe('npm start', () => {
  it('gives Laurel a 32 MiB semi-space', () => {
    const { options, newSpaceMiB } = started();
    expect(options.trim()).toBe('--max-semi-space-size=32');
    expect(newSpaceMiB).toBe(64);
  });

  it("puts the caller's NODE_OPTIONS after it, so theirs win", () => {
    const { options, newSpaceMiB } = started('--max-semi-space-size=64');
    expect(options).toBe('--max-semi-space-size=32 --max-semi-space-size=64');
    // More than a 32 MiB semi-space allows (the new space grows towards 128 MiB as objects survive).
    expect(newSpaceMiB).toBeGreaterThan(64);
  });
});
