import { describe, expect, it } from 'vitest';
import { isTypeFetchDrop, onUnhandledRejection } from '../../src/process-guards';

// postgres.js reads the array types on every new connection without awaiting that query
// (connection.js fetchArrayTypes): a connection closed during it, on a connection whose first use was
// reserved (a transaction), rejects a promise nobody holds. Seen once in this suite's Postgres outage
// test (test/operations/durability.test.ts); Node ends a process on such a rejection by default.

describe('unhandled rejections in a Laurel process', () => {
  it('survives only that rejection: any other one is fatal', () => {
    const logs: string[] = [];
    const logger = {
      warn: (_: unknown, m: string) => logs.push(`warn ${m}`),
      fatal: (_: unknown, m: string) => logs.push(`fatal ${m}`),
    };
    const exits: number[] = [];
    const drop = Object.assign(new Error('write CONNECTION_CLOSED'), {
      code: 'CONNECTION_CLOSED',
      query: 'select b.oid, b.typarray from pg_catalog.pg_type a',
    });
    onUnhandledRejection(drop, logger, (c) => exits.push(c));
    expect(exits).toEqual([]);
    onUnhandledRejection(
      Object.assign(new Error('x'), { code: 'CONNECTION_CLOSED', query: 'select 1' }),
      logger,
      (c) => exits.push(c),
    );
    onUnhandledRejection(new TypeError('a bug'), logger, (c) => exits.push(c));
    expect(exits).toEqual([1, 1]);
    expect(isTypeFetchDrop({ code: 'ECONNRESET', query: drop.query })).toBe(false);
    expect(logs[0]).toMatch(/^warn /);
  });
});
