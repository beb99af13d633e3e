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

/**
 * One `INSERT ... SELECT` for any number of rows, with one parameter per column: the column's values
 * as a JSON array, expanded side by side by `ROWS FROM (json_array_elements_text(...), ...)` and cast
 * in SQL. JSON.stringify is native, so the values need no per-value conversion or array escaping in
 * JavaScript (the history writer's hot path); dates travel as ISO strings (Date#toJSON), null and
 * undefined as SQL NULL, and jsonb values as JSON. `tail` is the rest of the statement, e.g.
 * `on conflict do nothing`.
 */
export async function bulkInsert<T>(
  db: Executor,
  table: string,
  columns: Array<BulkColumn<T>>,
  rows: T[],
  tail: SQL = sql`on conflict do nothing`,
): Promise<void> {
  if (rows.length === 0) return;
  const names = sql.join(
    columns.map((c) => sql.identifier(c.column)),
    sql`, `,
  );
  // Casts and the t(c0, c1, ...) aliases are SQL text, not values, so they cannot be parameters; they
  // are built only from BulkType (a closed list) and column positions, never from data.
  const selects = columns
    .map((c, i) =>
      c.type === 'jsonb'
        ? `nullif(c${i}::jsonb, 'null'::jsonb)`
        : c.type === 'text'
          ? `c${i}`
          : `c${i}::${c.type}`,
    )
    .join(', ');
  const sources = columns.map((c) => {
    const values = sql.param(JSON.stringify(rows.map(c.value)));
    return c.type === 'jsonb'
      ? sql`json_array_elements(${values}::json)`
      : sql`json_array_elements_text(${values}::json)`;
  });
  const aliases = columns.map((_, i) => `c${i}`).join(', ');
  await db.execute(
    sql`insert into ${sql.identifier(table)} (${names}) select ${sql.raw(selects)} from rows from (${sql.join(sources, sql`, `)}) as t(${sql.raw(aliases)}) ${tail}`,
  );
}
