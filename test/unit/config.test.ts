import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config';

function failure(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('loadConfig accepted a bad environment');
}

describe('loadConfig', () => {
  it('gives every variable a default that works on a developer machine', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      PORT: 3000,
      HOST: '0.0.0.0',
      ROLE: 'all',
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: 'lr',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/laurel',
      LOG_LEVEL: 'info',
      BODY_LIMIT_BYTES: 1024 * 1024,
      ADMIN_BODY_LIMIT_BYTES: 5 * 1024 * 1024,
      USER_SHARDS: 256,
      SHUTDOWN_TIMEOUT_MS: 10_000,
      MIGRATE_ON_START: true,
      WORKER_NICE: 10,
    });
    expect(c.ADMIN_API_KEY).toBeUndefined();
    expect(c.REDIS_CLUSTER_NODES).toBeUndefined();
  });

  it('parses numbers and booleans from strings and treats empty values as unset', () => {
    const c = loadConfig({ PORT: '8080', MIGRATE_ON_START: '0', LOG_LEVEL: '' });
    expect(c.PORT).toBe(8080);
    expect(c.MIGRATE_ON_START).toBe(false);
    expect(c.LOG_LEVEL).toBe('info');
  });

  it('accepts a well-formed ADMIN_API_KEY', () => {
    const key = `abcd1234.${'A'.repeat(43)}`;
    expect(loadConfig({ ADMIN_API_KEY: key }).ADMIN_API_KEY).toBe(key);
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['REDIS_URL', 'nope'],
    ['DATABASE_URL', 'nope'],
    ['LOG_LEVEL', 'loud'],
    ['ADMIN_API_KEY', 'short'],
    ['ROLE', 'everything'],
    ['REDIS_KEY_PREFIX', 'has space'],
    ['REDIS_CLUSTER_NODES', 'host-without-port'],
    ['MIGRATE_ON_START', 'yes'],
    ['WORKER_NICE', '20'],
    ['WORKER_NICE', '-5'],
  ])('fails with a one-line message naming %s when it is %j', (name, value) => {
    const message = failure({ [name]: value });
    expect(message).not.toContain('\n');
    expect(message).toMatch(new RegExp(`\\b${name}\\b`));
    expect(message.startsWith('Invalid configuration: ')).toBe(true);
  });

  it('names every bad variable, still on one line', () => {
    const message = failure({ PORT: 'abc', LOG_LEVEL: 'loud' });
    expect(message).not.toContain('\n');
    expect(message).toContain('PORT');
    expect(message).toContain('LOG_LEVEL');
    expect(message).not.toContain('REDIS_URL');
  });
});
