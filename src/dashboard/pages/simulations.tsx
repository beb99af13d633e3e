import type { Hono } from 'hono';
import type { Child, FC } from 'hono/jsx';
import { parse as parseYaml } from 'yaml';
import { parseDocument } from '../../config-as-code/document';
import { exportDocument } from '../../config-as-code/items';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import { isUuid } from '../../admin/resource';
import type { SimulationReport } from '../../simulations/report';
import {
  cancelSimulation,
  getSimulation,
  listSimulations,
  type SimulationRecord,
  startSimulation,
  TooManySimulations,
} from '../../simulations/runs';
import { BarChart } from '../charts';
import { checked, done, formOf, pageCtx } from '../forms';
import type { DashEnv } from '../session';
import { DocumentField } from '../components/form';
import { Table } from '../components/table';
import { Csrf, Empty, Layout, type PageCtx, Stat, Status, fmt, when } from '../ui';

const PATH = '/dashboard/simulations';

const statusOf = (r: SimulationRecord) =>
  r.status === 'done' ? 'active' : r.status === 'running' ? 'scheduled' : 'inactive';

/** Two charts (or tables) side by side: current left, draft right. */
const Sides: FC<{ current: Child; draft: Child; title?: string }> = (p) => (
  <div class="grid halves">
    <div>
      <div class="sub">{p.title ? `${p.title}: current` : 'Current'}</div>
      {p.current}
    </div>
    <div>
      <div class="sub">{p.title ? `${p.title}: draft` : 'Draft'}</div>
      {p.draft}
    </div>
  </div>
);

/** The same chart (or table) of the current configuration and of the draft, side by side. */
const BothSides: FC<{ title?: string; show: (side: 'current' | 'draft') => Child }> = (p) => (
  <Sides title={p.title} current={p.show('current')} draft={p.show('draft')} />
);

/** The same bar chart of the current configuration and of the draft, side by side. */
const BothCharts: FC<{
  title: string;
  unit: string;
  width: number;
  height?: number;
  bars: (side: 'current' | 'draft') => Array<{ label: string; value: number }>;
}> = (p) => (
  <BothSides
    title={p.title}
    show={(side) => <BarChart width={p.width} height={p.height} unit={p.unit} bars={p.bars(side)} />}
  />
);

const delta = (a: number | null, b: number | null) => {
  if (a === null || b === null || a === b) return '';
  return ` (${b > a ? '+' : ''}${fmt(b - a)})`;
};

