import { createHash, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/api-keys';
import { apiKeys } from '../../src/db/schema';
import { awaitBackdates } from '../../src/services/backdate';
import { keyContents } from '../helpers/redis-state';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

/**
 * Property-based fuzzing of every route of the application API (/v1, /api) and the admin API
 * (/admin/v1), enumerated from the Hono app itself. Each case picks a route (or an unmatched
 * path), fills its path parameters with configured ids and keys or hostile segments (unicode,
 * control characters, broken percent-encodings, very long strings), adds a random query string,
 * a random body (JSON of any shape, wrong types, huge and deeply nested values, invalid JSON or
 * UTF-8) and a right, wrong, revoked or garbage key. Every case asserts: never a 5xx, and every
 * 4xx body is exactly {"error": string}. A second property also fingerprints Redis and Postgres
 * around each case and asserts that a rejected request changed nothing.
 *
 * FUZZ_RUNS is the total number of generated cases (default 10,000: 9,000 + 1,000); set e.g.
 * FUZZ_RUNS=100000 for a longer local run. FUZZ_SEED replays a failing run.
 */
const TOTAL = Number(process.env.FUZZ_RUNS ?? 10_000);
const STATE_RUNS = Math.max(200, Math.round(TOTAL / 10));
const SHAPE_RUNS = Math.max(1, TOTAL - STATE_RUNS);
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;
// ~1 ms of server work per case at 10,000 cases; a generous ceiling for slow CI machines.
const TIMEOUT = Math.max(240_000, TOTAL * 40);

let t: TestServer;
let revokedKey: string;
let routes: Array<{ method: string; path: string }>;
/** Ids, keys and user ids that exist, so generated paths and bodies reach past the 404 checks. */
const pool: string[] = [];
/** The same, by what a path parameter names: v1 user ids and keys, admin ids and points system ids. */
const params = { userId: [] as string[], key: [] as string[], id: [] as string[], systemId: [] as string[] };
const userIds = ['fz-u1', 'fz-u2', 'fz-u3'];

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-10T12:00:00Z' });
  const attrs = await adminCreate(t, '/attributes', [
    { key: 'plan', name: 'Plan', type: 'user' },
    { key: 'city', name: 'City', type: 'user' },
    { key: 'source', name: 'Source', type: 'event' },
  ]);
  const [lessons, steps] = await adminCreate(t, '/metrics', [
    { key: 'lessons', name: 'Lessons' },
    { key: 'steps', name: 'Steps' },
  ]);
  const [xp, coins] = await adminCreate(t, '/points', [
    { key: 'xp', name: 'XP' },
    { key: 'coins', name: 'Coins', maxPoints: 1000 },
  ]);
  const triggers = await adminCreate(t, `/points/${xp.id}/triggers`, [
    { type: 'metric', points: 10, metricId: lessons.id, metricThreshold: 1, status: 'active' },
  ]);
  await adminCreate(t, `/points/${coins.id}/triggers`, [
    { type: 'metric', points: 1, metricId: steps.id, metricThreshold: 2, status: 'active' },
  ]);
  const levels = await adminCreate(t, `/points/${xp.id}/levels`, [
    { key: 'bronze', name: 'Bronze', points: 10 },
    { key: 'silver', name: 'Silver', points: 100 },
  ]);
  const boosts = await adminCreate(t, `/points/${xp.id}/boosts`, [
    { name: 'Double', start: '2025-03-01', multiplier: 2 },
  ]);
  const achievements = await adminCreate(t, '/achievements', [
    { key: 'ten', name: 'Ten', trigger: 'metric', metricId: lessons.id, metricValue: 10, status: 'active' },
    { key: 'streak3', name: 'Streak 3', trigger: 'streak', streakLength: 3, status: 'active' },
    { key: 'manual', name: 'Manual', trigger: 'api', status: 'active' },
  ]);
  const boards = await adminCreate(t, '/leaderboards', [
    { key: 'lb-lessons', name: 'Lessons', rankBy: 'metric', metricId: lessons.id, status: 'active' },
    {
      key: 'lb-xp',
      name: 'XP',
      rankBy: 'points',
      pointsSystemId: xp.id,
      status: 'active',
      breakdownAttributes: [attrs[1].id],
      runUnit: 'day',
      runInterval: 7,
      start: '2025-03-03',
    },
    { key: 'lb-streak', name: 'Streak', rankBy: 'streak', status: 'active' },
  ]);
  const hooks = await adminCreate(t, '/webhooks', [{ url: 'https://hooks.example/laurel' }]).catch(() => []);
  const settings = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    frequency: 'daily',
    mode: 'any',
    conditions: [{ metricId: lessons.id, threshold: 1 }],
    freezesEnabled: true,
    maxFreezes: 2,
    initialFreezes: 1,
  });
  expect(settings.status).toBe(200);
  for (const [i, u] of userIds.entries()) {
    const r = await t.api('POST', '/v1/metrics/lessons/event', {
      user: { id: u, tz: 'Europe/Paris', attributes: { plan: 'pro', city: `c${i}` } },
      value: 3 + i,
      attributes: { source: 'web' },
    });
    expect(r.status).toBe(201);
  }
  const revoked = generateApiKey();
  await t.deps.db.insert(apiKeys).values({
    name: 'revoked',
    kind: 'application',
    prefix: revoked.prefix,
    secretHash: revoked.secretHash,
    status: 'revoked',
  });
  await t.deps.catalog.reload();
  revokedKey = revoked.key;

  pool.push(
    ...[
      ...attrs,
      lessons,
      steps,
      xp,
      coins,
      ...triggers,
      ...levels,
      ...boosts,
      ...achievements,
      ...boards,
      ...hooks,
    ].map((r: { id: string }) => r.id),
    ...['plan', 'city', 'source', 'lessons', 'steps', 'xp', 'coins', 'ten', 'streak3', 'manual'],
    ...['lb-lessons', 'lb-xp', 'lb-streak', 'bronze', 'silver'],
    ...userIds,
    randomUUID(),
  );
  params.userId.push(...userIds);
  params.key.push(
    ...['lessons', 'steps', 'xp', 'coins', 'ten', 'streak3', 'manual', 'lb-lessons', 'lb-xp', 'lb-streak'],
  );
  params.id.push(...pool.filter((p) => /^[0-9a-f-]{36}$/.test(p)));
  params.systemId.push(xp.id, coins.id);

  routes = [];
  const seen = new Set<string>();
  for (const r of t.app.routes) {
    if (r.method === 'ALL') continue; // middleware
    if (!/^\/(v1|api|admin\/v1)\//.test(r.path)) continue;
    // Starts a background rebuild that replaces Redis state: exercised by rebuild.test.ts.
    if (r.method === 'POST' && r.path === '/admin/v1/rebuild') continue;
    const id = `${r.method} ${r.path}`;
    if (!seen.has(id)) {
      seen.add(id);
      routes.push({ method: r.method, path: r.path });
    }
  }
}, 120_000);
afterAll(async () => t?.close());

