import { describe, expect, it } from 'vitest';
import { backendOf } from '../../src/metrics/hooks';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('backendOf', () => {
  it('attributes postgres.js errors and raw socket errors to Postgres', () => {
    expect(
      backendOf(Object.assign(new Error('terminating connection'), { name: 'PostgresError', code: '57P01' })),
    ).toBe('postgres');
    expect(backendOf(withCode('write CONNECTION_CLOSED 127.0.0.1:5432', 'CONNECTION_CLOSED'))).toBe(
      'postgres',
    );
    expect(backendOf(withCode('connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED'))).toBe('postgres');
    expect(
      backendOf(new Error('Failed query', { cause: withCode('connect ECONNREFUSED', 'ECONNREFUSED') })),
    ).toBe('postgres');
  });

  it("attributes ioredis's refusals to Redis", () => {
    expect(backendOf(new Error("Stream isn't writeable and enableOfflineQueue options is false"))).toBe(
      'redis',
    );
    expect(backendOf(new Error('Connection is closed.'))).toBe('redis');
    expect(
      backendOf(
        Object.assign(new Error('Reached the max retries per request limit'), {
          name: 'MaxRetriesPerRequestError',
        }),
      ),
    ).toBe('redis');
  });
});
