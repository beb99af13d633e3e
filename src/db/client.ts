import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import * as schema from './schema';

export type Db = ReturnType<typeof createDb>['db'];
export type Sql = postgres.Sql;

/** One pool per process; `sql` is kept for the few raw statements (bulk inserts, EXPLAIN). */
export function createDb(url: string, max = 10) {
  const sql = postgres(url, { max, onnotice: () => {}, connect_timeout: 5, idle_timeout: 30 });
  const db = drizzle(sql, { schema });
  return { db, sql };
}