const Report: FC<{ r: SimulationReport }> = ({ r }) => (
  <div>
    <div class="card">
      <div class="grid" style="grid-template-columns:repeat(4,1fr)">
        <Stat
          label="Users replayed"
          value={fmt(r.users)}
          hint={`${fmt(r.events)} events, ${fmt(r.completions)} API completions`}
        />
        <Stat
          label="Self-check"
          value={`${fmt(r.selfCheck.matched)} / ${fmt(r.selfCheck.users)}`}
          hint={r.selfCheck.applicable ? 'current replay = live state' : 'not applicable to a partial window'}
        />
        <Stat
          label="Users that change"
          value={fmt(r.changedUsers)}
          hint="total, level, achievement or streak"
        />
        <Stat
          label="Replay speed"
          value={`${fmt(r.replay.draft.eventsPerSecond)} events/s`}
          hint={`current ${fmt(r.replay.current.eventsPerSecond)} events/s`}
        />
      </div>
      {r.selfCheck.mismatches.length ? (
        <details>
          <summary>Self-check mismatches ({r.selfCheck.mismatches.length} shown)</summary>
          <pre class="plan">
            {r.selfCheck.mismatches
              .map(
                (m) =>
                  `${m.userId} ${m.what}: live ${JSON.stringify(m.live)}, replay ${JSON.stringify(m.replay)}\n`,
              )
              .join('')}
          </pre>
        </details>
      ) : null}
    </div>
    {r.points.map((p) => (
      <div class="card">
        <h3>Points: {p.name}</h3>
        <p class="sub">
          Median {fmt(p.distribution.current?.percentiles.p50 ?? null)} →{' '}
          {fmt(p.distribution.draft?.percentiles.p50 ?? null)}, p90{' '}
          {fmt(p.distribution.current?.percentiles.p90 ?? null)} →{' '}
          {fmt(p.distribution.draft?.percentiles.p90 ?? null)}, max {fmt(p.distribution.current?.max ?? null)}{' '}
          → {fmt(p.distribution.draft?.max ?? null)}
        </p>
        <BothCharts
          title="Users by total"
          width={420}
          unit="users by total"
          bars={(side) =>
            p.histogram.map((h) => ({ label: h.to === 0 ? '0' : `≤${fmt(h.to)}`, value: h[side] }))
          }
        />
        {p.awardsPerDay.length ? (
          <BothCharts
            title="Points awarded per day (UTC)"
            width={420}
            unit="points awarded per day"
            bars={(side) => p.awardsPerDay.map((d) => ({ label: d.date.slice(5), value: d[side] }))}
          />
        ) : null}
        <Table
          cols={['Level', 'Threshold', 'Users now', 'Users with the draft']}
          rows={p.levels}
          row={(l) => (
            <tr>
              <td>{l.name}</td>
              <td>{fmt(l.points)}</td>
              <td>{l.current === null ? '—' : fmt(l.current)}</td>
              <td>
                {l.draft === null ? '—' : fmt(l.draft)}
                {delta(l.current, l.draft)}
              </td>
            </tr>
          )}
        />
        <Table
          cols={['Trigger', 'Points', 'Awards now', 'Awards with the draft']}
          rows={p.triggers}
          row={(t) => (
            <tr>
              <td>{t.type}</td>
              <td>
                {t.points.current ?? '—'} → {t.points.draft ?? '—'}
              </td>
              <td>
                {t.awards.current
                  ? `${fmt(t.awards.current.count)} (${fmt(t.awards.current.points)} points)`
                  : '—'}
              </td>
              <td>
                {t.awards.draft ? `${fmt(t.awards.draft.count)} (${fmt(t.awards.draft.points)} points)` : '—'}
                {delta(t.awards.current?.points ?? null, t.awards.draft?.points ?? null)}
              </td>
            </tr>
          )}
        />
      </div>
    ))}
    <div class="grid halves">
      <div class="card">
        <h3>Achievements</h3>
        <Table
          cols={['Achievement', 'Completions', 'Rarity %']}
          rows={r.achievements}
          empty="No achievements."
          row={(a) => (
            <tr>
              <td>{a.name}</td>
              <td>
                {a.completions.current ?? '—'} → {a.completions.draft ?? '—'}
                {delta(a.completions.current, a.completions.draft)}
              </td>
              <td>
                {a.rarity.current ?? '—'} → {a.rarity.draft ?? '—'}
              </td>
            </tr>
          )}
        />
      </div>
      <div class="card">
        <h3>Streak lengths</h3>
        <BothCharts
          title="Users by streak length"
          width={300}
          height={150}
          unit="users by streak length"
          bars={(side) =>
            r.streaks.histogram.map((h) => ({
              label: h.to === null ? `${h.from}+` : h.from === h.to ? `${h.from}` : `${h.from}-${h.to}`,
              value: h[side],
            }))
          }
        />
      </div>
    </div>
    {r.leaderboards.map((b) => (
      <div class="card">
        <h3>
          Leaderboard: {b.name} <span class="sub">({fmt(b.rankChanges)} users change rank)</span>
        </h3>
        <BothSides show={(side) => <TopTable rows={b.top[side]} />} />
      </div>
    ))}
    <div class="card">
      <h3>Users who change most</h3>
      <Table
        cols={['User', 'Points', 'Levels', 'Achievements', 'Streak']}
        rows={r.topChanges}
        empty="No user changes under the draft."
        row={(u) => (
          <tr>
            <td>
              <a href={`/dashboard/users/${encodeURIComponent(u.userId)}`}>{u.userId}</a>
            </td>
            <td>
              {Object.entries(u.points)
                .map(([k, v]) => `${k}: ${fmt(v.current)} → ${fmt(v.draft)}`)
                .join(', ')}
            </td>
            <td>
              {Object.entries(u.levels)
                .map(([k, v]) => `${k}: ${v.current ?? '—'} → ${v.draft ?? '—'}`)
                .join(', ')}
            </td>
            <td>
              {[...u.achievementsGained.map((a) => `+${a}`), ...u.achievementsLost.map((a) => `−${a}`)].join(
                ' ',
              )}
            </td>
            <td>
              {u.streak.current === u.streak.draft
                ? fmt(u.streak.current)
                : `${u.streak.current} → ${u.streak.draft}`}
            </td>
          </tr>
        )}
      />
    </div>
    <div class="card">
      <h3>What the replay cannot reproduce exactly</h3>
      <ul>
        {r.notReproduced.map((n) => (
          <li>{n}</li>
        ))}
      </ul>
      {r.draft.warnings.length ? (
        <>
          <h3>Warnings of the draft's plan</h3>
          <ul class="issues">
            {r.draft.warnings.map((w) => (
              <li class="warn">{w}</li>
            ))}
          </ul>
        </>
      ) : null}
    </div>
  </div>
);

