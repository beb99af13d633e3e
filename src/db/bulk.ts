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

/** A part as sent: per column, whether its values travel delimited (true) or as a JSON array. */
type EncodedPart = BulkPart & { split: boolean[] };

/** One `INSERT ... SELECT` of `part`, its column parameters numbered from `first`. */
function insertText(part: EncodedPart, first: number): string {
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
      part.split[i]
        ? `unnest(string_to_array($${first + i}::text, chr(31), ''))`
        : c.type === 'jsonb'
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
function statementText(parts: EncodedPart[]): string {
  const key = parts
    .map(
      (p) =>
        `${p.table}\u0000${p.columns.map((c, i) => `${c.column}:${c.type}:${p.split[i] ? 's' : 'j'}`).join(',')}\u0000${p.tail}`,
    )
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

/** Between two delimited values: the ASCII unit separator. */
const UNIT = '\u001f';
/** The column types whose values travel delimited as they are (numbers, booleans, UUIDs, dates: never ''). */
const SCALARS: ReadonlySet<BulkType> = new Set(['uuid', 'int8', 'int4', 'bool', 'date', 'epoch_ms']);

/** Whether `joined` holds exactly `count - 1` separators (else a value held one). */
function separated(joined: string, count: number): boolean {
  let separators = 0;
  for (let at = joined.indexOf(UNIT); at !== -1; at = joined.indexOf(UNIT, at + 1)) separators++;
  return separators === count - 1;
}

/**
 * A column's values as one text, split in SQL by `string_to_array(text, chr(31), '')`: Postgres splits
 * it for a fraction of what its JSON parser costs per element (the bulk insert's largest share of
 * Postgres's time per row). '' reads back as NULL:
 * - scalars (SCALARS) join natively, null and undefined as '' (no value of these types is ''), unless
 *   one is a Date or a non-finite number (JSON writes those otherwise than their text);
 * - text when no value is '' (null and undefined join as '');
 * - jsonb as each value's JSON (which escapes every control character, so never holds the separator),
 *   null and undefined as ''.
 * undefined, and the column travels as one JSON array, otherwise, when a value held the separator, or
 * for a single row.
 */
function delimitedValues(type: BulkType, values: unknown[]): string | undefined {
  // One value: '' (NULL) splits to no element at all, which a part of one row cannot tell apart.
  if (values.length < 2) return undefined;
  if (type === 'jsonb') {
    let out = '';
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      const text = v === null || v === undefined ? '' : (JSON.stringify(v) ?? '');
      out = i === 0 ? text : out + UNIT + text;
    }
    return out;
  }
  if (type === 'text') {
    // '' would read back as NULL; null and undefined join as '' and do.
    if (values.includes('')) return undefined;
  } else if (SCALARS.has(type)) {
    // What JSON would carry otherwise than its text: a Date (its ISO string), a non-finite number (null).
    for (const v of values) {
      if ((typeof v === 'object' && v !== null) || (typeof v === 'number' && !Number.isFinite(v)))
        return undefined;
    }
  } else return undefined;
  const joined = values.join(UNIT);
  return separated(joined, values.length) ? joined : undefined;
}

/**
 * One `INSERT ... SELECT` for any number of rows, with one parameter per column: the column's values
 * delimited (delimitedValues) or as a JSON array, expanded side by side by `ROWS FROM
 * (unnest(string_to_array(...)), json_array_elements_text(...), ...)` and cast in SQL. Array#join and
 * JSON.stringify are native, so the values need no escaping in JavaScript (the history writer's hot
 * path); dates travel as ISO strings (Date#toJSON) or epoch milliseconds (`epoch_ms`), null and
 * undefined as SQL NULL, and jsonb values as JSON. `tail` is the rest of the statement, e.g. `on
 * conflict do nothing` (SQL text only: no parameters).
 *
 * The statement text depends only on the table, the columns, how each travels and the tail, so it is
 * a named prepared statement of the connection (postgres.js caches it): parsed and planned once per
 * connection, not per call, and sent in one round trip instead of a describe round trip and then the
 * values.
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
  const filled: EncodedPart[] = [];
  const params: string[] = [];
  for (const part of parts) {
    if (part.rows.length === 0) continue;
    const split: boolean[] = [];
    for (const c of part.columns) {
      const values = part.rows.map(c.value as (row: unknown) => unknown);
      const delimited = delimitedValues(c.type, values);
      split.push(delimited !== undefined);
      params.push(delimited ?? JSON.stringify(values));
    }
    filled.push({ ...part, split });
  }
  if (filled.length === 0) return;
  const text = statementText(filled);
  const session = db._.session;
  if (is(session, PostgresJsSession)) {
    await session.client.unsafe(text, params, { prepare: true });
    return;
  }
  throw new Error('bulkInsert: a postgres-js database or transaction is required');
}
