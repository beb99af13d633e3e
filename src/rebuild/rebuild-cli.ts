/** `npm run rebuild`: recomputes all Redis state from Postgres history (stop application traffic first). */
import { loadConfig } from '../config';
import { closeDeps, createDeps } from '../deps';
import { rebuildState } from './rebuild';

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}

const deps = await createDeps(config);
let code = 0;
try {
  const summary = await rebuildState(deps, {
    drain: !process.argv.includes('--no-drain'),
    onProgress: (msg) => console.error(msg),
  });
  console.log(JSON.stringify(summary, null, 2));
} catch (err) {
  console.error(`rebuild failed: ${(err as Error).message}`);
  code = 1;
}
await closeDeps(deps);
process.exit(code);
