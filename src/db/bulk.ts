import { type SQL, sql } from 'drizzle-orm';

/** Postgres array element types a bulk insert can carry (jsonb travels as text and is cast per row). */
export type BulkType =
  | 'uuid'
  | 'text'
  | 'int8'
  | 'int4'
  | 'bool'
  | 'float8'
  | 'date'
  | 'timestamptz'
  | 'jsonb';

export interface BulkColumn<T> {
  column: string;
  type: BulkType;
  value: (row: T) => unknown;
}

interface Executor {
  execute(query: SQL): Promise<unknown>;
}

/** Every value travels as text (postgres.js infers some array types wrongly) and is cast in SQL. */
const toParam = (type: BulkType, v: unknown): string | null => {
  if (v === null || v === undefined) return null;
  if (type === 'jsonb') return JSON.stringify(v);
  if (type === 'timestamptz') return (v as Date).toISOString();
  return String(v);
};

/**
 * One `INSERT ... SELECT FROM unnest(...)` for any number of rows: one array parameter per column, so
 * the cost does not grow with per-value mapping in the query builder (the history writer's hot path).
 * `tail` is the rest of the statement, e.g. `on conflict do nothing`.
 */
export async function bulkInsert<T>(
  db: Executor,
  table: string,
  columns: Array<BulkColumn<T>>,
  rows: T[],
  tail: SQL = sql`on conflict do nothing`,
): Promise<void> {
  if (rows.length === 0) return;
  const names = columns.map((c) => `"${c.column}"`).join(', ');
  const selects = columns.map((c, i) => (c.type === 'text' ? `c${i}` : `c${i}::${c.type}`)).join(', ');
  const arrays = columns.map((c) => sql`${sql.param(rows.map((r) => toParam(c.type, c.value(r))))}::text[]`);
  const aliases = columns.map((_, i) => `c${i}`).join(', ');
  await db.execute(
    sql`insert into ${sql.raw(`"${table}"`)} (${sql.raw(names)}) select ${sql.raw(selects)} from unnest(${sql.join(arrays, sql`, `)}) as t(${sql.raw(aliases)}) ${tail}`,
  );
}
