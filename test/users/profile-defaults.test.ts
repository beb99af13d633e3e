import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rebuildState } from '../../src/rebuild/rebuild';
import { verifyState } from '../../src/rebuild/verify';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { drain, sendEvent, snapshotKeys, wipePrefix } from '../helpers/rebuild';
import { splitUserHash } from '../../src/redis/user-hash';

// A profile's sub, dt and updated are stored only while they differ from their defaults (subscribed,
// no device tokens, the creation time; lua/lib/profile.lua): a new user's hash holds three fields
// fewer, reads answer the defaults, and rebuild writes the same stored form.

let t: TestServer;

const profile = async (id: string) =>
  splitUserHash(await t.deps.redis.hgetall(t.deps.keys.user(id).hash)).profile;
const user = async (id: string) => {
  const res = await t.api('GET', `/v1/users/${id}`);
  expect(res.status).toBe(200);
  return res.body;
};

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-10T09:00:00Z' });
  await adminCreate(t, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
});
afterAll(async () => t.close());

describe('profile fields at their defaults', () => {
  it('a user created by an event stores no sub, dt or updated, and reads answer the defaults', async () => {
    await sendEvent(t, 'lessons', { id: 'pd-plain' }, 1);
    const p = await profile('pd-plain');
    expect(p).toMatchObject({ id: 'pd-plain', created: String(Date.parse('2025-03-10T09:00:00Z')) });
    expect(Object.keys(p).filter((f) => ['sub', 'dt', 'updated'].includes(f))).toEqual([]);
    expect(await user('pd-plain')).toMatchObject({
      id: 'pd-plain',
      subscribeToEmails: true,
      deviceTokens: [],
      created: '2025-03-10T09:00:00.000Z',
      updated: '2025-03-10T09:00:00.000Z',
    });
  });

  it('defaults sent explicitly are not stored; a value set back to its default is removed', async () => {
    const created = await t.api('POST', '/v1/users', {
      id: 'pd-explicit',
      subscribeToEmails: true,
      deviceTokens: [],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ subscribeToEmails: true, deviceTokens: [] });
    expect(
      Object.keys(await profile('pd-explicit')).filter((f) => ['sub', 'dt', 'updated'].includes(f)),
    ).toEqual([]);

    await t.api('PUT', '/v1/users/pd-flip', { subscribeToEmails: false, deviceTokens: ['t1'] });
    expect(await profile('pd-flip')).toMatchObject({ sub: '0', dt: '["t1"]' });
    t.clock.advance(60_000);
    const back = await t.api('PUT', '/v1/users/pd-flip', { subscribeToEmails: true, deviceTokens: [] });
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({
      subscribeToEmails: true,
      deviceTokens: [],
      updated: '2025-03-10T09:01:00.000Z',
    });
    const p = await profile('pd-flip');
    expect(p.sub).toBeUndefined();
    expect(p.dt).toBeUndefined();
    expect(p.updated).toBe(String(Date.parse('2025-03-10T09:01:00Z')));
    expect(await user('pd-flip')).toMatchObject({ subscribeToEmails: true, deviceTokens: [] });
  });

  it('a default stored by an earlier version is removed when sent again, without changing the profile', async () => {
    await sendEvent(t, 'lessons', { id: 'pd-old' }, 1);
    const { created } = await profile('pd-old');
    await t.deps.redis.hset(t.deps.keys.user('pd-old').hash, 'sub', '1', 'dt', '[]');
    t.clock.advance(60_000);
    const res = await t.api('PUT', '/v1/users/pd-old', { subscribeToEmails: true, deviceTokens: [] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ subscribeToEmails: true, deviceTokens: [] });
    expect(res.body.updated).toBe(res.body.created);
    const p = await profile('pd-old');
    expect(p.created).toBe(created);
    expect(Object.keys(p).filter((f) => ['sub', 'dt', 'updated'].includes(f))).toEqual([]);
  });

  it('the history has the defaults, and rebuild writes the same stored form', async () => {
    await drain(t);
    const rows = await t.deps
      .sql`select id, subscribe_to_emails, device_tokens, created = updated as same from users where id like 'pd-%' order by id`;
    expect(rows.map((r) => [r.id, r.subscribe_to_emails, r.device_tokens, r.same])).toEqual([
      ['pd-explicit', true, [], true],
      ['pd-flip', true, [], false],
      ['pd-old', true, [], true],
      ['pd-plain', true, [], true],
    ]);
    expect((await verifyState(t.deps)).differences).toEqual([]);

    const before = await snapshotKeys(t);
    await wipePrefix(t);
    await rebuildState(t.deps);
    const after = await snapshotKeys(t);
    for (const key of Object.keys(before))
      expect({ key, value: after[key] }).toEqual({ key, value: before[key] });
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
  });

  it('verify-state takes a stored default (a user of an earlier version) as the same profile', async () => {
    // The fields as versions before this one stored them for every new user.
    const hash = t.deps.keys.user('pd-plain').hash;
    const created = (await profile('pd-plain')).created!;
    await t.deps.redis.hset(hash, 'sub', '1', 'dt', '[]', 'updated', created);
    expect((await verifyState(t.deps)).differences).toEqual([]);
    expect(await user('pd-plain')).toMatchObject({ subscribeToEmails: true, deviceTokens: [] });
    // A real difference is still one.
    await t.deps.redis.hset(hash, 'sub', '0');
    expect((await verifyState(t.deps)).differences).toEqual([
      { userId: 'pd-plain', what: 'profile.sub', redis: '0', postgres: null },
    ]);
  });
});