// ---------------------------------------------------------------- generators

/** A configured id or key (read lazily: the pool is filled in beforeAll). */
const poolItem = fc.nat().map((i) => pool[i % pool.length]!);
const CONTROL = fc.string({ unit: fc.integer({ min: 0, max: 31 }).map((n) => String.fromCharCode(n)) });
const UNICODE = fc.string({ unit: 'binary', maxLength: 40 });
const NASTY = fc.constantFrom(
  '',
  ' ',
  '\u0000',
  '\u0000abc',
  'a\nb',
  '\t',
  '\u200b',
  '\ufeff',
  '😀',
  'e\u0301',
  '\ud800',
  '\udfff',
  'NaN',
  'null',
  'undefined',
  'true',
  '-1',
  '0',
  '1e400',
  '9007199254740993',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  '*',
  '?',
  '#',
  '%',
  ':',
  '{',
  '}',
  '[',
  ']',
  '\\',
  '"',
  "'",
  '<script>',
  '../../etc/passwd',
  '00000000-0000-0000-0000-000000000000',
  'ZZZZZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZZZZZZZZZ',
);
const LONG = fc.oneof(
  fc.constantFrom(254, 255, 256, 1000, 1025, 5000, 70_000).map((n) => 'x'.repeat(n)),
  fc.nat({ max: 3000 }).map((n) => 'é'.repeat(n)),
);
/** A string for ids, keys, values and attribute names: configured ones or hostile ones. */
const str: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: poolItem },
  { weight: 3, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 2, arbitrary: UNICODE },
  { weight: 1, arbitrary: CONTROL },
  { weight: 2, arbitrary: NASTY },
  { weight: 1, arbitrary: LONG },
  { weight: 1, arbitrary: fc.uuid() },
  { weight: 1, arbitrary: fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)) },
  { weight: 1, arbitrary: fc.constantFrom('UTC', 'Europe/Paris', 'America/New_York', 'Mars/Olympus', 'utc') },
);

