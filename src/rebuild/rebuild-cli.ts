/** `npm run rebuild`: recomputes all Redis state from Postgres history (stop application traffic first). */
import { runCliWithDeps } from '../cli/bootstrap';
import { rebuildState } from './rebuild';

await runCliWithDeps({ name: 'rebuild' }, async (deps) => {
  const summary = await rebuildState(deps, {
    drain: !process.argv.includes('--no-drain'),
    onProgress: (msg) => console.error(msg),
  });
  console.log(JSON.stringify(summary, null, 2));
  return 0;
});
