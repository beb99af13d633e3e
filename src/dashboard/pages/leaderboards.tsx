import type { Hono } from 'hono';
import { leaderboardsResource } from '../../admin/leaderboards';
import type { Deps } from '../../deps';
import { utcDate } from '../../engine/leaderboard-status';
import { decodeGroup, rankingsWindow, runForRead } from '../../services/leaderboards';
import { runByIndex } from '../../engine/runs';
import { notFound } from '../../errors';
import { participantCount, runGroups, userNames } from '../data';
import { attempt, done, formOf, list, num, pageCtx, str, strOrNull, type Values } from '../forms';
import { ALL, mountDelete } from '../resource-pages';
import type { DashEnv } from '../session';
import { CreateCard, NameKeyInputs } from '../components/form';
import { NameCell, numeric, RowActions, Table } from '../components/table';
import { Empty, fmt, Layout, type PageCtx, Stat, Status, every } from '../ui';
import { emptyForm, type FormState, Input, Select, TextArea, optionsOf } from '../components/fields';

const FIELDS = [
  'name',
  'key',
  'rankBy',
  'metricId',
  'pointsSystemId',
  'description',
  'maxParticipants',
  'start',
  'end',
  'breakdownAttributes',
  'runUnit',
  'runInterval',
  'status',
] as const;

/** The choices of the page's selects, by field: each value with its label. */
const CHOICES = {
  rankBy: [
    ['points', 'Points'],
    ['metric', 'Metric'],
    ['streak', 'Streak'],
  ],
  runUnit: [
    ['day', 'day(s)'],
    ['month', 'month(s)'],
    ['year', 'year(s)'],
  ],
  status: [
    ['inactive', 'Create inactive'],
    ['active', 'Create and activate'],
  ],
} as const;

function boardItem(v: Values) {
  const rankBy = str(v.rankBy);
  const runUnit = str(v.runUnit) ?? null;
  return {
    name: str(v.name),
    key: str(v.key),
    rankBy,
    metricId: rankBy === 'metric' ? str(v.metricId) : undefined,
    pointsSystemId: rankBy === 'points' ? str(v.pointsSystemId) : undefined,
    description: strOrNull(v.description),
    maxParticipants: num(v.maxParticipants),
    start: str(v.start),
    end: strOrNull(v.end),
    breakdownAttributes: list(v.breakdownAttributes),
    runUnit,
    runInterval: runUnit === null ? 0 : num(v.runInterval),
    status: str(v.status),
  };
}

const runLabel = (r: { start: string; end: string | null }) => `${r.start} → ${r.end ?? 'open'}`;

const BOARD_MOVES = {
  inactive: ['Activate', 'active'],
  scheduled: ['Deactivate', 'inactive'],
  active: ['Finish now', 'finished'],
} as const;