/** A raw (already encoded) path segment. */
const RAW_SEGMENT = fc.constantFrom(
  '%',
  '%zz',
  '%00',
  '%0a',
  '%2F',
  '%2f..%2f',
  '%2e%2e',
  '%ED%A0%80',
  '%FF%FE',
  '%C0%AF',
  '%25',
  '%E2%80%AE',
  '+',
  '%20',
  '..',
  '.',
  ';',
  '%3F',
  '%23',
);
const encodeSegment = (s: string) => {
  try {
    return encodeURIComponent(s);
  } catch {
    return '%ED%A0%80'; // a lone surrogate: its UTF-8 bytes, which are invalid
  }
};
const safeDecode = (s: string) => {
  try {
    return decodeURI(s);
  } catch {
    return s;
  }
};
const segment = fc.oneof(
  { weight: 6, arbitrary: poolItem },
  { weight: 6, arbitrary: str.map(encodeSegment) },
  { weight: 1, arbitrary: RAW_SEGMENT },
);

const FIELDS = [
  'user',
  'id',
  'value',
  'attributes',
  'email',
  'name',
  'tz',
  'deviceTokens',
  'subscribeToEmails',
  'key',
  'kind',
  'status',
  'type',
  'trigger',
  'metricId',
  'metricValue',
  'metricThreshold',
  'metricKey',
  'points',
  'pointsSystemId',
  'achievementId',
  'streakLength',
  'rankBy',
  'breakdownAttributes',
  'maxParticipants',
  'start',
  'end',
  'runUnit',
  'runInterval',
  'multiplier',
  'rounding',
  'userId',
  'userIds',
  'userAttributes',
  'eventAttributes',
  'attributeId',
  'attributeValue',
  'url',
  'eventTypes',
  'enabled',
  'rotateSecret',
  'secret',
  'rateLimitPerSecond',
  'description',
  'badgeUrl',
  'frequency',
  'mode',
  'conditions',
  'threshold',
  'freezesEnabled',
  'maxFreezes',
  'initialFreezes',
  'freezeAutoEarnAmount',
  'freezeAutoEarnInterval',
  'timeUnit',
  'timeInterval',
  'maxPoints',
  'unitType',
  'units',
  'users',
  'freezes',
  'email',
  'push',
  'achievementCompleted',
  'numberOfFreezes',
  '__proto__',
  'constructor',
];
const number = fc.oneof(
  fc.integer(),
  fc.integer({ min: -5, max: 200 }),
  fc.double(),
  fc.constantFrom(0, -0, 1, 1.5, 1e21, 1e308, -1e308, 2 ** 53, 2 ** 53 + 2, 5e-324, 0.000001, 0.0000001),
);
const scalar: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: str },
  { weight: 3, arbitrary: number },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
);
/** JSON values shaped like the API's bodies: known field names, configured ids, wrong types. */
const { shaped } = fc.letrec<{ shaped: unknown; obj: Record<string, unknown> }>((tie) => ({
  shaped: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 5, arbitrary: scalar },
    { weight: 3, arbitrary: tie('obj') },
    { weight: 2, arbitrary: fc.array(tie('shaped'), { maxLength: 5 }) },
  ),
  obj: fc.dictionary(
    fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...FIELDS) }, { weight: 1, arbitrary: str }),
    tie('shaped'),
    { maxKeys: 8 },
  ) as fc.Arbitrary<Record<string, unknown>>,
}));
const userId = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...userIds) }, { weight: 2, arbitrary: str });
const attrMap = fc.dictionary(
  fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('plan', 'city', 'source') },
    { weight: 1, arbitrary: str },
  ),
  fc.oneof({ weight: 4, arbitrary: str }, { weight: 1, arbitrary: scalar }),
  { maxKeys: 4 },
);
const maybeWrong = <T>(a: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 6, arbitrary: a as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: shaped });
const userObj = fc.record(
  {
    id: maybeWrong(userId),
    tz: maybeWrong(fc.constantFrom('UTC', 'Europe/Paris', 'Pacific/Kiritimati', 'Nowhere/City')),
    email: maybeWrong(fc.oneof(fc.emailAddress(), str)),
    name: maybeWrong(str),
    deviceTokens: maybeWrong(fc.array(str, { maxLength: 3 })),
    subscribeToEmails: maybeWrong(fc.boolean()),
    attributes: maybeWrong(attrMap),
  },
  { requiredKeys: [] },
);
const dayArb = fc
  .date({ min: new Date('2024-01-01'), max: new Date('2026-01-01'), noInvalidDate: true })
  .map((d) => d.toISOString().slice(0, 10));
