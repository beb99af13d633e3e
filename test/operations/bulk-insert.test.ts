import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BulkColumn, bulkInsert } from '../../src/db/bulk';
import { createDb } from '../../src/db/client';
import { createTestDatabase } from '../helpers/server';

interface Row {
  id: string;
  t?: string | null;
  i8?: number | null;
  i4?: number;
  b?: boolean | null;
  f?: number;
  d?: string;
  ts?: Date | null;
  j?: unknown;
}

let conn: ReturnType<typeof createDb>;
const columns: Array<BulkColumn<Row>> = [
  { column: 'id', type: 'uuid', value: (r) => r.id },
  { column: 't', type: 'text', value: (r) => r.t },
  { column: 'i8', type: 'int8', value: (r) => r.i8 },
  { column: 'i4', type: 'int4', value: (r) => r.i4 },
  { column: 'b', type: 'bool', value: (r) => r.b },
  { column: 'f', type: 'float8', value: (r) => r.f },
  { column: 'd', type: 'date', value: (r) => r.d },
  { column: 'ts', type: 'timestamptz', value: (r) => r.ts },
  { column: 'j', type: 'jsonb', value: (r) => r.j },
];

beforeAll(async () => {
  conn = createDb(await createTestDatabase(), 1);
  await conn.db.execute(sql`create table bulk_t (id uuid primary key, t text, i8 int8, i4 int4, b bool,
    f float8, d date, ts timestamptz, j jsonb)`);
});
afterAll(async () => conn.sql.end({ timeout: 2 }));

const select = async () =>
  conn.sql<Array<Record<string, unknown>>>`select id, t, i8::text as i8, i4, b, f, d::text as d,
    (extract(epoch from ts) * 1000)::float8 as ts, j,
    j is null as j_null from bulk_t order by id`;

