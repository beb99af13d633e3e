import { formatInTimeZone } from 'date-fns-tz';
import type { Hono } from 'hono';
import type { Deps } from '../../deps';
import { leaderboardStatus } from '../../engine/leaderboard-status';
import { BarChart } from '../charts';
import { achievementCompletions, eventsPerMinute, recentEvents, userCount } from '../data';
import { pageCtx } from '../forms';
import type { DashEnv } from '../session';
import { readStatus, StatusPanel } from '../status';
import { numeric, Table } from '../components/table';
import { Empty, fmt, Layout, type PageCtx, Stat, when } from '../ui';

const MINUTES = 15;
async function overviewPage(deps: Deps, ctx: PageCtx) {
  const snap = deps.catalog.snapshot;
  const now = deps.clock.now();
  const [users, perMinute, recent, completions, status] = await Promise.all([
    userCount(deps),
    eventsPerMinute(deps, MINUTES),
    recentEvents(deps),
    achievementCompletions(deps),
    readStatus(deps),
  ]);
  const topAchievements = snap.achievements
    .map((a) => ({ a, n: completions.get(a.id) ?? 0 }))
    .sort((x, y) => y.n - x.n)
    .slice(0, 6);
  const lastFive = perMinute.slice(-5).reduce((s, b) => s + b.count, 0) / 5;
  const activeBoards = snap.leaderboards.filter((b) => leaderboardStatus(b, now) === 'active').length;
  const activeAchievements = snap.achievements.filter((a) => a.status === 'active').length;
  const anyEvents = perMinute.some((b) => b.count > 0);
  const steps: Array<[boolean, string, string]> = [
    [snap.metrics.length > 0, 'Create a metric', '/dashboard/metrics'],
    [
      snap.systems.length > 0 || snap.achievements.length > 0,
      'Add achievements or a points system',
      '/dashboard/achievements',
    ],
    [snap.leaderboards.length > 0, 'Create a leaderboard', '/dashboard/leaderboards'],
    [users > 0, 'Send the first event with an application key', '/dashboard/integration'],
  ];
  return (
    <Layout title="Overview" active="/dashboard" ctx={ctx} sub={`As of ${when(now)}`}>
      <div class="stats">
        <Stat label="Users" value={fmt(users)} />
        <Stat
          label="Events / minute"
          value={fmt(Math.round(lastFive * 10) / 10)}
          hint="average of the last 5 minutes"
        />
        <Stat label="Metrics" value={fmt(snap.metrics.length)} />
        <Stat
          label="Achievements"
          value={fmt(snap.achievements.length)}
          hint={`${activeAchievements} active`}
        />
        <Stat label="Points systems" value={fmt(snap.systems.length)} />
        <Stat label="Leaderboards" value={fmt(snap.leaderboards.length)} hint={`${activeBoards} active`} />
      </div>
      <StatusPanel status={status} />
      {steps.some(([ok]) => !ok) ? (
        <div class="card">
          <h2>Getting started</h2>
          <ol style="margin:0;padding-left:20px;line-height:1.9">
            {steps.map(([ok, text, href]) => (
              <li>
                {ok ? <s style="color:#667085">{text}</s> : <a href={href}>{text}</a>} {ok ? '✓' : ''}
              </li>
            ))}
          </ol>
        </div>
      ) : null}
      <div class="grid two">
        <div class="card">
          <h2>Recent events</h2>
          {recent.length ? (
            <table id="recent-events">
              <thead>
                <tr>
                  <th>Time</th>
                  <th>User</th>
                  <th>Metric</th>
                  <th class="num">Value</th>
                  <th class="num">Points</th>
                </tr>
              </thead>
              <tbody>
                {recent.map((e) => (
                  <tr>
                    <td>{when(e.at)}</td>
                    <td>
                      <a href={`/dashboard/users?id=${encodeURIComponent(e.userId)}`}>{e.userId}</a>
                    </td>
                    <td>{snap.metricsById.get(e.metricId)?.name ?? 'Deleted metric'}</td>
                    <td class="num">{fmt(e.value)}</td>
                    <td class="num">{e.points === undefined ? '–' : e.points ? `+${fmt(e.points)}` : '0'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <Empty>No events yet. Events appear here as your application sends them.</Empty>
          )}
        </div>
        <div class="card">
          <h2>Events per minute</h2>
          {anyEvents ? (
            <>
              <BarChart
                width={420}
                height={200}
                unit="events per minute"
                bars={perMinute.map((b) => ({
                  label: formatInTimeZone(b.start, 'UTC', 'HH:mm'),
                  value: b.count,
                }))}
              />
              <div class="legend">Last {MINUTES} minutes (UTC).</div>
            </>
          ) : (
            <Empty>No events in the last {MINUTES} minutes.</Empty>
          )}
          <h2 style="margin-top:22px">Achievements</h2>
          <Table
            cols={['Achievement', numeric('Completed by')]}
            rows={topAchievements}
            empty="No achievements configured."
            row={({ a, n }) => (
              <tr>
                <td>{a.name}</td>
                <td class="num">
                  {fmt(n)}
                  {users ? <span class="sub"> ({((100 * n) / users).toFixed(0)}%)</span> : null}
                </td>
              </tr>
            )}
          />
        </div>
      </div>
    </Layout>
  );
}

export function mountOverview(app: Hono<DashEnv>, deps: Deps): void {
  app.get('/', async (c) => c.html(await overviewPage(deps, pageCtx(c))));
}