/** Bodies close to what each route accepts, with fields missing, of wrong types or out of range. */
const template: fc.Arbitrary<unknown> = fc.oneof(
  fc.record(
    { user: maybeWrong(userObj), value: maybeWrong(number), attributes: maybeWrong(attrMap) },
    { requiredKeys: [] },
  ),
  userObj,
  fc.record({ user: maybeWrong(userObj) }, { requiredKeys: [] }),
  fc.record(
    {
      enabled: maybeWrong(fc.boolean()),
      frequency: maybeWrong(fc.constantFrom('daily', 'weekly', 'monthly', 'yearly')),
      mode: maybeWrong(fc.constantFrom('all', 'any')),
      conditions: maybeWrong(
        fc.array(fc.record({ metricId: maybeWrong(poolItem), threshold: maybeWrong(number) })),
      ),
      freezesEnabled: maybeWrong(fc.boolean()),
      maxFreezes: maybeWrong(number),
      initialFreezes: maybeWrong(number),
    },
    { requiredKeys: [] },
  ),
  fc.record(
    {
      freezes: maybeWrong(fc.array(fc.record({ userId: maybeWrong(userId) }), { maxLength: 3 })),
      users: maybeWrong(fc.array(fc.record({ id: maybeWrong(userId) }), { maxLength: 3 })),
      userId: maybeWrong(userId),
      start: maybeWrong(dayArb),
      end: maybeWrong(dayArb),
    },
    { requiredKeys: [] },
  ),
  fc.array(
    fc.record(
      {
        id: maybeWrong(poolItem),
        key: maybeWrong(str),
        name: maybeWrong(str),
        type: maybeWrong(fc.constantFrom('user', 'event', 'metric', 'time', 'achievement')),
        status: maybeWrong(fc.constantFrom('active', 'inactive', 'revoked', 'finished')),
        trigger: maybeWrong(fc.constantFrom('metric', 'streak', 'api')),
        rankBy: maybeWrong(fc.constantFrom('metric', 'points', 'streak')),
        metricId: maybeWrong(poolItem),
        pointsSystemId: maybeWrong(poolItem),
        points: maybeWrong(number),
        metricValue: maybeWrong(number),
        metricThreshold: maybeWrong(number),
        multiplier: maybeWrong(number),
        start: maybeWrong(dayArb),
        end: maybeWrong(dayArb),
        url: maybeWrong(fc.webUrl()),
        kind: maybeWrong(fc.constantFrom('admin', 'application')),
        rateLimitPerSecond: maybeWrong(number),
        breakdownAttributes: maybeWrong(fc.array(poolItem, { maxLength: 3 })),
      },
      { requiredKeys: [] },
    ),
    { minLength: 1, maxLength: 3 },
  ),
);
const deep = fc
  .tuple(fc.constantFrom('[', '{"a":', '{"user":'), fc.constantFrom(10, 100, 1000, 10_000, 100_000))
  .map(([open, depth]) => {
    const close = open === '[' ? ']' : '}';
    return `${open.repeat(depth)}1${close.repeat(depth)}`;
  });
