import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';
import { isTypeFetchDrop } from './src/process-guards';

const ALL = ['test/**/*.test.ts', 'test/**/*.test.tsx'];
/**
 * Files that replace a module with vi.mock: a mock applies only to modules imported after it, so these
 * files run in a fresh process each (every other file shares its worker's loaded modules). Found by
 * reading the test files, so a new one is never left out.
 */
const MOCKING = readdirSync('test', { recursive: true, encoding: 'utf8' })
  .filter((f) => /\.test\.tsx?$/.test(f) && readFileSync(join('test', f), 'utf8').includes('vi.mock('))
  .map((f) => join('test', f));

export default defineConfig({
  test: {
    globalSetup: ['./test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: more workers only add contention against the shared Redis and Postgres.
    maxWorkers: 2,
    fileParallelism: true,
    // The outage tests drop Postgres connections; one dropped while postgres.js reads the types of a new
    // connection leaves a rejection nobody can hold (src/process-guards.ts): Laurel's processes log it
    // and go on, and so do the tests. Every other unhandled error still fails the run.
    onUnhandledError: (error) => (isTypeFetchDrop(error) ? false : undefined),
    projects: [
      // Each file builds its own servers (own key prefix, own database), and module state that outlives
      // a file is keyed by server (its deps or its key prefix): a worker loads the app's modules once
      // for all its files, instead of once per file (about 2 s of a 2-core machine's CPU each).
      { extends: true, test: { name: 'shared', include: ALL, exclude: MOCKING, isolate: false } },
      { extends: true, test: { name: 'isolated', include: MOCKING, isolate: true } },
    ],
  },
});
