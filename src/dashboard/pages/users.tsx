import type { Hono } from 'hono';
import type { Deps } from '../../deps';
import { leaderboardStatus, utcDate } from '../../engine/leaderboard-status';
import { runForRead, userHistory, userStanding } from '../../services/leaderboards';
import { localDate, periodBounds, periodIndex } from '../../engine/periods';
import { storedPeriods } from '../../engine/streak-view';
import { levelOf } from '../../engine/levels';
import { LineChart, type StreakCell, StreakStrip } from '../charts';
import { listUsers, userAwards, userEvents, userState } from '../data';
import { fromMicros } from '../../engine/decimal';
import { pageCtx } from '../forms';
import type { DashEnv } from '../session';
import { count, Empty, fmt, Layout, type PageCtx, Stat, when } from '../ui';

const HISTORY_PERIODS = 42;

const PAGE_SIZE = 25;

const Lookup = (p: { q: string }) => (
  <form
    method="get"
    action="/dashboard/users"
    class="card"
    id="user-search"
    style="display:flex;gap:10px;align-items:end"
  >
    <div class="field" style="flex:1">
      <label for="f-q">Search users</label>
      <input
        id="f-q"
        name="q"
        type="search"
        value={p.q}
        placeholder="Part of an id, a name or an e-mail address"
      />
    </div>
    <button type="submit">Search</button>
  </form>
);

const userHref = (id: string) => `/dashboard/users?id=${encodeURIComponent(id)}`;

