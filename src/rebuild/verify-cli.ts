/**
 * `npm run verify-state [-- --sample N]`: compares Redis with Postgres history; prints the differences
 * and exits 1 when there are any.
 */
import { loadConfig } from '../config';
import { closeDeps, createDeps } from '../deps';
import { verifyState } from './verify';

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}

const i = process.argv.indexOf('--sample');
const sample = i >= 0 ? Number(process.argv[i + 1]) : undefined;
if (sample !== undefined && !(Number.isInteger(sample) && sample > 0)) {
  console.error('--sample must be a positive integer');
  process.exit(2);
}

const deps = await createDeps(config);
let code = 0;
try {
  const result = await verifyState(deps, sample === undefined ? {} : { sample });
  for (const d of result.differences) console.log(JSON.stringify(d));
  console.log(
    `checked ${result.checkedUsers} users: ${result.differences.length === 0 ? 'no differences' : `${result.differences.length} differences`}`,
  );
  if (result.differences.length) code = 1;
} catch (err) {
  console.error(`verify-state failed: ${(err as Error).message}`);
  code = 2;
}
await closeDeps(deps);
process.exit(code);
