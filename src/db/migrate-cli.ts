/** `npm run db:migrate`: applies the pending migrations of drizzle/. */
import { runCliWithConfig } from '../cli/bootstrap';
import { runMigrations } from './migrate';

await runCliWithConfig({ name: 'migrate' }, async (config) => {
  await runMigrations(config.DATABASE_URL);
  console.log('migrations applied');
  return 0;
});