/** Every user, newest first, or those matching the search; paged. */
async function userListPage(deps: Deps, ctx: PageCtx, q: string, page: number) {
  const rows = await listUsers(deps, { search: q, limit: PAGE_SIZE, offset: page * PAGE_SIZE });
  const more = rows.length > PAGE_SIZE;
  const shown = rows.slice(0, PAGE_SIZE);
  const pageHref = (n: number) =>
    `/dashboard/users?${new URLSearchParams({ ...(q ? { q } : {}), page: String(n) }).toString()}`;
  return (
    <Layout
      title="Users"
      active="/dashboard/users"
      ctx={ctx}
      sub="Users your application has sent, newest first. Search by id, name or e-mail."
    >
      <Lookup q={q} />
      <div class="card">
        {shown.length ? (
          <table id="users">
            <thead>
              <tr>
                <th>Id</th>
                <th>Name</th>
                <th>E-mail</th>
                <th>Created</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((u) => (
                <tr>
                  <td>
                    <a href={userHref(u.id)}>
                      <code>{u.id}</code>
                    </a>
                  </td>
                  <td>{u.name ?? '–'}</td>
                  <td>{u.email ?? '–'}</td>
                  <td>{when(u.created)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : (
          <Empty>
            {q
              ? `No user whose id, name or e-mail contains “${q}”.`
              : 'No users yet. Users are created by their first event or identification.'}
          </Empty>
        )}
        {page > 0 || more ? (
          <div class="pager" style="display:flex;gap:14px;margin-top:12px">
            {page > 0 ? (
              <a href={pageHref(page - 1)} rel="prev">
                ← Newer
              </a>
            ) : null}
            <span class="sub">Page {page + 1}</span>
            {more ? (
              <a href={pageHref(page + 1)} rel="next">
                Older →
              </a>
            ) : null}
          </div>
        ) : null}
        <p class="sub" style="margin-top:10px">
          The list comes from the history, which the history writer fills a moment after each event.
        </p>
      </div>
    </Layout>
  );
}

async function userPage(deps: Deps, ctx: PageCtx, id: string) {
  const snap = deps.catalog.snapshot;
  const state = await userState(
    deps,
    id,
    snap.systems.map((s) => s.id),
  );
  if (!state) {
    return (
      <Layout
        title="Users"
        active="/dashboard/users"
        ctx={ctx}
        sub="Look a user up by the id your application sends."
      >
        <Lookup q={id} />
        <div class="card">
          <Empty>No user with the id “{id}”. Users are created by their first event or identification.</Empty>
        </div>
      </Layout>
    );
  }
  const p = state.profile;
  const now = deps.clock.now();
  const tz = p.tz || 'UTC';
  const attrs = Object.entries(p).filter(([k]) => k.startsWith('a:'));

  // Streak history: one cell per period of the current settings' epoch, ending with the current one.
  const cfg = snap.streak;
  const curIdx = periodIndex(cfg.frequency, localDate(now, tz));
  const cells: StreakCell[] = [];
  const stored = storedPeriods(state.streak, cfg.epoch);
  for (let idx = curIdx - HISTORY_PERIODS + 1; idx <= curIdx; idx++) {
    const h = stored.get(idx);
    cells.push({
      label: periodBounds(cfg.frequency, idx).start,
      state: h === undefined ? 'missed' : h.usedFreeze ? 'freeze' : h.usedPause ? 'pause' : 'met',
      length: h?.length ?? 0,
    });
  }
  const streakEpochMatches = Number(state.streak.epoch ?? -1) === cfg.epoch;
  const streakLength = cfg.enabled && streakEpochMatches ? Number(state.streak.length ?? 0) : 0;

  const [recentEvents, recentAwards] = await Promise.all([userEvents(deps, id), userAwards(deps, id)]);
  const boards = snap.leaderboards.filter((b) => leaderboardStatus(b, now) !== 'inactive');
  const standings = await Promise.all(
    boards.map(async (b) => {
      const run = runForRead(b, now, utcDate(now));
      const [standing, history] = await Promise.all([
        userStanding(deps, b, run, id),
        userHistory(deps, b, run, id, 50),
      ]);
      return { board: b, run, standing, history };
    }),
  );

  return (
    <Layout title={p.name || id} active="/dashboard/users" ctx={ctx} sub={p.name ? `User ${id}` : 'User'}>
      <Lookup q="" />
      <div class="stats">
        {snap.systems.map((s) => {
          const total = state.points.get(s.id) ?? 0;
          const level = levelOf(s, total);
          return (
            <Stat
              label={s.name}
              value={<span data-points={s.key}>{fmt(total)}</span>}
              hint={<span data-level={s.key}>{level ? `Level: ${level.name}` : 'No level yet'}</span>}
            />
          );
        })}
        <Stat
          label="Streak"
          value={fmt(streakLength)}
          hint={cfg.enabled ? `${cfg.frequency}` : 'streaks are off'}
        />
        <Stat
          label="Achievements"
          value={fmt(state.achievements.size)}
          hint={`of ${snap.achievements.length}`}
        />
      </div>

      <div class="grid halves">
        <div class="card">
          <h2>Profile</h2>
          <dl class="kv">
            <dt>Id</dt>
            <dd>
              <code>{id}</code>
            </dd>
            <dt>Name</dt>
            <dd>{p.name || '–'}</dd>
            <dt>Email</dt>
            <dd>{p.email || '–'}</dd>
            <dt>Time zone</dt>
            <dd>{tz}</dd>
            <dt>Created</dt>
            <dd>{when(Number(p.created))}</dd>
            {attrs.map(([k, v]) => (
              <>
                <dt>{snap.userAttributesByKey.get(k.slice(2))?.name ?? k.slice(2)}</dt>
                <dd>{v}</dd>
              </>
            ))}
          </dl>
        </div>
        <div class="card">
          <h2>Metric totals</h2>
          {state.metrics.size ? (
            <table>
              <thead>
                <tr>
                  <th>Metric</th>
                  <th class="num">Total</th>
                </tr>
              </thead>
              <tbody>
                {snap.metrics
                  .filter((m) => state.metrics.has(m.id))
                  .map((m) => (
                    <tr>
                      <td>{m.name}</td>
                      <td class="num">
                        {fmt(state.metrics.get(m.id))} {m.units ?? ''}
                      </td>
                    </tr>
                  ))}
              </tbody>
            </table>
          ) : (
            <Empty>No events recorded.</Empty>
          )}
        </div>
      </div>

      {snap.systems.map((s) => {
        const awards = [...(state.awards.get(s.id) ?? [])].reverse();
        if (!awards.length) return null;
        const points = [
          { t: awards[0]!.date - 1, v: awards[0]!.total - awards[0]!.awarded },
          ...awards.map((a) => ({ t: a.date, v: a.total })),
        ];
        return (
          <div class="card" style="margin-top:18px">
            <h2>{s.name} over time</h2>
            <LineChart points={points} label={`${s.name} total over time`} width={1000} height={220} />
            <div class="legend">Total after each of the last {awards.length} awards.</div>
          </div>
        );
      })}

      <div class="grid halves" style="margin-top:18px">
        <div class="card">
          <h2>Streak history</h2>
          {cfg.enabled ? (
            <>
              <p class="sub" style="margin-bottom:10px">
                Current length {fmt(streakLength)}
                {state.streak.started ? ` · since ${state.streak.started}` : ''}
                {cfg.freezesEnabled ? ` · ${count(Number(state.streak.freezes ?? 0), 'freeze')} left` : ''}
                {state.streak.longest ? ` · longest ${fmt(Number(state.streak.longest))}` : ''}
              </p>
              <StreakStrip cells={cells} />
            </>
          ) : (
            <Empty>Streaks are turned off.</Empty>
          )}
        </div>
        <div class="card">
          <h2>Achievements</h2>
          {state.achievements.size ? (
            <table>
              <thead>
                <tr>
                  <th>Achievement</th>
                  <th>Completed</th>
                </tr>
              </thead>
              <tbody>
                {[...state.achievements.entries()]
                  .sort((a, b) => b[1] - a[1])
                  .map(([aid, at]) => (
                    <tr>
                      <td>{snap.achievementsById.get(aid)?.name ?? 'Deleted achievement'}</td>
                      <td>{Number.isNaN(at) ? '–' : when(at)}</td>
                    </tr>
                  ))}
              </tbody>
            </table>
          ) : (
            <Empty>No achievements completed.</Empty>
          )}
        </div>
      </div>

      <div class="grid halves" style="margin-top:18px">
        <div class="card">
          <h2>Recent events</h2>
          {recentEvents.length ? (
            <table id="user-events">
              <thead>
                <tr>
                  <th>Time</th>
                  <th>Metric</th>
                  <th class="num">Value</th>
                  <th>Local date</th>
                </tr>
              </thead>
              <tbody>
                {recentEvents.map((e) => (
                  <tr>
                    <td>{when(e.created)}</td>
                    <td>{snap.metricsById.get(e.metricId)?.name ?? 'Deleted metric'}</td>
                    <td class="num">{fmt(fromMicros(e.valueMicros))}</td>
                    <td>{e.localDate}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <Empty>No events in the history yet.</Empty>
          )}
        </div>
        <div class="card">
          <h2>Point awards</h2>
          {recentAwards.length ? (
            <table id="user-awards">
              <thead>
                <tr>
                  <th>Time</th>
                  <th>Points system</th>
                  <th>Trigger</th>
                  <th class="num">Points</th>
                  <th class="num">Total</th>
                </tr>
              </thead>
              <tbody>
                {recentAwards.map((a) => (
                  <tr>
                    <td>{when(a.created)}</td>
                    <td>{snap.systemsById.get(a.systemId)?.name ?? 'Deleted system'}</td>
                    <td>{snap.triggersById.get(a.triggerId)?.type ?? '–'}</td>
                    <td class="num">{a.awarded >= 0 ? `+${fmt(a.awarded)}` : fmt(a.awarded)}</td>
                    <td class="num">{fmt(a.total)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <Empty>No points awarded yet.</Empty>
          )}
        </div>
      </div>

      <div class="card" style="margin-top:18px">
        <h2>Leaderboards</h2>
        {standings.length ? (
          <table id="user-ranks">
            <thead>
              <tr>
                <th>Leaderboard</th>
                <th>Run</th>
                <th class="num">Rank</th>
                <th class="num">Value</th>
              </tr>
            </thead>
            <tbody>
              {standings.map((s) => (
                <tr>
                  <td>
                    <a href={`/dashboard/leaderboards/${s.board.id}`}>{s.board.name}</a>
                  </td>
                  <td>{s.run.start}</td>
                  <td class="num" data-rank={s.board.key}>
                    {s.standing.rank === null ? 'not ranked' : `#${s.standing.rank}`}
                  </td>
                  <td class="num">{fmt(s.standing.value)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : (
          <Empty>No active leaderboards.</Empty>
        )}
        {standings
          .filter((s) => s.history.some((h) => h.rank !== null))
          .map((s) => (
            <>
              <h3>Rank over time · {s.board.name}</h3>
              <LineChart
                invert
                label={`rank on ${s.board.name}`}
                points={s.history
                  .filter((h) => h.rank !== null)
                  .map((h) => ({ t: Date.parse(h.timestamp), v: h.rank as number }))}
                height={150}
                width={1000}
              />
            </>
          ))}
      </div>
    </Layout>
  );
}

export function mountUserPages(app: Hono<DashEnv>, deps: Deps): void {
  app.get('/users', async (c) => {
    const id = (c.req.query('id') ?? '').trim();
    if (id) return c.html(await userPage(deps, pageCtx(c), id));
    const page = Number(c.req.query('page') ?? 0);
    const q = (c.req.query('q') ?? '').replaceAll('\0', '').trim().slice(0, 255);
    return c.html(
      await userListPage(
        deps,
        pageCtx(c),
        q,
        Number.isSafeInteger(page) && page > 0 ? Math.min(page, 10_000) : 0,
      ),
    );
  });
}
