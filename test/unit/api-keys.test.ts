import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';

// Wraps timingSafeEqual so the test can see that verification goes through it.
vi.mock('node:crypto', async (importOriginal) => {
  const orig = await importOriginal<typeof import('node:crypto')>();
  return { ...orig, timingSafeEqual: vi.fn(orig.timingSafeEqual) };
});

const crypto = await import('node:crypto');
const { generateApiKey, verifyApiKey } = await import('../../src/api-keys');
const { createLogger } = await import('../../src/logger');

type Row = NonNullable<Parameters<typeof verifyApiKey>[2] extends (p: string) => infer R ? R : never>;
const row = (over: Partial<Row> & { secretHash: string; prefix: string }) =>
  ({ id: 'id', name: 'n', kind: 'application', status: 'active', rateLimitPerSecond: null, ...over }) as Row;

describe('verifyApiKey', () => {
  const k = generateApiKey();
  const lookup = (p: string) =>
    p === k.prefix ? row({ prefix: k.prefix, secretHash: k.secretHash }) : undefined;
  const tse = crypto.timingSafeEqual as unknown as ReturnType<typeof vi.fn>;

  it('accepts the key and compares hashes with timingSafeEqual', () => {
    tse.mockClear();
    expect(verifyApiKey(k.key, 'application', lookup)?.prefix).toBe(k.prefix);
    expect(tse).toHaveBeenCalledTimes(1);
  });

  it('runs the same constant-time comparison for an unknown prefix, and refuses it', () => {
    tse.mockClear();
    const other = generateApiKey();
    expect(verifyApiKey(other.key, 'application', lookup)).toBeNull();
    expect(tse).toHaveBeenCalledTimes(1);
  });

  it('refuses a wrong secret, the wrong kind and a revoked key without throwing', () => {
    const wrongSecret = `${k.prefix}.${generateApiKey().key.split('.')[1]}`;
    expect(verifyApiKey(wrongSecret, 'application', lookup)).toBeNull();
    expect(verifyApiKey(k.key, 'admin', lookup)).toBeNull();
    const revoked = (p: string) =>
      p === k.prefix ? row({ prefix: p, secretHash: k.secretHash, status: 'revoked' }) : undefined;
    expect(verifyApiKey(k.key, 'application', revoked)).toBeNull();
  });

  it('handles a stored hash of another length (corrupt row) without throwing', () => {
    for (const secretHash of ['', 'abc', 'zz', '00'.repeat(64), 'not hex at all']) {
      expect(() =>
        verifyApiKey(k.key, 'application', () => row({ prefix: k.prefix, secretHash })),
      ).not.toThrow();
      expect(verifyApiKey(k.key, 'application', () => row({ prefix: k.prefix, secretHash }))).toBeNull();
    }
  });

  it('refuses malformed keys without throwing', () => {
    for (const bad of [
      undefined,
      '',
      ' ',
      '.',
      k.prefix,
      `${k.key}=`,
      `${k.key}\n`.repeat(2),
      'é'.repeat(52),
      '\u0000',
    ]) {
      expect(() => verifyApiKey(bad, 'application', lookup)).not.toThrow();
      expect(verifyApiKey(bad, 'application', lookup)).toBeNull();
    }
  });
});

describe('logger redaction', () => {
  it('redacts keys, secrets and x-api-key headers in logged objects and errors', () => {
    const out: string[] = [];
    const log = createLogger(
      'info',
      new Writable({
        write(chunk, _e, done) {
          out.push(String(chunk));
          done();
        },
      }),
    );
    const key = generateApiKey().key;
    log.info({ key, secret: key, apiKey: key }, 'top level');
    log.info({ req: { headers: { 'x-api-key': key } } }, 'request');
    log.error({ err: Object.assign(new Error('boom'), { headers: { 'x-api-key': key }, key }) }, 'error');
    log.info({ webhook: { secret: key } }, 'nested');
    expect(out).toHaveLength(4);
    for (const line of out) {
      expect(line).not.toContain(key.split('.')[1]);
      expect(line).toContain('[redacted]');
    }
  });
});
