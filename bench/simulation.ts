/**
 * Replay speed of simulations (issue 21): seeds a scratch database with a configuration (through the
 * admin API, in process) and a recorded history (users and events written straight to Postgres,
 * spread over 30 days), then runs one whole simulation (current + draft replays, report) and prints
 * the replay rate of each side. Uses the local Redis under a throwaway prefix and drops its database.
 *
 *   npm run bench:simulation -- [--users 5000] [--events 200000] [--boards 0]
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { generateApiKey } from '../src/api-keys';
import { createApp } from '../src/app';
import { loadConfig } from '../src/config';
import { exportDocument } from '../src/config-as-code/items';
import { apiKeys } from '../src/db/schema';
import { runMigrations } from '../src/db/migrate';
import { closeDeps, createDeps } from '../src/deps';
import { createLogger } from '../src/logger';
import { deletePrefix } from '../src/simulations/replay';
import { getSimulation, settleSimulations, startSimulation } from '../src/simulations/runs';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}

const USERS = arg('users', 5000);
const EVENTS = arg('events', 200_000);
const DAYS = 30;

async function main() {
  const base = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `laurel_simbench_${randomBytes(4).toString('hex')}`;
  const url = new URL(base);
  url.pathname = `/${name}`;
  const prefix = `simbench${randomBytes(3).toString('hex')}`;
  await runMigrations(url.toString());
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: url.toString(),
    REDIS_KEY_PREFIX: prefix,
    LOG_LEVEL: 'silent',
  });
  const deps = await createDeps(config, { logger: createLogger('silent') });
  try {
    const adm = generateApiKey();
    await deps.db
      .insert(apiKeys)
      .values({ name: 'bench', kind: 'admin', prefix: adm.prefix, secretHash: adm.secretHash });
    await deps.catalog.reload();
    const app = createApp(deps);
    const admin = async (method: string, path: string, body?: unknown) => {
      const res = await app.request(`/admin/v1${path}`, {
        method,
        headers: { 'x-api-key': adm.key, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await res.json()) as any;
      if (res.status >= 300 || json.issues?.length)
        throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    };
    const start = new Date(Date.now() - DAYS * 86_400_000);
    const startDay = start.toISOString().slice(0, 10);
    const [lessons] = (await admin('POST', '/metrics', [{ key: 'lessons', name: 'Lessons' }])).created;
    await admin('POST', '/achievements', [
      { key: 'ten', name: 'Ten', trigger: 'metric', metricId: lessons.id, metricValue: 10, status: 'active' },
      { key: 'week', name: 'Week', trigger: 'streak', streakLength: 7, status: 'active' },
    ]);
    const [xp] = (await admin('POST', '/points', [{ key: 'xp', name: 'XP' }])).created;
    await admin('POST', `/points/${xp.id}/triggers`, [
      { type: 'metric', points: 10, metricId: lessons.id, metricThreshold: 1, status: 'active' },
      { type: 'streak', points: 50, streakLength: 3, status: 'active' },
    ]);
    await admin('POST', `/points/${xp.id}/levels`, [
      { key: 'l1', name: 'L1', points: 100 },
      { key: 'l2', name: 'L2', points: 1000 },
    ]);
    await admin('PATCH', '/streaks/settings', {
      enabled: true,
      frequency: 'daily',
      conditions: [{ metricId: lessons.id, threshold: 1 }],
    });
    if (arg('boards', 1))
      await admin('POST', '/leaderboards', [
        { key: 'xp', name: 'XP', rankBy: 'points', pointsSystemId: xp.id, start: startDay, status: 'active' },
        {
          key: 'weekly',
          name: 'Weekly lessons',
          rankBy: 'metric',
          metricId: lessons.id,
          start: startDay,
          runUnit: 'day',
          runInterval: 7,
          status: 'active',
        },
      ]);
    // The history: users created at the start, events spread evenly over the 30 days.
    const sql = deps.sql;
    const t0 = Date.now();
    await sql`insert into users (id, tz, created, updated)
      select 'u' || i, (array['UTC','America/New_York','Asia/Kolkata','Pacific/Auckland'])[1 + i % 4],
        ${start.toISOString()}::timestamptz, ${start.toISOString()}::timestamptz
      from generate_series(0, ${USERS - 1}) i`;
    await sql`insert into events (id, user_id, metric_id, value_micros, attributes, local_date, tz, created, seq)
      select gen_random_uuid(), 'u' || (j % ${USERS}), ${lessons.id}::uuid, 1000000 * (1 + j % 3), '{}'::jsonb,
        (${start.toISOString()}::timestamptz + j * (${DAYS * 86_400_000}::float8 / ${EVENTS}) * interval '1 millisecond')::date,
        (array['UTC','America/New_York','Asia/Kolkata','Pacific/Auckland'])[1 + (j % ${USERS}) % 4],
        ${start.toISOString()}::timestamptz + j * (${DAYS * 86_400_000}::float8 / ${EVENTS}) * interval '1 millisecond',
        j / ${USERS} + 1
      from generate_series(0, ${EVENTS - 1}) j`;
    console.error(`seeded ${USERS} users and ${EVENTS} events in ${Date.now() - t0} ms`);
    await deps.catalog.reload();
    const doc = exportDocument(deps.catalog.snapshot, Date.now());
    // The draft: the metric trigger doubled.
    (doc.pointsSystems![0]!.triggers![0]! as { points: number }).points = 20;
    const t1 = Date.now();
    const started = await startSimulation(deps, { config: doc });
    await settleSimulations();
    const sim = (await getSimulation(deps, started.id))!;
    if (sim.status !== 'done') throw new Error(`simulation ${sim.status}: ${sim.error}`);
    const r = sim.report!;
    const result = {
      users: r.users,
      events: r.events,
      totalMs: Date.now() - t1,
      current: r.replay.current,
      draft: r.replay.draft,
      selfCheck: r.selfCheck.applicable ? `${r.selfCheck.matched}/${r.selfCheck.users}` : 'n/a',
      changedUsers: r.changedUsers,
      cpus: (await import('node:os')).cpus().length,
    };
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await deletePrefix(deps, `sim:${prefix}`);
    await closeDeps(deps);
    const admin = postgres(base, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end({ timeout: 2 });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
