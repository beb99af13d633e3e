import { defineConfig } from 'vitest/config';
import { isTypeFetchDrop } from './src/process-guards';

export default defineConfig({
  test: {
    globalSetup: ['./test/helpers/global-setup.ts'],
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
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
  },
});
