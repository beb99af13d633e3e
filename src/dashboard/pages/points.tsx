import type { Context, Hono } from 'hono';
import { boostsResource } from '../../admin/boosts';
import { levelsResource } from '../../admin/levels';
import { pointsSystemsResource, requirePointsSystem } from '../../admin/points-systems';
import type { BulkResource } from '../../admin/resource';
import { TRIGGER_FIELDS, triggersResource } from '../../admin/triggers';
import type { Deps } from '../../deps';
import { BarChart } from '../charts';
import { pointsHistogram, usersAtLeast } from '../data';
import { attempt, done, formOf, num, pageCtx, str, strOrNull, type Values } from '../forms';
import { ALL } from '../resource-pages';
import type { DashEnv } from '../session';
import { CreateCard, NameKeyInputs, PostForm } from '../components/form';
import { DeleteButton, NameCell, numeric, RowActions, Table } from '../components/table';
import { Empty, fmt, Layout, type PageCtx, Stat, Status, every } from '../ui';
import { emptyForm, type FormState, Input, Select, TextArea, optionsOf } from '../components/fields';

const SYSTEM_FIELDS = ['name', 'key', 'description', 'maxPoints', 'badge'] as const;
const LEVEL_FIELDS = ['name', 'key', 'points', 'description', 'badge'] as const;
const TRIGGER_MOVES = {
  active: ['Deactivate', 'inactive'],
  inactive: ['Activate', 'active'],
} as const;
const BOOST_FIELDS = ['name', 'start', 'end', 'multiplier', 'rounding', 'userId'] as const;

/** The choices of the page's selects, by field: each value with its label. */
const CHOICES = {
  type: [
    ['metric', 'Metric threshold'],
    ['achievement', 'Achievement completed'],
    ['streak', 'Streak length'],
    ['time', 'Time interval'],
    ['user_creation', 'User created'],
  ],
  status: [
    ['active', 'Active'],
    ['inactive', 'Inactive'],
  ],
  timeUnit: [
    ['hours', 'hours'],
    ['days', 'days'],
  ],
  rounding: [
    ['down', 'Down'],
    ['up', 'Up'],
    ['nearest', 'Nearest'],
  ],
} as const;

async function systemsPage(deps: Deps, ctx: PageCtx, form: FormState) {
  const rows = await pointsSystemsResource.list(deps, ALL);
  const snap = deps.catalog.snapshot;
  return (
    <Layout
      title="Points"
      active="/dashboard/points"
      ctx={ctx}
      sub="Points systems award points through triggers, multiply them with boosts and map totals to levels."
    >
      <div class="grid two">
        <div class="card">
          <h2>Points systems</h2>
          <Table
            cols={['System', numeric('Triggers'), numeric('Levels'), numeric('Boosts'), numeric('Cap')]}
            rows={rows}
            empty="No points systems yet."
            row={(s) => {
              const cfg = snap.systemsById.get(s.id);
              return (
                <tr>
                  <NameCell name={s.name} code={s.key} href={`/dashboard/points/${s.id}`} />
                  <td class="num">{cfg?.triggers.length ?? 0}</td>
                  <td class="num">{cfg?.levels.length ?? 0}</td>
                  <td class="num">{cfg?.boosts.length ?? 0}</td>
                  <td class="num">{s.maxPoints === null ? 'none' : fmt(s.maxPoints)}</td>
                </tr>
              );
            }}
          />
        </div>
        <CreateCard
          title="New points system"
          action="/dashboard/points"
          csrf={ctx.csrf}
          form={form}
          submit="Create points system"
          id="system-form"
        >
          <NameKeyInputs form={form} placeholders={['XP', 'xp']} />
          <TextArea form={form} name="description" label="Description" />
          <Input form={form} name="maxPoints" label="Maximum points per user" hint="Leave empty for no cap" />
        </CreateCard>
      </div>
    </Layout>
  );
}

interface Forms {
  trigger?: FormState;
  level?: FormState;
  boost?: FormState;
}

