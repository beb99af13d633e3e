import { is, type SQL, StringChunk } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { PostgresJsSession } from 'drizzle-orm/postgres-js';

/**
 * Postgres array element types a bulk insert can carry (jsonb travels as text and is cast per row).
 * `epoch_ms` is a timestamptz given as milliseconds since the epoch (a number: no Date to build and
 * serialise per row).
 */
export type BulkType =
  | 'uuid'
  | 'text'
  | 'int8'
  | 'int4'
  | 'bool'
  | 'float8'
  | 'date'
  | 'timestamptz'
  | 'epoch_ms'
  | 'jsonb';

export interface BulkColumn<T> {
  column: string;
  type: BulkType;
  value: (row: T) => unknown;
}

/** A drizzle postgres-js database or transaction (its session's client runs the statement). */
interface Executor {
  readonly _: { readonly session: unknown };
}

const dialect = new PgDialect();

/** The text of a parameterless SQL: its string chunks joined (drizzle's renderer only otherwise). */
function textOf(query: SQL): string {
  let text = '';
  for (const chunk of query.queryChunks) {
    if (!is(chunk, StringChunk)) {
      const q = dialect.sqlToQuery(query);
      if (q.params.length) throw new Error('bulkInsert: the tail takes no parameters');
      return q.sql;
    }
    text += chunk.value.join('');
  }
  return text;
}
/** Statement text per table, columns and tail: the same few statements run on every pass. */
const texts = new Map<string, string>();
const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** One `INSERT ... SELECT` of `part`, its column parameters numbered from `first`. */
function insertText(part: BulkPart, first: number): string {
  const { columns } = part;
  // Casts and the t(c0, c1, ...) aliases are SQL text, not values, so they cannot be parameters;
  // they are built only from BulkType (a closed list), column names and positions, never from data.
  const selects = columns
    .map((c, i) =>
      c.type === 'jsonb'
        ? `nullif(c${i}::jsonb, 'null'::jsonb)`
        : c.type === 'text'
          ? `c${i}`
          : c.type === 'epoch_ms'
            ? `timestamptz 'epoch' + c${i}::int8 * interval '1 millisecond'`
            : `c${i}::${c.type}`,
    )
    .join(', ');
  const sources = columns
    .map((c, i) =>
      c.type === 'jsonb'
        ? `json_array_elements($${first + i}::json)`
        : `json_array_elements_text($${first + i}::json)`,
    )
    .join(', ');
  const names = columns.map((c) => quote(c.column)).join(', ');
  const aliases = columns.map((_, i) => `c${i}`).join(', ');
  return `insert into ${quote(part.table)} (${names}) select ${selects} from rows from (${sources}) as t(${aliases}) ${part.tail}`;
}

/**
 * The statement of `parts` (those with rows), its text cached by table, columns and tail: the
 * same few statements run on every pass. One part is a plain insert; more are data-modifying WITH
 * queries ahead of the last one, all of one statement (atomic on its own, one round trip).
 */
function statementText(parts: BulkPart[]): string {
  const key = parts
    .map((p) => `${p.table}\u0000${p.columns.map((c) => `${c.column}:${c.type}`).join(',')}\u0000${p.tail}`)
    .join('\u0001');
  let text = texts.get(key);
  if (text === undefined) {
    let first = 1;
    const inserts = parts.map((part) => {
      const t = insertText(part, first);
      first += part.columns.length;
      return t;
    });
    const last = inserts.pop()!;
    text = inserts.length ? `with ${inserts.map((t, i) => `i${i} as (${t})`).join(', ')} ${last}` : last;
    if (texts.size >= 256) texts.clear();
    texts.set(key, text);
  }
  return text;
}

/** One table's rows of a bulk insert (see bulkPart). */
export interface BulkPart {
  table: string;
  columns: Array<BulkColumn<never>>;
  rows: unknown[];
  /** SQL text after the select: `on conflict ...`, or '' for a plain insert. */
  tail: string;
}

/**
 * A table's rows and columns for bulkInsertAll; `tail` as bulkInsert's (default: on conflict do
 * nothing), or as SQL text.
 */
export function bulkPart<T>(
  table: string,
  columns: Array<BulkColumn<T>>,
  rows: T[],
  tail?: SQL | string,
): BulkPart {
  return {
    table,
    columns: columns as Array<BulkColumn<never>>,
    rows,
    tail: typeof tail === 'string' ? tail : tail ? textOf(tail) : 'on conflict do nothing',
  };
}

/**
 * One `INSERT ... SELECT` for any number of rows, with one parameter per column: the column's values
 * as a JSON array, expanded side by side by `ROWS FROM (json_array_elements_text(...), ...)` and cast
 * in SQL. JSON.stringify is native, so the values need no per-value conversion or array escaping in
 * JavaScript (the history writer's hot path); dates travel as ISO strings (Date#toJSON) or epoch
 * milliseconds (`epoch_ms`), null and undefined as SQL NULL, and jsonb values as JSON. `tail` is the
 * rest of the statement, e.g. `on conflict do nothing` (SQL text only: no parameters).
 *
 * The statement text depends only on the table, the columns and the tail, so it is a named prepared
 * statement of the connection (postgres.js caches it): parsed and planned once per connection, not
 * per call, and sent in one round trip instead of a describe round trip and then the values.
 */
export async function bulkInsert<T>(
  db: Executor,
  table: string,
  columns: Array<BulkColumn<T>>,
  rows: T[],
  tail?: SQL,
): Promise<void> {
  await bulkInsertAll(db, [bulkPart(table, columns, rows, tail)]);
}

/**
 * bulkInsert of several tables in one statement (parts without rows are left out; nothing is sent
 * when none has any): one prepared statement, one round trip, atomic on its own. The tables must not
 * depend on one another within it (the inserts see the same snapshot, in no set order).
 */
export async function bulkInsertAll(db: Executor, parts: BulkPart[]): Promise<void> {
  const filled = parts.filter((p) => p.rows.length > 0);
  if (filled.length === 0) return;
  const text = statementText(filled);
  const params: string[] = [];
  for (const { columns, rows } of filled)
    for (const c of columns) params.push(JSON.stringify(rows.map(c.value as (row: unknown) => unknown)));
  const session = db._.session;
  if (is(session, PostgresJsSession)) {
    await session.client.unsafe(text, params, { prepare: true });
    return;
  }
  throw new Error('bulkInsert: a postgres-js database or transaction is required');
}
