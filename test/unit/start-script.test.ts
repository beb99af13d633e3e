import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * `npm start` gives Laurel the young generation README's "Running in production" recommends for API
 * processes, in NODE_OPTIONS ahead of the caller's own (Node takes the last of a repeated V8 flag), so
 * an operator's NODE_OPTIONS still wins.
 */
const start: string = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')).scripts.start;

/** NODE_OPTIONS as the start script hands it to Laurel (npm runs scripts with sh). */
function startOptions(callers?: string): string {
  expect(start.endsWith(' tsx src/main.ts')).toBe(true);
  const printing = start.replace(/ tsx src\/main\.ts$/, ` node -p process.env.NODE_OPTIONS`);
  const env = { ...process.env };
  if (callers === undefined) delete env.NODE_OPTIONS;
  else env.NODE_OPTIONS = callers;
  return execFileSync('sh', ['-c', printing], { env, encoding: 'utf8' }).trim();
}

describe('npm start', () => {
  it('sets a 32 MiB semi-space', () => {
    expect(startOptions()).toBe('--max-semi-space-size=32');
  });

  it("puts the caller's NODE_OPTIONS after it, so theirs win", () => {
    expect(startOptions('--max-semi-space-size=64')).toBe(
      '--max-semi-space-size=32 --max-semi-space-size=64',
    );
  });
});