const TopTable: FC<{ rows: Array<{ rank: number; userId: string; value: number }> | null }> = ({ rows }) =>
  rows === null ? (
    <Empty>Not in this configuration.</Empty>
  ) : rows.length === 0 ? (
    <Empty>Nobody ranked.</Empty>
  ) : (
    <table>
      <tbody>
        {rows.map((e) => (
          <tr>
            <td>#{e.rank}</td>
            <td>{e.userId}</td>
            <td>{fmt(e.value)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );

async function listPage(deps: Deps, ctx: PageCtx, opts: { text?: string; error?: string } = {}) {
  const runs = await listSimulations(deps);
  const text = opts.text ?? JSON.stringify(exportDocument(deps.catalog.snapshot, deps.clock.now()), null, 2);
  return (
    <Layout
      title="What-if simulations"
      active={PATH}
      ctx={ctx}
      sub="Replay the recorded history under a draft configuration and compare it with the current one, before applying it. Nothing live changes."
    >
      <div class="card">
        <h3>New simulation</h3>
        <form method="post" action={PATH} class="stack">
          <Csrf token={ctx.csrf} />
          <DocumentField
            label="Draft configuration (JSON or YAML, laurel.config/v1; starts as the current one)"
            rows={16}
            text={text}
            error={opts.error}
          />
          <div class="grid" style="grid-template-columns:1fr 1fr 1fr">
            <div class="field">
              <label for="f-from">From (optional, ISO date)</label>
              <input id="f-from" name="from" placeholder="2025-01-01" />
            </div>
            <div class="field">
              <label for="f-to">To (optional, ISO date)</label>
              <input id="f-to" name="to" placeholder="now" />
            </div>
            <div class="field">
              <label for="f-sample">Sample of users (optional, a number)</label>
              <input id="f-sample" name="sample" placeholder="all users" />
            </div>
          </div>
          <label>
            <input type="checkbox" name="prune" checked /> Items of the draft's sections that it does not name
            are deleted in the draft
          </label>
          <button type="submit">Run simulation</button>
        </form>
      </div>
      <div class="card">
        <h3>Recent simulations</h3>
        <Table
          cols={['Started', 'Status', 'Progress', 'Window']}
          rows={runs}
          empty="No simulation yet."
          row={(r) => (
            <tr>
              <td>
                <a href={`${PATH}/${r.id}`}>{when(r.createdAt)}</a>
              </td>
              <td>
                <Status s={statusOf(r)} /> {r.status}
              </td>
              <td>{Math.round(r.progress * 100)}%</td>
              <td>
                {r.request.from ? when(r.request.from) : 'beginning'} – {when(r.request.to)}
              </td>
            </tr>
          )}
        />
      </div>
    </Layout>
  );
}

function detailPage(ctx: PageCtx, r: SimulationRecord) {
  return (
    <Layout
      title="Simulation"
      active={PATH}
      ctx={ctx}
      sub={`Started ${when(r.createdAt)}; window ${r.request.from ? when(r.request.from) : 'from the beginning'} to ${when(r.request.to)}${r.request.sample ? `; sample ${Array.isArray(r.request.sample) ? `${r.request.sample.length} users` : r.request.sample}` : ''}`}
      actions={
        r.status === 'running' ? (
          <form method="post" action={`${PATH}/${r.id}/cancel`}>
            <Csrf token={ctx.csrf} />
            <button type="submit" class="secondary">
              Cancel
            </button>
          </form>
        ) : null
      }
    >
      {r.status === 'running' ? (
        <div class="card">
          <meta http-equiv="refresh" content="2" />
          <h3>
            Running: {r.phase} ({Math.round(r.progress * 100)}%)
          </h3>
          <progress max="1" value={String(r.progress)} style="width:100%" />
          <p class="sub">
            {r.etaSeconds === null ? 'Estimating the time left…' : `About ${fmt(r.etaSeconds)} s left.`} This
            page refreshes by itself.
          </p>
        </div>
      ) : null}
      {r.status === 'failed' ? <div class="flash error">Failed: {r.error}</div> : null}
      {r.status === 'cancelled' ? <div class="flash warn">Cancelled.</div> : null}
      {r.report ? <Report r={r.report} /> : null}
    </Layout>
  );
}

/** A pasted document: JSON, else YAML. */
function readText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {}
  try {
    return parseYaml(text, { maxAliasCount: 100 });
  } catch {
    return undefined;
  }
}

/** What-if simulations: start one, follow it, read its report with charts side by side. */
export function mountSimulationPages(app: Hono<DashEnv>, deps: Deps): void {
  app.get('/simulations', async (c) => c.html(await listPage(deps, pageCtx(c))));

  app.post('/simulations', async (c) => {
    const v = await formOf(c);
    const text = typeof v.document === 'string' ? v.document : '';
    const fail = async (error: string, status: 409 | 422 = 422) =>
      c.html(await listPage(deps, pageCtx(c), { text, error }), status);
    const body = readText(text);
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      return fail('The draft must be a configuration document (JSON or YAML object)');
    const parsed = parseDocument(body);
    if ('problems' in parsed) return fail(parsed.problems.join('; '));
    const field = (name: string) =>
      typeof v[name] === 'string' && v[name] !== '' ? (v[name] as string) : undefined;
    const from = field('from') === undefined ? undefined : Date.parse(field('from')!);
    const to = field('to') === undefined ? undefined : Date.parse(field('to')!);
    const sample = field('sample') === undefined ? undefined : Number(field('sample'));
    if (Number.isNaN(from) || Number.isNaN(to)) return fail('From and to must be ISO dates');
    if (sample !== undefined && (!Number.isInteger(sample) || sample < 1))
      return fail('The sample must be a positive whole number');
    if (from !== undefined && to !== undefined && from > to) return fail('From must not be after to');
    if (to !== undefined && to > deps.clock.now()) return fail('To must not be in the future');
    try {
      const r = await startSimulation(deps, {
        config: parsed.doc,
        from,
        to,
        sample,
        prune: checked(v.prune),
      });
      return c.redirect(`${PATH}/${r.id}`, 303);
    } catch (err) {
      if (err instanceof TooManySimulations) return fail(err.message, 409);
      if (err instanceof AppError && err.status < 500) return fail(err.message);
      throw err;
    }
  });

  app.get('/simulations/:id', async (c) => {
    const id = c.req.param('id');
    const r = isUuid(id) ? await getSimulation(deps, id) : null;
    if (!r) throw new AppError('NOT_FOUND', 'No such simulation');
    return c.html(detailPage(pageCtx(c), r));
  });

  app.post('/simulations/:id/cancel', async (c) => {
    const id = c.req.param('id');
    const r = isUuid(id) ? await cancelSimulation(deps, id) : null;
    if (!r) throw new AppError('NOT_FOUND', 'No such simulation');
    return done(
      c,
      `${PATH}/${id}`,
      r.status === 'cancelled' ? 'Simulation cancelled.' : `Simulation ${r.status}.`,
    );
  });
}
