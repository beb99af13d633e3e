import { loadConfig } from '../config';
import { runMigrations } from './migrate';

const config = loadConfig();
await runMigrations(config.DATABASE_URL);
console.log('migrations applied');
