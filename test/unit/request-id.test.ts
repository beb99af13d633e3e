import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { AppEnv } from '../../src/app-env';
import { requestId } from '../../src/http/middleware/request-id';

const app = new Hono<AppEnv>().use('*', requestId).get('/', (c) => c.text(c.get('requestId')));
const idFor = async (given?: string) => {
  const res = await app.request('/', given === undefined ? {} : { headers: { 'X-Request-Id': given } });
  const body = await res.text();
  expect(res.headers.get('x-request-id')).toBe(body);
  return body;
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('request id', () => {
  it('mints a UUID when the caller sends none', async () => {
    expect(await idFor()).toMatch(UUID);
  });

  it("keeps a caller's id of letters, digits, dots, underscores and dashes up to 128 characters", async () => {
    expect(await idFor('caller-id.42_x')).toBe('caller-id.42_x');
    expect(await idFor('a'.repeat(128))).toBe('a'.repeat(128));
  });

  it("replaces a caller's id that is too long or has other characters", async () => {
    for (const bad of ['a'.repeat(129), 'a=b', 'a b', 'a/b', 'é'])
      expect(await idFor(bad), bad).toMatch(UUID);
  });
});