async function boardsPage(deps: Deps, ctx: PageCtx, form: FormState) {
  const rows = await leaderboardsResource.list(deps, ALL);
  const snap = deps.catalog.snapshot;
  const now = deps.clock.now();
  const participants = new Map(
    await Promise.all(
      rows.map(async (r): Promise<[string, number | null]> => {
        const b = snap.leaderboardsById.get(r.id);
        return [r.id, b ? await participantCount(deps, b.id, runForRead(b, now, utcDate(now)).start) : null];
      }),
    ),
  );
  const ranks = (b: (typeof rows)[number]) =>
    b.rankBy === 'metric'
      ? (snap.metricsById.get(b.metricId ?? '')?.name ?? 'metric')
      : b.rankBy === 'points'
        ? (snap.systemsById.get(b.pointsSystemId ?? '')?.name ?? 'points')
        : 'Streak length';
  return (
    <Layout
      title="Leaderboards"
      active="/dashboard/leaderboards"
      ctx={ctx}
      sub="Rank users by a metric, a points system or their streak; runs repeat when a run length is set."
    >
      <div class="card">
        <h2>Leaderboards</h2>
        <Table
          cols={['Leaderboard', 'Ranks by', numeric('Participants'), 'Runs', 'Dates', 'Status', '']}
          rows={rows}
          empty="No leaderboards yet."
          row={(b) => (
            <tr>
              <NameCell name={b.name} code={b.key} href={`/dashboard/leaderboards/${b.id}`} />
              <td>{ranks(b)}</td>
              <td class="num" data-participants={b.key} title="Users ranked in the current run">
                {fmt(participants.get(b.id))}
              </td>
              <td>{b.runUnit ? every(b.runInterval ?? 1, `${b.runUnit}s`) : 'One run'}</td>
              <td>
                {b.start} → {b.end ?? 'no end'}
              </td>
              <td>
                <Status s={b.status} />
              </td>
              <RowActions
                href={`/dashboard/leaderboards/${b.id}`}
                csrf={ctx.csrf}
                status={b.status}
                moves={BOARD_MOVES}
              />
            </tr>
          )}
        />
      </div>
      <CreateCard
        title="New leaderboard"
        action="/dashboard/leaderboards"
        csrf={ctx.csrf}
        form={form}
        submit="Create leaderboard"
        id="leaderboard-form"
      >
        <div class="row">
          <NameKeyInputs form={form} placeholders={['Weekly XP', 'weekly-xp']} />
          <Select form={form} name="rankBy" label="Rank by" options={CHOICES.rankBy} />
        </div>
        <div class="row">
          <Select
            form={form}
            name="pointsSystemId"
            label="Points system"
            options={optionsOf(snap.systems)}
            blank="—"
          />
          <Select form={form} name="metricId" label="Metric" options={optionsOf(snap.metrics)} blank="—" />
          <Input form={form} name="maxParticipants" label="Max participants" placeholder="1000" />
        </div>
        <div class="row">
          <Input form={form} name="start" label="Start" type="date" hint="Empty = today (UTC)" />
          <Input form={form} name="end" label="End" type="date" hint="Empty = no end" />
          <Select
            form={form}
            name="runUnit"
            label="Repeat every"
            options={CHOICES.runUnit}
            blank="Never (one run)"
          />
          <Input form={form} name="runInterval" label="Run length" placeholder="1" />
        </div>
        <div class="row">
          <Select
            form={form}
            name="breakdownAttributes"
            label="Break down by"
            multiple
            options={optionsOf([...snap.attributesById.values()].filter((a) => a.type === 'user'))}
          />
          <TextArea form={form} name="description" label="Description" />
        </div>
        <Select form={form} name="status" label="Status" options={CHOICES.status} />
      </CreateCard>
    </Layout>
  );
}