async function systemPage(deps: Deps, c: Context<DashEnv>, ctx: PageCtx, forms: Forms) {
  const id = c.req.param('systemId') ?? '';
  await requirePointsSystem(deps, { systemId: id });
  const sys = (await pointsSystemsResource.get(deps, { id }))!;
  const [triggers, levels, boosts, hist] = await Promise.all([
    triggersResource.list(deps, { ...ALL, systemId: id }),
    levelsResource.list(deps, { ...ALL, systemId: id }),
    boostsResource.list(deps, { ...ALL, systemId: id }),
    pointsHistogram(deps, id),
  ]);
  const reached = await Promise.all(levels.map((l) => usersAtLeast(deps, id, l.points)));
  const snap = deps.catalog.snapshot;
  const base = `/dashboard/points/${id}`;
  const describe = (t: (typeof triggers)[number]) => {
    switch (t.type) {
      case 'metric': {
        const m = snap.metricsById.get(t.metricId ?? '');
        return every(t.metricThreshold ?? 1, m?.units || m?.name || 'metric events');
      }
      case 'achievement':
        return `Completing ${snap.achievementsById.get(t.achievementId ?? '')?.name ?? 'an achievement'}`;
      case 'streak':
        return every(t.streakLength ?? 1, 'streak periods');
      case 'time':
        return every(t.timeInterval ?? 1, t.timeUnit ?? 'days');
      default:
        return 'When a user is created';
    }
  };
  const tf = forms.trigger ?? emptyForm({ type: 'metric', status: 'active' });
  const lf = forms.level ?? emptyForm();
  const bf = forms.boost ?? emptyForm({ rounding: 'down' });
  const total = reached.length ? hist.users : 0;
  return (
    <Layout
      title={sys.name}
      active="/dashboard/points"
      ctx={ctx}
      sub={
        <>
          Points system <code>{sys.key}</code>
          {sys.maxPoints !== null ? ` · capped at ${fmt(sys.maxPoints)}` : ''}
          {sys.description ? ` · ${sys.description}` : ''}
        </>
      }
      actions={<a href="/dashboard/points">All points systems</a>}
    >
      <div class="stats">
        <Stat label="Users with a total" value={fmt(hist.users)} />
        <Stat
          label="Active triggers"
          value={fmt(triggers.filter((t) => t.status === 'active').length)}
          hint={`${triggers.length} in all`}
        />
        <Stat label="Levels" value={fmt(levels.length)} />
        <Stat label="Active boosts" value={fmt(boosts.filter((b) => b.status === 'active').length)} />
      </div>
      <div class="grid two">
        <div class="card">
          <h2>Points distribution</h2>
          {hist.buckets.length ? (
            <>
              <BarChart
                unit="users per points range"
                bars={hist.buckets.map((b) => ({
                  label: b.from === b.to ? fmt(b.from) : `${fmt(b.from)}–${fmt(b.to)}`,
                  value: b.count,
                  title: `${fmt(b.from)} to ${fmt(b.to)} points: ${fmt(b.count)} users`,
                }))}
              />
              <div class="legend">Users per points range.</div>
            </>
          ) : (
            <Empty>No user has a total in this system yet.</Empty>
          )}
        </div>
        <div class="card">
          <h2>Levels</h2>
          <Table
            cols={['Level', numeric('From'), numeric('Users reached'), '']}
            rows={levels}
            empty="No levels yet."
            row={(l, i) => (
              <tr>
                <NameCell name={l.name} code={l.key} />
                <td class="num">{fmt(l.points)}</td>
                <td class="num">
                  {fmt(reached[i])}
                  {total ? (
                    <span class="sub"> ({((100 * (reached[i] ?? 0)) / total).toFixed(0)}%)</span>
                  ) : null}
                </td>
                <td class="num">
                  <DeleteButton action={`${base}/levels/${l.id}/delete`} csrf={ctx.csrf} />
                </td>
              </tr>
            )}
          />
          <h3>Add a level</h3>
          <PostForm action={`${base}/levels`} csrf={ctx.csrf} form={lf} submit="Add level" id="level-form">
            <div class="row">
              <NameKeyInputs form={lf} placeholders={['Bronze', 'bronze']} />
              <Input form={lf} name="points" label="From points" placeholder="100" />
            </div>
          </PostForm>
        </div>
      </div>

      <div class="card" style="margin-top:18px">
        <h2>Triggers</h2>
        <Table
          cols={['Awards', 'When', 'Status', 'Since', '']}
          rows={triggers}
          empty="No triggers yet: this system awards nothing until one is active."
          row={(t) => (
            <tr>
              <td>
                <strong>
                  {t.points > 0 ? '+' : ''}
                  {fmt(t.points)}
                </strong>{' '}
                points
              </td>
              <td>{describe(t)}</td>
              <td>
                <Status s={t.status} />
              </td>
              <td>{t.updated.slice(0, 10)}</td>
              <RowActions
                href={`${base}/triggers/${t.id}`}
                csrf={ctx.csrf}
                status={t.status}
                moves={TRIGGER_MOVES}
              />
            </tr>
          )}
        />
        <h3>Add a trigger</h3>
        <PostForm
          action={`${base}/triggers`}
          csrf={ctx.csrf}
          form={tf}
          submit="Add trigger"
          id="trigger-form"
        >
          <div class="row">
            <Select form={tf} name="type" label="Type" options={CHOICES.type} />
            <Input form={tf} name="points" label="Points" placeholder="10" />
            <Select form={tf} name="status" label="Status" options={CHOICES.status} />
          </div>
          <div class="row">
            <Select form={tf} name="metricId" label="Metric" options={optionsOf(snap.metrics)} blank="—" />
            <Input form={tf} name="metricThreshold" label="Every (metric total)" placeholder="1" />
            <Select
              form={tf}
              name="achievementId"
              label="Achievement"
              options={optionsOf(snap.achievements)}
              blank="—"
            />
          </div>
          <div class="row">
            <Input form={tf} name="streakLength" label="Streak length" />
            <Input form={tf} name="timeInterval" label="Time interval" />
            <Select form={tf} name="timeUnit" label="Time unit" options={CHOICES.timeUnit} blank="—" />
          </div>
        </PostForm>
      </div>

      <div class="card">
        <h2>Boosts</h2>
        <Table
          cols={['Boost', numeric('Multiplier'), 'Dates', 'Applies to', 'Status', '']}
          rows={boosts}
          empty="No boosts."
          row={(b) => (
            <tr>
              <td>{b.name}</td>
              <td class="num">×{fmt(b.multiplier)}</td>
              <td>
                {b.start} → {b.end ?? 'open-ended'}
              </td>
              <td>
                {b.userId
                  ? `User ${b.userId}`
                  : b.userAttributes.length
                    ? b.userAttributes.map((f) => `${f.attributeKey}=${f.attributeValue}`).join(', ')
                    : 'Everyone'}
              </td>
              <td>
                <Status s={b.status} />
              </td>
              <td class="num">
                <DeleteButton action={`${base}/boosts/${b.id}/delete`} csrf={ctx.csrf} />
              </td>
            </tr>
          )}
        />
        <h3>Add a boost</h3>
        <PostForm action={`${base}/boosts`} csrf={ctx.csrf} form={bf} submit="Add boost" id="boost-form">
          <div class="row">
            <Input form={bf} name="name" label="Name" placeholder="Double XP weekend" />
            <Input form={bf} name="multiplier" label="Multiplier" placeholder="2" />
            <Select form={bf} name="rounding" label="Rounding" options={CHOICES.rounding} />
          </div>
          <div class="row">
            <Input form={bf} name="start" label="Start" type="date" />
            <Input form={bf} name="end" label="End" type="date" hint="Empty = open-ended" />
            <Input form={bf} name="userId" label="Only for user" hint="Empty = everyone" />
          </div>
        </PostForm>
      </div>
    </Layout>
  );
}

