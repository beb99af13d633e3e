/**
 * `npm run verify-state [-- --sample N]`: compares Redis with Postgres history; prints the differences
 * and exits 1 when there are any (2 when it cannot run).
 */
import { runCliWithDeps } from '../cli/bootstrap';
import { verifyState } from './verify';

const i = process.argv.indexOf('--sample');
const sample = i >= 0 ? Number(process.argv[i + 1]) : undefined;
if (sample !== undefined && !(Number.isInteger(sample) && sample > 0)) {
  console.error('--sample must be a positive integer');
  process.exit(2);
}

await runCliWithDeps({ name: 'verify-state', failureCode: 2 }, async (deps) => {
  const result = await verifyState(deps, sample === undefined ? {} : { sample });
  for (const d of result.differences) console.log(JSON.stringify(d));
  console.log(
    `checked ${result.checkedUsers} users: ${result.differences.length === 0 ? 'no differences' : `${result.differences.length} differences`}`,
  );
  return result.differences.length ? 1 : 0;
});