async function boardPage(
  deps: Deps,
  ctx: PageCtx,
  id: string,
  runDate: string | undefined,
  groupParam: string | undefined,
) {
  const snap = deps.catalog.snapshot;
  const board = snap.leaderboardsById.get(id);
  if (!board) throw notFound('Leaderboard not found');
  const shown = (await leaderboardsResource.get(deps, { id }))!;
  const now = deps.clock.now();
  const current = runForRead(board, now, utcDate(now));
  const run = runDate ? runForRead(board, now, utcDate(now), runDate) : current;
  const groups = await runGroups(deps, board.id, run.start);
  const groupList = [...groups.keys()].sort();
  const group = groupParam ?? groupList[0] ?? '';
  const ranked =
    shown.status === 'inactive'
      ? []
      : await rankingsWindow(deps, board, run, group, { offset: 0, limit: 100 });
  const names = await userNames(
    deps,
    ranked.map((r) => r.userId),
  );
  const past = [];
  for (let i = current.index; i >= Math.max(0, current.index - 11); i--) {
    const r = runByIndex(board, i);
    if (r) past.push(r);
  }
  const groupName = (g: string) =>
    decodeGroup(snap, board, g)
      .map((x) => `${x.key}: ${x.value}`)
      .join(', ') || 'Everyone';
  const link = (runStart: string, g?: string) =>
    `/dashboard/leaderboards/${id}?run=${runStart}${g !== undefined ? `&group=${encodeURIComponent(g)}` : ''}`;
  const unit =
    board.rankBy === 'points'
      ? (snap.systemsById.get(board.pointsSystemId ?? '')?.name ?? 'points')
      : board.rankBy === 'metric'
        ? (snap.metricsById.get(board.metricId ?? '')?.name ?? 'value')
        : 'streak';
  return (
    <Layout
      title={board.name}
      active="/dashboard/leaderboards"
      ctx={ctx}
      sub={
        <>
          Leaderboard <code>{board.key}</code> · ranks by {unit}
        </>
      }
      actions={<a href="/dashboard/leaderboards">All leaderboards</a>}
    >
      <div class="stats">
        <Stat label="Status" value={<Status s={shown.status} />} />
        <Stat label="Run shown" value={run.start} hint={run.end ? `until ${run.end}` : 'no end'} />
        <Stat
          label="Ranked in group"
          value={fmt(groups.get(group) ?? 0)}
          hint={`of ${fmt(board.maxParticipants)} places`}
        />
        <Stat label="Groups" value={fmt(Math.max(1, groupList.length))} />
      </div>
      <div class="grid two">
        <div class="card">
          <h2>Rankings · {groupName(group)}</h2>
          {groupList.length > 1 ? (
            <div class="tabs">
              {groupList.map((g) => (
                <a href={link(run.start, g)} class={g === group ? 'on' : ''}>
                  {groupName(g)}
                </a>
              ))}
            </div>
          ) : null}
          {ranked.length ? (
            <table id="rankings">
              <thead>
                <tr>
                  <th class="num">Rank</th>
                  <th>User</th>
                  <th class="num">{unit}</th>
                </tr>
              </thead>
              <tbody>
                {ranked.map((r) => (
                  <tr>
                    <td class="num">
                      <strong>#{r.rank}</strong>
                    </td>
                    <td>
                      <a href={`/dashboard/users?id=${encodeURIComponent(r.userId)}`}>
                        {names.get(r.userId) ?? r.userId}
                      </a>
                      {names.has(r.userId) ? <span class="sub"> · {r.userId}</span> : null}
                    </td>
                    <td class="num">{fmt(r.value)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <Empty>
              {shown.status === 'inactive'
                ? 'Activate the leaderboard to start ranking users.'
                : 'Nobody is ranked in this run yet.'}
            </Empty>
          )}
        </div>
        <div class="card">
          <h2>Runs</h2>
          <Table
            cols={['Run', '']}
            rows={past}
            row={(r) => (
              <tr>
                <td>
                  <a href={link(r.start)}>{runLabel(r)}</a>
                </td>
                <td>
                  {r.index === current.index ? (
                    <span class="badge active">current</span>
                  ) : r.start === run.start ? (
                    <span class="badge">shown</span>
                  ) : null}
                </td>
              </tr>
            )}
          />
        </div>
      </div>
    </Layout>
  );
}

export function mountLeaderboardPages(app: Hono<DashEnv>, deps: Deps): void {
  app.get('/leaderboards', async (c) =>
    c.html(await boardsPage(deps, pageCtx(c), emptyForm({ rankBy: 'points' }))),
  );
  app.post('/leaderboards', async (c) => {
    const v = await formOf(c);
    const r = await attempt(
      deps,
      () => leaderboardsResource.create!(deps, { item: boardItem(v) }),
      FIELDS,
      v,
    );
    if (!r.ok) return c.html(await boardsPage(deps, pageCtx(c), r.form), 422);
    return done(c, '/dashboard/leaderboards', `Leaderboard “${r.value.name}” created (${r.value.status}).`);
  });
  app.get('/leaderboards/:id', async (c) =>
    c.html(
      await boardPage(
        deps,
        pageCtx(c),
        c.req.param('id'),
        c.req.query('run') || undefined,
        c.req.query('group'),
      ),
    ),
  );
  app.post('/leaderboards/:id/status', async (c) => {
    const v = await formOf(c);
    const r = await attempt(
      deps,
      () => leaderboardsResource.update!(deps, { item: { id: c.req.param('id'), status: str(v.status) } }),
      [],
      v,
    );
    return r.ok
      ? done(c, '/dashboard/leaderboards', `Leaderboard “${r.value.name}” is now ${r.value.status}.`)
      : done(c, '/dashboard/leaderboards', r.form.formError ?? 'Not changed', 'error');
  });
  mountDelete(app, deps, '/leaderboards', leaderboardsResource, 'Leaderboard deleted.');
}