function triggerItem(v: Values) {
  const type = str(v.type);
  const item: Record<string, unknown> = { type, points: num(v.points), status: str(v.status) };
  if (type === 'metric')
    Object.assign(item, { metricId: str(v.metricId), metricThreshold: num(v.metricThreshold) });
  if (type === 'achievement') item.achievementId = str(v.achievementId);
  if (type === 'streak') item.streakLength = num(v.streakLength);
  if (type === 'time') Object.assign(item, { timeUnit: str(v.timeUnit), timeInterval: num(v.timeInterval) });
  return item;
}

export function mountPointsPages(app: Hono<DashEnv>, deps: Deps): void {
  app.get('/points', async (c) => c.html(await systemsPage(deps, pageCtx(c), emptyForm())));
  app.post('/points', async (c) => {
    const v = await formOf(c);
    const item = {
      name: str(v.name),
      key: str(v.key),
      description: strOrNull(v.description),
      maxPoints: num(v.maxPoints) ?? null,
    };
    const r = await attempt(deps, () => pointsSystemsResource.create!(deps, { item }), SYSTEM_FIELDS, v);
    if (!r.ok) return c.html(await systemsPage(deps, pageCtx(c), r.form), 422);
    return done(
      c,
      `/dashboard/points/${r.value.id}`,
      `Points system “${r.value.name}” created. Add triggers and levels below.`,
    );
  });

  app.get('/points/:systemId', async (c) => c.html(await systemPage(deps, c, pageCtx(c), {})));

  const nested = (
    name: 'triggers' | 'levels' | 'boosts',
    form: keyof Forms,
    fields: readonly string[],
    build: (v: Values) => Record<string, unknown>,
    label: string,
  ) => {
    const resource: BulkResource<unknown> = {
      triggers: triggersResource,
      levels: levelsResource,
      boosts: boostsResource,
    }[name];
    app.post(`/points/:systemId/${name}`, async (c) => {
      await requirePointsSystem(deps, { systemId: c.req.param('systemId') });
      const v = await formOf(c);
      const r = await attempt(
        deps,
        () => resource.create!(deps, { systemId: c.req.param('systemId'), item: build(v) }),
        fields,
        v,
      );
      if (!r.ok) return c.html(await systemPage(deps, c, pageCtx(c), { [form]: r.form }), 422);
      return done(c, `/dashboard/points/${c.req.param('systemId')}`, `${label} added.`);
    });
    app.post(`/points/:systemId/${name}/:id/delete`, async (c) => {
      await requirePointsSystem(deps, { systemId: c.req.param('systemId') });
      const r = await attempt(
        deps,
        () => resource.remove!(deps, { systemId: c.req.param('systemId'), id: c.req.param('id') }),
        [],
        {},
      );
      const to = `/dashboard/points/${c.req.param('systemId')}`;
      return r.ok
        ? done(c, to, `${label} deleted.`)
        : done(c, to, r.form.formError ?? 'Not deleted', 'error');
    });
  };
  nested('triggers', 'trigger', TRIGGER_FIELDS, triggerItem, 'Trigger');
  nested(
    'levels',
    'level',
    LEVEL_FIELDS,
    (v) => ({
      name: str(v.name),
      key: str(v.key),
      points: num(v.points),
      description: strOrNull(v.description),
    }),
    'Level',
  );
  nested(
    'boosts',
    'boost',
    BOOST_FIELDS,
    (v) => ({
      name: str(v.name),
      start: str(v.start),
      end: strOrNull(v.end),
      multiplier: num(v.multiplier),
      rounding: str(v.rounding),
      userId: strOrNull(v.userId),
    }),
    'Boost',
  );
  app.post('/points/:systemId/triggers/:id/status', async (c) => {
    await requirePointsSystem(deps, { systemId: c.req.param('systemId') });
    const v = await formOf(c);
    const to = `/dashboard/points/${c.req.param('systemId')}`;
    const r = await attempt(
      deps,
      () =>
        triggersResource.update!(deps, {
          systemId: c.req.param('systemId'),
          item: { id: c.req.param('id'), status: str(v.status) },
        }),
      [],
      v,
    );
    return r.ok
      ? done(c, to, `Trigger is now ${r.value.status}.`)
      : done(c, to, r.form.formError ?? 'Not changed', 'error');
  });
}