const wide = fc.tuple(fc.constantFrom(101, 1000, 20_000), fc.boolean()).map(([n, asArray]) =>
  asArray
    ? JSON.stringify(Array.from({ length: n }, (_, i) => ({ key: `k${i}`, name: `n${i}`, id: `fz-w${i}` })))
    : JSON.stringify({
        user: {
          id: 'fz-wide',
          attributes: Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${i}`, 'v'])),
        },
        value: 1,
        attributes: Object.fromEntries(Array.from({ length: n }, (_, i) => [`e${i}`, 'v'])),
      }),
);
const body: fc.Arbitrary<string | Uint8Array | undefined> = fc.oneof(
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 10, arbitrary: shaped.map((v) => JSON.stringify(v)) },
  { weight: 12, arbitrary: template.map((v) => JSON.stringify(v)) },
  { weight: 4, arbitrary: fc.array(shaped, { minLength: 1, maxLength: 4 }).map((v) => JSON.stringify(v)) },
  { weight: 2, arbitrary: fc.jsonValue().map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      '{',
      '[1,',
      'nul',
      '{"a":1}x',
      '\u0000',
      '"\\ud800"',
      '1e999999',
      '-',
    ),
  },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(new Uint8Array([0xff, 0xfe]), new Uint8Array([0x22, 0xc3, 0x28, 0x22])),
  },
  { weight: 1, arbitrary: deep },
  { weight: 1, arbitrary: wide },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(1024 * 1024 + 1, 200_000, 6 * 1024 * 1024)
      .map((n) => JSON.stringify({ user: { id: 'fz-huge' }, value: 1, pad: 'x'.repeat(n) })),
  },
);

const QUERY_NAMES = [
  'limit',
  'skip',
  'offset',
  'ids',
  'userId',
  'userIds',
  'userAttributes',
  'startDate',
  'endDate',
  'aggregation',
  'run',
  'year',
  'awards',
  'historyPeriods',
  'numEvents',
  'includeFinished',
  'includeIncomplete',
  'status',
  'type',
];
const queryValue = fc.oneof(
  { weight: 3, arbitrary: str },
  { weight: 2, arbitrary: fc.integer({ min: -3, max: 200 }).map(String) },
  { weight: 1, arbitrary: fc.constantFrom('99999999999999999999', '1.5', '1e3', '-0', '+1', ' 1', '0x10') },
  {
    weight: 1,
    arbitrary: fc.constantFrom('daily', 'weekly', 'monthly', 'true', 'false', 'plan:pro', 'city:c1,plan:pro'),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom('2025-03-01', '2025-02-29', '2024-02-29', '1900-01-01', '9999-12-31'),
  },
  { weight: 1, arbitrary: fc.array(poolItem, { maxLength: 120 }).map((a) => a.join(',')) },
);
const query = fc.oneof(
  { weight: 3, arbitrary: fc.constant('') },
  {
    weight: 6,
    arbitrary: fc
      .array(
        fc.tuple(
          fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...QUERY_NAMES) }, { weight: 1, arbitrary: str }),
          queryValue,
        ),
        {
          maxLength: 5,
        },
      )
      .map((pairs) => `?${pairs.map(([k, v]) => `${encodeSegment(k)}=${encodeSegment(v)}`).join('&')}`),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom('?', '?&&', '?=', '?limit', '?limit=%zz', '?%ED%A0%80=1', '?a=%00'),
  },
);

type KeyChoice = 'right' | 'wrong-kind' | 'missing' | 'revoked' | 'garbage' | 'unknown';
const keyChoice = fc.oneof(
  { weight: 20, arbitrary: fc.constant<KeyChoice>('right') },
  {
    weight: 1,
    arbitrary: fc.constantFrom<KeyChoice>('wrong-kind', 'missing', 'revoked', 'garbage', 'unknown'),
  },
);

interface Case {
  method: string;
  path: string;
  body: string | Uint8Array | undefined;
  key: KeyChoice;
  garbage: string;
  contentType: string | undefined;
  idempotencyKey: string | undefined;
}
/** undefined five times out of six. */
const rarely = <T>(a: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 5, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: a });
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const fuzzCase: fc.Arbitrary<Case> = fc
  .record({
    route: fc.oneof(
      { weight: 12, arbitrary: fc.nat().map((i) => routes[i % routes.length]!) },
      {
        weight: 1,
        arbitrary: fc
          .tuple(
            fc.constantFrom('/v1', '/api', '/admin/v1', '/v2', '/admin'),
            fc.array(segment, { maxLength: 4 }),
            fc.constantFrom(...METHODS),
          )
          .map(([base, segs, method]) => ({ method, path: `${base}/${segs.join('/')}` })),
      },
    ),
    otherMethod: fc.oneof(
      { weight: 14, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: fc.constantFrom(...METHODS, 'HEAD', 'OPTIONS') },
    ),
    segments: fc.array(segment, { minLength: 3, maxLength: 3 }),
    // Per path parameter: a configured value of the right kind (reaches the handler), or a hostile one.
    typed: fc.array(
      fc.nat(3).map((n) => n > 0),
      { minLength: 3, maxLength: 3 },
    ),
    pick: fc.array(fc.nat(), { minLength: 3, maxLength: 3 }),
    trailing: fc.oneof(
      { weight: 20, arbitrary: fc.constant('') },
      { weight: 1, arbitrary: fc.constantFrom('/', '//', '/x') },
    ),
    query,
    body,
    key: keyChoice,
    garbage: fc.string({ maxLength: 80 }),
    contentType: rarely(
      fc.constantFrom(
        'application/json',
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data',
        'application/json; charset=latin1',
      ),
    ),
    idempotencyKey: rarely(
      fc.oneof(
        str.filter((s) => /^[\x20-\x7e]*$/.test(s)),
        fc.constant('x'.repeat(300)),
      ),
    ),
  })
  .map((r) => {
    let i = 0;
    const path = r.route.path.replace(/:([A-Za-z]+)(\{[^}]*\})?/g, (_, name: string) => {
      const n = i++ % 3;
      if (!r.typed[n]) return r.segments[n]!;
      const candidates =
        name === 'systemId'
          ? params.systemId
          : name === 'key'
            ? params.key
            : r.route.path.startsWith('/admin/')
              ? params.id
              : params.userId;
      return encodeSegment(candidates[r.pick[n]! % candidates.length]!);
    });
    let method = r.otherMethod ?? r.route.method;
    // Never start the background rebuild (it replaces Redis state): rebuild.test.ts covers it.
    if (method === 'POST' && /^\/admin\/v1\/+rebuild/i.test(safeDecode(path))) method = 'GET';
    return {
      method,
      path: `${path}${r.trailing}${r.query}`,
      body: r.body,
      key: r.key,
      garbage: r.garbage,
      contentType: r.contentType ?? (r.body === undefined ? undefined : 'application/json'),
      idempotencyKey: r.idempotencyKey,
    };
  });

// ---------------------------------------------------------------- running a case

async function send(c: Case) {
  const isAdmin = c.path.startsWith('/admin/');
  const right = isAdmin ? t.adminKey : t.appKey;
  const wrong = isAdmin ? t.appKey : t.adminKey;
  const headers: Record<string, string> = {};
  const key = {
    right,
    'wrong-kind': wrong,
    missing: undefined,
    revoked: revokedKey,
    garbage: c.garbage,
    unknown: generateApiKey().key,
  }[c.key];
  if (key !== undefined) headers['X-API-KEY'] = key;
  if (c.contentType) headers['Content-Type'] = c.contentType;
  if (c.idempotencyKey !== undefined) headers['Idempotency-Key'] = c.idempotencyKey;
  const withBody = c.body !== undefined && c.method !== 'GET' && c.method !== 'HEAD';
  const res = await t.app.request(c.path, {
    method: c.method,
    headers,
    ...(withBody ? { body: c.body as RequestInit['body'] } : {}),
  });
  const text = await res.text();
  return { status: res.status, text };
}

const cut = (s: string) => (s.length > 300 ? `${s.slice(0, 300)}…(${s.length})` : s);
const describeCase = (c: Case) =>
  JSON.stringify({
    ...c,
    path: cut(c.path),
    idempotencyKey: c.idempotencyKey && cut(c.idempotencyKey),
    body: typeof c.body === 'string' ? cut(c.body) : c.body && [...c.body.slice(0, 100)],
  });

function checkResponse(c: Case, r: { status: number; text: string }) {
  if (r.status >= 500) throw new Error(`${r.status} ${r.text} for ${describeCase(c)}`);
  if (r.status >= 400 && c.method !== 'HEAD') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(r.text);
    } catch {
      throw new Error(`${r.status} body is not JSON: ${r.text.slice(0, 200)} for ${describeCase(c)}`);
    }
    const ok =
      parsed !== null &&
      typeof parsed === 'object' &&
      !Array.isArray(parsed) &&
      Object.keys(parsed).length === 1 &&
      typeof (parsed as { error?: unknown }).error === 'string' &&
      (parsed as { error: string }).error.length > 0;
    if (!ok)
      throw new Error(
        `${r.status} body is not {"error": string}: ${r.text.slice(0, 200)} for ${describeCase(c)}`,
      );
  }
}

/**
 * Every state key under the test prefix (not rate-limit buckets, not op reply markers) → a digest of
 * its canonical contents (not DUMP: see keyContents).
 */
async function redisFingerprint(): Promise<Map<string, string>> {
  const keys = (await t.redisKeys()).filter((k) => !k.includes(':op:'));
  const out = new Map<string, string>();
  for (let i = 0; i < keys.length; i += 200) {
    const batch = keys.slice(i, i + 200);
    const contents = await Promise.all(batch.map((k) => keyContents(t.deps.redis, k)));
    batch.forEach((k, j) => {
      out.set(k, createHash('sha1').update(JSON.stringify(contents[j])).digest('hex'));
    });
  }
  return out;
}

function redisDiff(a: Map<string, string>, b: Map<string, string>): string[] {
  const keys = new Set([...a.keys(), ...b.keys()]);
  return [...keys].filter((k) => a.get(k) !== b.get(k));
}

let tables: string[] | undefined;
/** Row count and a digest of the contents of every table. */
async function postgresFingerprint(): Promise<string> {
  // wire_snapshots is a content-addressed cache of the configuration's webhook objects: an op that
  // reaches the user script stores its configuration's once per process, whatever the op's outcome
  // (src/services/wire-snapshots.ts). It holds nothing of a request.
  tables ??= (
    await t.deps.sql<
      { tablename: string }[]
    >`select tablename from pg_tables where schemaname = 'public' and tablename <> 'wire_snapshots' order by 1`
  ).map((r) => r.tablename);
  const q = tables
    .map(
      (tb) =>
        `select '${tb}' as t, count(*)::int as n, md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as h from "${tb}" x`,
    )
    .join(' union all ');
  const rows = await t.deps.sql.unsafe<{ t: string; n: number; h: string }[]>(q);
  return rows.map((r) => `${r.t}:${r.n}:${r.h}`).join(',');
}

// ---------------------------------------------------------------- properties

const stats = { cases: 0, byStatus: new Map<number, number>() };
const count = (s: number) => {
  stats.cases++;
  stats.byStatus.set(s, (stats.byStatus.get(s) ?? 0) + 1);
};

describe('fuzzing every route of both APIs', () => {
  it('enumerates the routes of both APIs from the app', () => {
    const paths = routes.map((r) => `${r.method} ${r.path}`);
    expect(paths).toContain('POST /v1/metrics/:key/event');
    expect(paths).toContain('POST /api/metrics/:key/event');
    expect(paths).toContain('GET /admin/v1/metrics/:id');
    expect(routes.length).toBeGreaterThan(60);
  });

  it(
    `never answers 5xx and always answers 4xx with exactly {"error": string} (${SHAPE_RUNS} cases)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(fuzzCase, async (c) => {
          const r = await send(c);
          count(r.status);
          checkResponse(c, r);
        }),
        { numRuns: SHAPE_RUNS, seed: SEED, endOnFailure: true },
      );
    },
    TIMEOUT,
  );

  it(
    `changes nothing in Redis or Postgres for a rejected request (${STATE_RUNS} cases)`,
    async () => {
      let rejected = 0;
      await fc.assert(
        fc.asyncProperty(fuzzCase, async (c) => {
          // An accepted admin request before this one may have started backdating an achievement
          // over every user, in the background: it writes users, so it must finish first.
          await awaitBackdates(t.deps);
          const before = { redis: await redisFingerprint(), pg: await postgresFingerprint() };
          const r = await send(c);
          count(r.status);
          checkResponse(c, r);
          if (r.status >= 400) {
            rejected++;
            const changed = redisDiff(before.redis, await redisFingerprint());
            if (changed.length)
              throw new Error(`${r.status} changed Redis ${changed.slice(0, 5)}: ${describeCase(c)}`);
            if ((await postgresFingerprint()) !== before.pg)
              throw new Error(`${r.status} changed Postgres: ${describeCase(c)}`);
          }
        }),
        { numRuns: STATE_RUNS, seed: SEED, endOnFailure: true },
      );
      expect(rejected).toBeGreaterThan(STATE_RUNS / 2);
    },
    TIMEOUT,
  );

  it('ran at least FUZZ_RUNS cases and reached success paths too', () => {
    const summary = [...stats.byStatus.entries()].sort((a, b) => a[0] - b[0]);
    console.log(
      `fuzz: ${stats.cases} cases over ${routes.length} routes; statuses ${JSON.stringify(summary)}`,
    );
    expect(stats.cases).toBeGreaterThanOrEqual(TOTAL);
    const ok = summary.filter(([s]) => s < 300).reduce((n, [, k]) => n + k, 0);
    expect(ok).toBeGreaterThan(0);
  });
});
