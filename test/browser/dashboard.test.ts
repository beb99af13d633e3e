import { existsSync, mkdirSync } from 'node:fs';
import { request } from 'node:http';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookDeliveries } from '../../src/db/schema';
import { settleSimulations } from '../../src/simulations/runs';
import { HistoryWriter } from '../../src/workers/history-writer';
import { createTestServer, type TestServer } from '../helpers/server';

// Drives Debian's chromium against a real Laurel on a socket. No browser download: when
// /usr/bin/chromium is missing these tests fail (install it with `apt-get install -y chromium`).
const CHROMIUM = '/usr/bin/chromium';
const SHOTS = new URL('./screenshots/', import.meta.url).pathname;
const START = Date.parse('2025-03-10T09:00:00Z');
const DAY = 86_400_000;

let t: TestServer;
let origin: string;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  mkdirSync(SHOTS, { recursive: true });
  t = await createTestServer({ now: new Date(START).toISOString() });
  origin = await t.listen();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
  page.setDefaultTimeout(10_000);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

const shot = (name: string) => page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
const go = (path: string) => page.goto(`${origin}${path}`);
const flash = () => page.locator('.flash.ok').first().textContent();

/** POSTs an event the way a backend does (node:http: no browser markers such as Sec-Fetch-Mode). */
function postEvent(key: string, body: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${origin}/v1/metrics/lessons/event`,
      { method: 'POST', headers: { 'X-API-KEY': key, 'Content-Type': 'application/json' } },
      (res) => {
        let text = '';
        res.on('data', (d) => {
          text += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

async function sendEvent(userId: string, value: number, user: Record<string, unknown> = {}) {
  const res = await postEvent(t.appKey, { user: { id: userId, ...user }, value });
  expect(res.status, res.text).toBe(201);
}

describe('dashboard in a browser', () => {
  it('signs in with an admin API key', async () => {
    await go('/dashboard');
    expect(page.url()).toContain('/dashboard/login');
    await page.fill('#f-key', t.appKey);
    await page.click('button[type=submit]');
    await expect(page.locator('.err').textContent()).resolves.toContain('not an active admin API key');
    await shot('login');
    await page.fill('#f-key', t.adminKey);
    await page.click('button[type=submit]');
    await page.waitForURL(`${origin}/dashboard`);
    await expect(page.locator('h1').textContent()).resolves.toBe('Overview');
  });

  it('creates a metric, and keeps the input and shows the error next to the field when a value is invalid', async () => {
    await go('/dashboard/metrics');
    await page.fill('#f-name', 'Lessons completed');
    await page.fill('#f-key', 'lessons completed');
    await page.fill('#f-units', 'lessons');
    await page.click('#metric-form button[type=submit]');
    const err = page.locator('[data-field=key] .err');
    await expect(err.textContent()).resolves.toContain('must match');
    await expect(page.inputValue('#f-key')).resolves.toBe('lessons completed');
    await expect(page.inputValue('#f-name')).resolves.toBe('Lessons completed');
    await expect(page.inputValue('#f-units')).resolves.toBe('lessons');
    await shot('form-error');
    await page.fill('#f-key', 'lessons');
    await page.click('#metric-form button[type=submit]');
    await expect(flash()).resolves.toContain('Metric “Lessons completed” created');
    await page.fill('#f-name', 'Minutes practised');
    await page.fill('#f-key', 'minutes');
    await page.fill('#f-units', 'min');
    await page.click('#metric-form button[type=submit]');
    await expect(flash()).resolves.toContain('created');
    await shot('metrics');
  });

  it('refuses a form submitted without the CSRF token', async () => {
    await go('/dashboard/metrics');
    await page.fill('#f-name', 'Sneaky');
    await page.fill('#f-key', 'sneaky');
    await page.locator('#metric-form input[name=_csrf]').evaluate((el) => el.remove());
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/dashboard/metrics') && r.request().method() === 'POST'),
      page.click('#metric-form button[type=submit]'),
    ]);
    expect(response.status()).toBe(403);
    await expect(page.locator('h2').textContent()).resolves.toBe('Request refused');
    const metrics = await t.admin('GET', '/metrics?limit=100');
    expect(metrics.body.map((m: { key: string }) => m.key)).toEqual(['lessons', 'minutes']);
  });

  it('turns streaks on and creates an achievement', async () => {
    await go('/dashboard/streaks');
    await page.check('input[name=enabled]');
    await page.selectOption('#f-conditions\\.0\\.metricId', { label: 'Lessons completed' });
    await page.fill('#f-conditions\\.0\\.threshold', '1');
    await page.check('input[name=freezesEnabled]');
    await page.fill('#f-maxFreezes', '2');
    await page.click('#streak-form button[type=submit]');
    await expect(flash()).resolves.toContain('Streak settings saved');

    await go('/dashboard/achievements');
    await page.fill('#f-name', 'Ten lessons');
    await page.fill('#f-key', 'ten-lessons');
    await page.selectOption('#f-trigger', 'metric');
    await page.selectOption('#f-metricId', { label: 'Lessons completed' });
    await page.fill('#f-metricValue', '10');
    await page.check('input[name=activate]');
    await page.click('#achievement-form button[type=submit]');
    await expect(flash()).resolves.toContain('Achievement “Ten lessons” created');
    await page.fill('#f-name', 'First lesson');
    await page.fill('#f-key', 'first-lesson');
    await page.selectOption('#f-metricId', { label: 'Lessons completed' });
    await page.fill('#f-metricValue', '1');
    await page.check('input[name=activate]');
    await page.click('#achievement-form button[type=submit]');
    await expect(flash()).resolves.toContain('created');
  });

  it('creates a points system with a trigger and levels', async () => {
    await go('/dashboard/points');
    await page.fill('#f-name', 'XP');
    await page.fill('#f-key', 'xp');
    await page.fill('#f-description', 'Experience for every lesson');
    await page.click('#system-form button[type=submit]');
    await expect(flash()).resolves.toContain('Points system “XP” created');

    await page.selectOption('#trigger-form [name=type]', 'metric');
    await page.fill('#trigger-form [name=points]', '10');
    await page.selectOption('#trigger-form [name=metricId]', { label: 'Lessons completed' });
    await page.fill('#trigger-form [name=metricThreshold]', '1');
    await page.selectOption('#trigger-form [name=status]', 'active');
    await page.click('#trigger-form button[type=submit]');
    await expect(flash()).resolves.toContain('Trigger added');

    for (const [name, key, points] of [
      ['Bronze', 'bronze', '50'],
      ['Silver', 'silver', '100'],
      ['Gold', 'gold', '250'],
    ] as const) {
      await page.fill('#level-form [name=name]', name);
      await page.fill('#level-form [name=key]', key);
      await page.fill('#level-form [name=points]', points);
      await page.click('#level-form button[type=submit]');
      await expect(flash()).resolves.toContain('Level added');
    }
    // A duplicate threshold is refused by the shared level validation, next to the field.
    await page.fill('#level-form [name=name]', 'Again');
    await page.fill('#level-form [name=key]', 'again');
    await page.fill('#level-form [name=points]', '100');
    await page.click('#level-form button[type=submit]');
    await expect(
      page.locator('#level-form .flash.error, #level-form .err').first().textContent(),
    ).resolves.toMatch(/points|level/i);
    await expect(page.inputValue('#level-form [name=key]')).resolves.toBe('again');
  });

  it('creates a leaderboard and activates it', async () => {
    await go('/dashboard/leaderboards');
    await page.fill('#f-name', 'XP champions');
    await page.fill('#f-key', 'xp-champions');
    await page.selectOption('#f-rankBy', 'points');
    await page.selectOption('#f-pointsSystemId', { label: 'XP' });
    await page.selectOption('#f-status', 'inactive');
    await page.click('#leaderboard-form button[type=submit]');
    await expect(flash()).resolves.toContain('Leaderboard “XP champions” created (inactive)');
    await page.click('form[action$="/status"] button:has-text("Activate")');
    await expect(flash()).resolves.toContain('is now active');
  });

  it('shows the user’s points, level and rank after events sent through the application API', async () => {
    const users: Array<[string, string, number[]]> = [
      ['alice', 'Alice Martin', [3, 2, 4, 1, 3, 2]],
      ['dave', 'Dave Okafor', [2, 0, 3, 3, 2, 1]],
      ['bob', 'Bob Chen', [1, 2, 0, 2, 1, 2]],
      ['carol', 'Carol Diaz', [0, 0, 1, 0, 2, 1]],
      ['erin', 'Erin Walsh', [0, 0, 0, 1, 0, 0]],
    ];
    for (let day = 0; day < 6; day++) {
      let minute = 0;
      for (const [id, name, perDay] of users) {
        if (!perDay[day]) continue;
        t.clock.set(START + day * DAY + minute++ * 60_000);
        await sendEvent(id, perDay[day]!, { name, tz: 'UTC' });
      }
    }

    // Six days passed on the server clock: the 12-hour session has expired, so sign in again.
    await go('/dashboard/users?id=alice');
    expect(page.url()).toContain('/dashboard/login?next=');
    await page.fill('#f-key', t.adminKey);
    await page.click('button[type=submit]');
    await page.waitForURL(`${origin}/dashboard/users?id=alice`);
    await expect(page.locator('[data-points=xp]').textContent()).resolves.toBe('150');
    await expect(page.locator('[data-level=xp]').textContent()).resolves.toBe('Level: Silver');
    await expect(page.locator('[data-rank=xp-champions]').textContent()).resolves.toBe('#1');
    await shot('user');

    await go('/dashboard/users?id=bob');
    await expect(page.locator('[data-points=xp]').textContent()).resolves.toBe('80');
    await expect(page.locator('[data-level=xp]').textContent()).resolves.toBe('Level: Bronze');
    await expect(page.locator('[data-rank=xp-champions]').textContent()).resolves.toBe('#3');

    await go('/dashboard/users?id=nobody');
    await expect(page.locator('.empty').textContent()).resolves.toContain('No user with the id');
  });

  it('shows rankings, the points histogram, achievements and the overview', async () => {
    // The histogram and completion counts read indexes the history writer maintains: let it catch up.
    await t.settle();
    await go('/dashboard/leaderboards');
    await shot('leaderboards');
    await page.click('a:has-text("XP champions")');
    const rows = page.locator('#rankings tbody tr');
    await rows.first().waitFor(); // the click navigates; count() does not wait
    await expect(rows.count()).resolves.toBe(5);
    await expect(rows.first().textContent()).resolves.toContain('Alice Martin');
    await shot('leaderboard');

    await go('/dashboard/points');
    await page.click('a:has-text("XP")');
    await page.locator('svg[aria-label="users per points range"] rect').first().waitFor();
    await expect(
      page.locator('svg[aria-label="users per points range"] rect').count(),
    ).resolves.toBeGreaterThan(0);
    await shot('points-system');

    await go('/dashboard/achievements');
    await expect(page.locator('tbody tr').first().textContent()).resolves.toContain('Ten lessons');
    await shot('achievements');

    await go('/dashboard/streaks');
    await shot('streaks');

    await go('/dashboard');
    await expect(page.locator('#recent-events tbody tr').count()).resolves.toBeGreaterThan(0);
    await shot('overview');
  });

  it('lists and searches users, and shows a user’s recent events and point awards', async () => {
    const writer = new HistoryWriter(t.deps, { consumer: 'browser' });
    while ((await writer.drainOnce()) > 0) {}
    await go('/dashboard/users');
    const ids = () => page.locator('#users tbody tr td:first-child code').allTextContents();
    // Newest first: erin's first event came last.
    await expect(ids()).resolves.toEqual(['erin', 'carol', 'bob', 'dave', 'alice']);
    await shot('users');
    await page.fill('#f-q', 'okafor');
    await page.click('#user-search button[type=submit]');
    await expect(ids()).resolves.toEqual(['dave']);
    await page.click('#users a:has-text("dave")');
    await page.waitForURL(/\/dashboard\/users\?id=dave/);
    await expect(page.locator('#user-events tbody tr').count()).resolves.toBe(5);
    await expect(page.locator('#user-awards tbody tr').first().textContent()).resolves.toContain('+');
    await shot('user-history');
  });

  it('shows participants per leaderboard and only the fields of the chosen trigger type', async () => {
    await go('/dashboard/leaderboards');
    await expect(page.locator('[data-participants=xp-champions]').textContent()).resolves.toBe('5');
    await expect(page.locator('[data-field=breakdownAttributes] .hint').textContent()).resolves.toContain(
      'Ctrl (⌘ on a Mac)',
    );
    const systems = await t.admin('GET', '/points');
    await go(`/dashboard/points/${systems.body[0].id}`);
    const visible = (name: string) => page.locator(`#trigger-form [data-field=${name}]`).isVisible();
    await page.selectOption('#trigger-form [name=type]', 'time');
    await expect(visible('timeInterval')).resolves.toBe(true);
    await expect(visible('timeUnit')).resolves.toBe(true);
    await expect(visible('metricId')).resolves.toBe(false);
    await expect(visible('achievementId')).resolves.toBe(false);
    await expect(visible('streakLength')).resolves.toBe(false);
    await page.locator('#trigger-form').screenshot({ path: `${SHOTS}trigger-form-time.png` });
    await page.selectOption('#trigger-form [name=type]', 'user_creation');
    for (const f of ['metricId', 'metricThreshold', 'achievementId', 'streakLength', 'timeInterval']) {
      await expect(visible(f), f).resolves.toBe(false);
    }
    await page.selectOption('#trigger-form [name=type]', 'metric');
    await expect(visible('metricId')).resolves.toBe(true);
    await expect(visible('metricThreshold')).resolves.toBe(true);
    await expect(visible('timeInterval')).resolves.toBe(false);
    // The triggers table reads as English ("Every 1 Lessons" before).
    await expect(page.content()).resolves.not.toMatch(/Every 1 /);
  });

  it('shows failing webhook endpoints, deliveries in retry, history points and warnings on the overview', async () => {
    const created = await t.admin('POST', '/webhooks', [
      { url: 'https://hooks.example.com/laurel', eventTypes: ['points.changed'] },
      { url: 'https://ok.example.com/laurel', eventTypes: ['points.changed'] },
    ]);
    const failing = created.body.created[0].id;
    const now = new Date(t.clock.now());
    await t.deps.db.insert(webhookDeliveries).values({
      endpointId: failing,
      eventId: 'evt-1',
      type: 'points.changed',
      payload: {},
      status: 'pending',
      attempts: 3,
      lastAttemptAt: now,
      nextAttemptAt: new Date(t.clock.now() + 240_000),
      lastStatusCode: 503,
      lastError: 'HTTP 503',
      created: now,
    });
    await go('/dashboard/webhooks');
    await expect(
      page.locator('[data-endpoint-state="https://hooks.example.com/laurel"] .badge').textContent(),
    ).resolves.toBe('failing');
    await expect(
      page.locator('[data-endpoint-state="https://ok.example.com/laurel"] .badge').textContent(),
    ).resolves.toBe('active');
    await shot('webhooks');
    await page.click('[data-endpoint-state="https://hooks.example.com/laurel"] a');
    // The click navigates: wait for the deliveries page before counting (count() does not wait).
    await page.locator('.badge.retrying').first().waitFor();
    await expect(page.locator('.badge.retrying').count()).resolves.toBe(1);
    await shot('webhook-deliveries');
    await go('/dashboard');
    await expect(page.locator('[data-warning=webhooks]').textContent()).resolves.toContain(
      '1 webhook endpoint is failing',
    );
    // Every event is in the history by now (the outbox is empty); its points still show.
    const points = await page.locator('#recent-events tbody tr td:last-child').allTextContents();
    expect(points.some((p) => p.startsWith('+'))).toBe(true);
    await shot('overview-warnings');
  });

  it('serves a favicon, leads from / to the dashboard, and opens /docs/ with a trailing slash', async () => {
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('response', (r) => {
      if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
    });
    await page.goto(`${origin}/`);
    await page.waitForURL(`${origin}/dashboard`);
    await page.waitForLoadState('networkidle');
    page.removeAllListeners('console');
    page.removeAllListeners('response');
    expect(problems).toEqual([]);
    // The reference page itself may try an online validator (no network here): only its URL is checked.
    await page.goto(`${origin}/docs/`);
    await page.waitForURL(`${origin}/docs`);
    await page.locator('#swagger-ui').waitFor({ state: 'attached' });
  });

  it('creates an application key that is shown once, then revokes it', async () => {
    await go('/dashboard/integration');
    await page.fill('#f-name', 'Mobile backend');
    await page.selectOption('#f-kind', 'application');
    await page.click('#key-form button[type=submit]');
    const key = (await page.locator('#new-secret').textContent()) ?? '';
    expect(key).toMatch(/^[a-z0-9]{8}\.[A-Za-z0-9_-]{43}$/);
    const res = await postEvent(key, { user: { id: 'frank' }, value: 1 });
    expect(res.status, res.text).toBe(201);
    await shot('integration');
    await go('/dashboard/integration');
    expect(await page.content()).not.toContain(key);
    await page.click(`tr:has-text("Mobile backend") button:has-text("Revoke")`);
    await expect(flash()).resolves.toContain('Key revoked');
  });

  it('previews a draft on the recorded history: doubled trigger points and a new level, side by side', async () => {
    await t.settle();
    await go('/dashboard/simulations');
    const doc = JSON.parse(await page.inputValue('#f-document'));
    const xp = doc.pointsSystems[0];
    xp.triggers[0].points *= 2;
    xp.levels.push({ key: 'what-if-gold', name: 'Gold (draft)', points: 60 });
    await page.fill('#f-document', JSON.stringify(doc, null, 2));
    await page.click(`form[action="/dashboard/simulations"] button[type=submit]`);
    await page.waitForURL(/\/dashboard\/simulations\/[0-9a-f-]{36}$/);
    await settleSimulations();
    await page.reload();
    await expect(page.locator('.stat').first().textContent()).resolves.toContain('Users replayed');
    await expect(page.locator('svg.chart').count()).resolves.toBeGreaterThanOrEqual(4);
    await expect(page.content()).resolves.toContain('Gold (draft)');
    await shot('simulation');
  });

  it('imports a CSV file of events with progress, and shows the issues of a rejected file', async () => {
    await go('/dashboard/import');
    const upload = async (name: string, text: string) => {
      await page.locator('#f-file').setInputFiles({ name, mimeType: 'text/csv', buffer: Buffer.from(text) });
      await page.getByRole('button', { name: 'Import' }).click();
    };
    // Rejected as a whole: every invalid event is named, nothing is recorded.
    await upload('bad.csv', 'key,userId,value\nlessons,imp-1,1\nnope,imp-2,1\nlessons,imp-3,abc\n');
    const issues = page.locator('#import-issues');
    await expect(issues.textContent()).resolves.toContain('2 invalid events');
    await expect(issues.textContent()).resolves.toContain('Event 2: Metric not found: nope');
    await expect(issues.textContent()).resolves.toContain('Event 3: value must be a number');
    await shot('import-rejected');
    expect((await t.api('GET', '/v1/users/imp-1')).status).toBe(404);

    await upload(
      'good.csv',
      'key,userId,value,tz\nlessons,imp-1,2,Europe/Berlin\nlessons,imp-2,1,\nlessons,imp-1,3,\n',
    );
    await page.locator('#import-progress[data-done="true"]').waitFor();
    await expect(page.locator('#import-count').textContent()).resolves.toBe('3 of 3');
    await shot('import-done');
    const metrics = (await t.api('GET', '/v1/users/imp-1/metrics')).body;
    expect(metrics.find((m: any) => m.key === 'lessons').current).toBe(5);
  });

  it('signs out', async () => {
    await go('/dashboard');
    await page.click('.side button:has-text("Sign out")');
    await page.waitForURL(/\/dashboard\/login/);
    await go('/dashboard/metrics');
    expect(page.url()).toContain('/dashboard/login');
  });
});
