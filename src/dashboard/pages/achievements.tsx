import type { Hono } from 'hono';
import { achievementsResource } from '../../admin/achievements';
import type { Deps } from '../../deps';
import { achievementCompletions, userCount } from '../data';
import { attempt, checked, done, formOf, list, num, pageCtx, str, strOrNull, type Values } from '../forms';
import type { DashEnv } from '../session';
import { ALL, mountDelete } from '../resource-pages';
import { CreateCard, NameKeyInputs } from '../components/form';
import { NameCell, numeric, RowActions, Table } from '../components/table';
import { fmt, Layout, type PageCtx, Status } from '../ui';
import {
  Checkbox,
  emptyForm,
  Input,
  Select,
  TextArea,
  type FormState,
  optionsOf,
} from '../components/fields';

const ACHIEVEMENT_FIELDS = [
  'name',
  'key',
  'trigger',
  'metricId',
  'metricValue',
  'streakLength',
  'achievementIds',
  'description',
  'badge',
  'status',
] as const;

/** The choices of the page's selects, by field: each value with its label. */
const CHOICES = {
  trigger: [
    ['metric', 'A metric total is reached'],
    ['streak', 'A streak length is reached'],
    ['achievement', 'Other achievements are completed'],
    ['api', 'The API completes it'],
  ],
} as const;

function achievementItem(v: Values) {
  const trigger = str(v.trigger);
  const item: Record<string, unknown> = {
    name: str(v.name),
    key: str(v.key),
    trigger,
    description: strOrNull(v.description),
    status: checked(v.activate) ? 'active' : 'inactive',
  };
  const badge = str(v.badge);
  if (badge) item.badge = { url: badge };
  if (trigger === 'metric') {
    item.metricId = str(v.metricId);
    item.metricValue = num(v.metricValue);
  }
  if (trigger === 'streak') item.streakLength = num(v.streakLength);
  if (trigger === 'achievement') item.achievementIds = list(v.achievementIds);
  return item;
}

const ACHIEVEMENT_MOVES = {
  inactive: ['Activate', 'active'],
  active: ['Lock', 'locked'],
  locked: ['Unlock', 'active'],
} as const;

async function achievementsPage(deps: Deps, ctx: PageCtx, form: FormState) {
  const [rows, users, completions] = await Promise.all([
    achievementsResource.list(deps, ALL),
    userCount(deps),
    achievementCompletions(deps),
  ]);
  const snap = deps.catalog.snapshot;
  const requirement = (a: (typeof rows)[number]) => {
    if (a.trigger === 'metric') {
      const m = a.metricId ? snap.metricsById.get(a.metricId) : undefined;
      return `Reach ${fmt(a.metricValue)}${m?.units ? ` ${m.units}` : ''} in ${m?.name ?? 'a deleted metric'}`;
    }
    if (a.trigger === 'streak') return `${a.streakLength}-period streak`;
    if (a.trigger === 'achievement')
      return `Complete ${(a.achievementIds ?? []).map((id) => snap.achievementsById.get(id)?.name ?? '?').join(', ')}`;
    return 'Completed through the API';
  };
  const metricOptions = optionsOf(snap.metrics);
  return (
    <Layout
      title="Achievements"
      active="/dashboard/achievements"
      ctx={ctx}
      sub="Milestones users complete; rarity is the share of all users who completed one."
    >
      <div class="card">
        <h2>Achievements</h2>
        <Table
          cols={['Achievement', 'Requirement', 'Status', numeric('Completions'), 'Rarity', '']}
          rows={rows}
          empty="No achievements yet."
          row={(a) => {
            const done = completions.get(a.id) ?? a.completions;
            const pct = users ? (100 * done) / users : 0;
            return (
              <tr>
                <NameCell name={a.name} code={a.key} />
                <td>{requirement(a)}</td>
                <td>
                  <Status s={a.status} />
                </td>
                <td class="num">{fmt(done)}</td>
                <td>
                  <span class="bar">
                    <span style={`width:${Math.min(100, pct).toFixed(1)}%`} />
                  </span>
                  {users ? `${pct.toFixed(1)}%` : '–'}
                </td>
                <RowActions
                  href={`/dashboard/achievements/${a.id}`}
                  csrf={ctx.csrf}
                  status={a.status}
                  moves={ACHIEVEMENT_MOVES}
                />
              </tr>
            );
          }}
        />
      </div>
      <CreateCard
        title="New achievement"
        action="/dashboard/achievements"
        csrf={ctx.csrf}
        form={form}
        submit="Create achievement"
        id="achievement-form"
      >
        <div class="row">
          <NameKeyInputs form={form} placeholders={['Ten lessons', 'ten-lessons']} />
          <Select form={form} name="trigger" label="Completed when" options={CHOICES.trigger} />
        </div>
        <div class="row">
          <Select
            form={form}
            name="metricId"
            label="Metric (metric trigger)"
            options={metricOptions}
            blank="Choose a metric"
          />
          <Input form={form} name="metricValue" label="Total to reach" type="text" placeholder="10" />
          <Input
            form={form}
            name="streakLength"
            label="Streak length (streak trigger)"
            type="text"
            placeholder="7"
          />
        </div>
        <Select
          form={form}
          name="achievementIds"
          label="Prerequisites (achievement trigger)"
          multiple
          options={optionsOf(snap.achievements)}
        />
        <div class="row">
          <TextArea form={form} name="description" label="Description" />
          <Input form={form} name="badge" label="Badge URL" placeholder="https://…" />
        </div>
        <Checkbox
          form={form}
          name="activate"
          label="Activate now (completes it for users who already qualify)"
        />
      </CreateCard>
    </Layout>
  );
}

export function mountAchievementPages(app: Hono<DashEnv>, deps: Deps): void {
  app.get('/achievements', async (c) =>
    c.html(await achievementsPage(deps, pageCtx(c), emptyForm({ trigger: 'metric' }))),
  );
  app.post('/achievements', async (c) => {
    const v = await formOf(c);
    const r = await attempt(
      deps,
      () => achievementsResource.create!(deps, { item: achievementItem(v) }),
      ACHIEVEMENT_FIELDS,
      v,
    );
    if (!r.ok) return c.html(await achievementsPage(deps, pageCtx(c), r.form), 422);
    return done(c, '/dashboard/achievements', `Achievement “${r.value.name}” created.`);
  });
  app.post('/achievements/:id/status', async (c) => {
    const v = await formOf(c);
    const item = { id: c.req.param('id'), status: str(v.status) };
    const r = await attempt(deps, () => achievementsResource.update!(deps, { item }), [], v);
    return r.ok
      ? done(c, '/dashboard/achievements', `Achievement “${r.value.name}” is now ${r.value.status}.`)
      : done(c, '/dashboard/achievements', r.form.formError ?? 'Not changed', 'error');
  });
  mountDelete(app, deps, '/achievements', achievementsResource, 'Achievement deleted.');
}