describe('bulkInsert', () => {
  it('writes every type exactly, with null and undefined as SQL NULL and any text unescaped', async () => {
    const rows: Row[] = [
      {
        id: '00000000-0000-4000-8000-000000000001',
        t: `quote " backslash \\ comma , braces {} NULL null é 🎉 \n tab\t`,
        i8: 9_007_199_254_000_000,
        i4: -2_147_483_648,
        b: true,
        f: 0.1 + 0.2,
        d: '2024-02-29',
        ts: new Date('2026-11-24T03:04:05.678Z'),
        j: { a: [1, 'x', null], s: 'q"\\' },
      },
      { id: '00000000-0000-4000-8000-000000000002', t: null, i8: null, b: false, f: -0, j: 'a string' },
      { id: '00000000-0000-4000-8000-000000000003', t: '', i8: -1, j: null, ts: null },
      { id: '00000000-0000-4000-8000-000000000004', j: [] },
    ];
    await bulkInsert(conn.db, 'bulk_t', columns, rows);
    const got = await select();
    expect(got).toEqual([
      {
        id: rows[0]!.id,
        t: rows[0]!.t,
        i8: '9007199254000000',
        i4: -2_147_483_648,
        b: true,
        f: 0.30000000000000004,
        d: '2024-02-29',
        ts: Date.parse('2026-11-24T03:04:05.678Z'),
        j: { a: [1, 'x', null], s: 'q"\\' },
        j_null: false,
      },
      // A jsonb string stays a JSON string; null and undefined are SQL NULL in every column.
      {
        id: rows[1]!.id,
        t: null,
        i8: null,
        i4: null,
        b: false,
        f: 0,
        d: null,
        ts: null,
        j: 'a string',
        j_null: false,
      },
      {
        id: rows[2]!.id,
        t: '',
        i8: '-1',
        i4: null,
        b: null,
        f: null,
        d: null,
        ts: null,
        j: null,
        j_null: true,
      },
      {
        id: rows[3]!.id,
        t: null,
        i8: null,
        i4: null,
        b: null,
        f: null,
        d: null,
        ts: null,
        j: [],
        j_null: false,
      },
    ]);
  });

  it('keeps the tail: a conflicting row is skipped by default, updated when the tail says so', async () => {
    const id = '00000000-0000-4000-8000-000000000005';
    await bulkInsert(conn.db, 'bulk_t', columns, [{ id, t: 'first' }]);
    await bulkInsert(conn.db, 'bulk_t', columns, [{ id, t: 'second' }]);
    expect((await conn.sql`select t from bulk_t where id = ${id}`)[0]!.t).toBe('first');
    await bulkInsert(
      conn.db,
      'bulk_t',
      columns,
      [{ id, t: 'third' }],
      sql`on conflict (id) do update set t = excluded.t`,
    );
    expect((await conn.sql`select t from bulk_t where id = ${id}`)[0]!.t).toBe('third');
    // The tail is statement text: a value in it would be a parameter, which the prepared text cannot carry.
    await expect(
      bulkInsert(
        conn.db,
        'bulk_t',
        columns,
        [{ id, t: 'x' }],
        sql`on conflict (id) do update set t = ${'x'}`,
      ),
    ).rejects.toThrow(/no parameters/);
  });

  it('writes nothing for no rows, and 2,000 rows in one statement', async () => {
    await bulkInsert(conn.db, 'bulk_t', columns, []);
    const many = Array.from({ length: 2000 }, (_, i) => ({
      id: `10000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      i4: i,
    }));
    await bulkInsert(conn.db, 'bulk_t', columns, many);
    const [c] =
      await conn.sql`select count(*)::int as n, sum(i4)::int as s from bulk_t where id >= '10000000-0000-4000-8000-000000000000'`;
    expect(c).toEqual({ n: 2000, s: (1999 * 2000) / 2 });
  });
  it('writes epoch milliseconds as the exact timestamptz, and runs as one prepared statement per shape', async () => {
    await conn.db.execute(sql`create table bulk_ms (id int4 primary key, at timestamptz)`);
    const msColumns: Array<BulkColumn<{ id: number; at: number | null }>> = [
      { column: 'id', type: 'int4', value: (r) => r.id },
      { column: 'at', type: 'epoch_ms', value: (r) => r.at },
    ];
    const instants = [Date.parse('2026-11-24T03:04:05.678Z'), 0, -86_400_001, 7_258_118_399_999];
    await bulkInsert(
      conn.db,
      'bulk_ms',
      msColumns,
      instants.map((at, id) => ({ id, at })),
    );
    await bulkInsert(conn.db, 'bulk_ms', msColumns, [{ id: 9, at: null }]);
    const got = await conn.sql<Array<{ id: number; iso: string | null }>>`
      select id, to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as iso from bulk_ms order by id`;
    expect(got).toEqual([
      ...instants.map((at, id) => ({ id, iso: new Date(at).toISOString() })),
      { id: 9, iso: null },
    ]);
    // The same statement again is a named prepared statement of the connection (one per shape: a
    // single row travels as JSON, several delimited).
    const [p] = await conn.db.transaction(async (tx) => {
      await bulkInsert(tx, 'bulk_ms', msColumns, [{ id: 10, at: 1 }]);
      await bulkInsert(tx, 'bulk_ms', msColumns, [
        { id: 11, at: 2 },
        { id: 12, at: null },
      ]);
      return tx.execute(
        sql`select count(*)::int as n from pg_prepared_statements where statement like 'insert into "bulk_ms"%'`,
      );
    });
    expect(p).toEqual({ n: 2 });
  });

  it('sends several rows delimited, and any column delimiting cannot carry exactly as JSON', async () => {
    await conn.db.execute(sql`delete from bulk_t`);
    const id = (n: number) => `20000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
    // Several rows of every delimitable type, nulls among them, jsonb with control characters in strings.
    const plain: Row[] = [
      { id: id(1), t: 'a', i8: 1, i4: 1, b: true, f: 1.5, d: '2026-01-01', j: { s: 'x\u001fy\u001ez\n' } },
      { id: id(2), t: 'b', i8: null, b: null, d: undefined, j: null },
      { id: id(3), t: 'c', i8: -3, i4: 3, b: false, j: 'plain string' },
    ];
    const statements = await conn.db.transaction(async (tx) => {
      await bulkInsert(tx, 'bulk_t', columns, plain);
      return tx.execute(
        sql`select statement from pg_prepared_statements where statement like 'insert into "bulk_t"%'`,
      );
    });
    // uuid, text, int8, int4, bool, date and jsonb were split; float8 and timestamptz stay JSON.
    const splits = [...statements].map((r) => String(r.statement).match(/string_to_array/g)?.length ?? 0);
    expect(Math.max(...splits)).toBe(7);
    // Columns that cannot be delimited exactly: a separator inside a text, '' and null among texts.
    // A non-finite number is NULL in JSON (and in the column), not 'NaN'.
    const awkward: Row[] = [
      { id: id(4), t: 'unit\u001fseparator', i8: Number.NaN, j: [] },
      { id: id(5), t: 'record\u001eseparator', i8: 5, j: {} },
    ];
    const emptyAndNull: Row[] = [
      { id: id(6), t: '' },
      { id: id(7), t: null },
    ];
    // Texts and nulls without '' still travel delimited.
    const textsAndNulls: Row[] = [
      { id: id(8), t: null },
      { id: id(9), t: 'nine' },
    ];
    await bulkInsert(conn.db, 'bulk_t', columns, awkward);
    await bulkInsert(conn.db, 'bulk_t', columns, emptyAndNull);
    await bulkInsert(conn.db, 'bulk_t', columns, textsAndNulls);
    const got = await select();
    expect(got.map((r) => [r.id, r.t, r.i8, r.i4, r.b, r.f, r.d, r.j, r.j_null])).toEqual([
      [id(1), 'a', '1', 1, true, 1.5, '2026-01-01', { s: 'x\u001fy\u001ez\n' }, false],
      [id(2), 'b', null, null, null, null, null, null, true],
      [id(3), 'c', '-3', 3, false, null, null, 'plain string', false],
      [id(4), 'unit\u001fseparator', null, null, null, null, null, [], false],
      [id(5), 'record\u001eseparator', '5', null, null, null, null, {}, false],
      [id(6), '', null, null, null, null, null, null, true],
      [id(7), null, null, null, null, null, null, null, true],
      [id(8), null, null, null, null, null, null, null, true],
      [id(9), 'nine', null, null, null, null, null, null, true],
    ]);
  });
});
