import type { Hono } from 'hono';
import { achievementsResource } from '../../admin/achievements';
import { attributesResource } from '../../admin/attributes';
import { metricsResource } from '../../admin/metrics';
import {
  getStreakSettings,
  showStreakSettings,
  StreakSettingsPatchSchema,
  updateStreakSettings,
} from '../../admin/streak-settings';
import type { Deps } from '../../deps';
import { parseWith } from '../../wire/parse';
import { achievementCompletions, streakSummary, userCount } from '../data';
import { attempt, checked, done, formOf, list, num, pageCtx, str, strOrNull, type Values } from '../forms';
import type { DashEnv } from '../session';
import {
  Checkbox,
  Csrf,
  Empty,
  emptyForm,
  FormError,
  fmt,
  Input,
  Layout,
  type PageCtx,
  PostButton,
  Select,
  Stat,
  Status,
  TextArea,
  type FormState,
} from '../ui';

const ALL = { limit: 1000, skip: 0 };

// ---------------------------------------------------------------- metrics

const METRIC_FIELDS = ['name', 'key', 'unitType', 'units'] as const;

async function metricsPage(deps: Deps, ctx: PageCtx, form: FormState) {
  const rows = await metricsResource.list(deps, ALL);
  return (
    <Layout
      title="Metrics"
      active="/dashboard/metrics"
      ctx={ctx}
      sub="What your application reports: each event adds a value to a user's total."
    >
      <div class="grid two">
        <div class="card">
          <h2>Metrics</h2>
          {rows.length ? (
            <table>
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Key</th>
                  <th>Units</th>
                  <th>Created</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {rows.map((m) => (
                  <tr>
                    <td>{m.name}</td>
                    <td>
                      <code>{m.key}</code>
                    </td>
                    <td>{m.unitType === 'currency' ? `${m.units} (currency)` : (m.units ?? '–')}</td>
                    <td>{m.created.slice(0, 10)}</td>
                    <td class="num">
                      <PostButton
                        action={`/dashboard/metrics/${m.id}/delete`}
                        csrf={ctx.csrf}
                        label="Delete"
                        kind="danger"
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <Empty>No metrics yet. Create the first one to start recording events.</Empty>
          )}
        </div>
        <div class="card">
          <h2>New metric</h2>
          <form method="post" action="/dashboard/metrics" class="stack" id="metric-form">
            <Csrf token={ctx.csrf} />
            <FormError form={form} />
            <Input form={form} name="name" label="Name" placeholder="Lessons completed" />
            <Input
              form={form}
              name="key"
              label="Key"
              placeholder="lessons"
              hint="Used in the API path: letters, digits, _ and -"
            />
            <div class="row">
              <Select
                form={form}
                name="unitType"
                label="Unit type"
                options={[
                  ['number', 'Number'],
                  ['currency', 'Currency'],
                ]}
              />
              <Input form={form} name="units" label="Units" placeholder="lessons, USD…" />
            </div>
            <div>
              <button type="submit">Create metric</button>
            </div>
          </form>
        </div>
      </div>
    </Layout>
  );
}

// ---------------------------------------------------------------- attributes

const ATTRIBUTE_FIELDS = ['name', 'key', 'type'] as const;

async function attributesPage(deps: Deps, ctx: PageCtx, form: FormState) {
  const rows = await attributesResource.list(deps, ALL);
  return (
    <Layout
      title="Attributes"
      active="/dashboard/attributes"
      ctx={ctx}
      sub="User attributes filter features and split leaderboards; event attributes filter by event."
    >
      <div class="grid two">
        <div class="card">
          <h2>Attributes</h2>
          {rows.length ? (
            <table>
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Key</th>
                  <th>Type</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {rows.map((a) => (
                  <tr>
                    <td>{a.name}</td>
                    <td>
                      <code>{a.key}</code>
                    </td>
                    <td>
                      <span class="badge">{a.type}</span>
                    </td>
                    <td class="num">
                      <PostButton
                        action={`/dashboard/attributes/${a.id}/delete`}
                        csrf={ctx.csrf}
                        label="Delete"
                        kind="danger"
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <Empty>No attributes yet.</Empty>
          )}
        </div>
        <div class="card">
          <h2>New attribute</h2>
          <form method="post" action="/dashboard/attributes" class="stack">
            <Csrf token={ctx.csrf} />
            <FormError form={form} />
            <Input form={form} name="name" label="Name" placeholder="Plan" />
            <Input form={form} name="key" label="Key" placeholder="plan" />
            <Select
              form={form}
              name="type"
              label="Type"
              options={[
                ['user', 'User attribute'],
                ['event', 'Event attribute'],
              ]}
            />
            <div>
              <button type="submit">Create attribute</button>
            </div>
          </form>
        </div>
      </div>
    </Layout>
  );
}

// ---------------------------------------------------------------- achievements

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
  const metricOptions = snap.metrics.map((m) => [m.id, m.name] as [string, string]);
  return (
    <Layout
      title="Achievements"
      active="/dashboard/achievements"
      ctx={ctx}
      sub="Milestones users complete; rarity is the share of all users who completed one."
    >
      <div class="card">
        <h2>Achievements</h2>
        {rows.length ? (
          <table>
            <thead>
              <tr>
                <th>Achievement</th>
                <th>Requirement</th>
                <th>Status</th>
                <th class="num">Completions</th>
                <th>Rarity</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {rows.map((a) => {
                const done = completions.get(a.id) ?? a.completions;
                const pct = users ? (100 * done) / users : 0;
                return (
                  <tr>
                    <td>
                      <strong>{a.name}</strong>
                      <div class="sub">
                        <code>{a.key}</code>
                      </div>
                    </td>
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
                    <td>
                      <div class="actions">
                        {a.status === 'inactive' ? (
                          <PostButton
                            action={`/dashboard/achievements/${a.id}/status`}
                            csrf={ctx.csrf}
                            label="Activate"
                            fields={{ status: 'active' }}
                          />
                        ) : null}
                        {a.status === 'active' ? (
                          <PostButton
                            action={`/dashboard/achievements/${a.id}/status`}
                            csrf={ctx.csrf}
                            label="Lock"
                            fields={{ status: 'locked' }}
                          />
                        ) : null}
                        {a.status === 'locked' ? (
                          <PostButton
                            action={`/dashboard/achievements/${a.id}/status`}
                            csrf={ctx.csrf}
                            label="Unlock"
                            fields={{ status: 'active' }}
                          />
                        ) : null}
                        <PostButton
                          action={`/dashboard/achievements/${a.id}/delete`}
                          csrf={ctx.csrf}
                          label="Delete"
                          kind="danger"
                        />
                      </div>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        ) : (
          <Empty>No achievements yet.</Empty>
        )}
      </div>
      <div class="card">
        <h2>New achievement</h2>
        <form method="post" action="/dashboard/achievements" class="stack" id="achievement-form">
          <Csrf token={ctx.csrf} />
          <FormError form={form} />
          <div class="row">
            <Input form={form} name="name" label="Name" placeholder="Ten lessons" />
            <Input form={form} name="key" label="Key" placeholder="ten-lessons" />
            <Select
              form={form}
              name="trigger"
              label="Completed when"
              options={[
                ['metric', 'A metric total is reached'],
                ['streak', 'A streak length is reached'],
                ['achievement', 'Other achievements are completed'],
                ['api', 'The API completes it'],
              ]}
            />
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
            options={snap.achievements.map((a) => [a.id, a.name] as [string, string])}
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
          <div>
            <button type="submit">Create achievement</button>
          </div>
        </form>
      </div>
    </Layout>
  );
}

// ---------------------------------------------------------------- streaks

const STREAK_FIELDS = [
  'enabled',
  'frequency',
  'mode',
  'conditions',
  'conditions.0.metricId',
  'conditions.0.threshold',
  'conditions.1.metricId',
  'conditions.1.threshold',
  'conditions.2.metricId',
  'conditions.2.threshold',
  'freezesEnabled',
  'maxFreezes',
  'initialFreezes',
  'freezeAutoEarnAmount',
  'freezeAutoEarnInterval',
] as const;

function streakPatch(v: Values) {
  const conditions: Array<{ metricId: unknown; threshold: unknown }> = [];
  for (let i = 0; i < 3; i++) {
    const metricId = str(v[`conditions.${i}.metricId`]);
    const threshold = num(v[`conditions.${i}.threshold`]);
    if (metricId === undefined && threshold === undefined) continue;
    conditions.push({ metricId: metricId ?? '', threshold: threshold ?? null });
  }
  const nullableNum = (x: string | string[] | undefined) => num(x) ?? null;
  return {
    enabled: checked(v.enabled),
    frequency: str(v.frequency),
    mode: str(v.mode),
    conditions,
    freezesEnabled: checked(v.freezesEnabled),
    maxFreezes: num(v.maxFreezes),
    initialFreezes: num(v.initialFreezes),
    freezeAutoEarnAmount: nullableNum(v.freezeAutoEarnAmount),
    freezeAutoEarnInterval: nullableNum(v.freezeAutoEarnInterval),
  };
}

async function streaksPage(deps: Deps, ctx: PageCtx, form: FormState | null) {
  const s = showStreakSettings(deps, await getStreakSettings(deps));
  const summary = await streakSummary(deps);
  const values: Values = form?.values ?? {
    ...(s.enabled ? { enabled: 'on' } : {}),
    frequency: s.frequency,
    mode: s.mode,
    ...(s.freezesEnabled ? { freezesEnabled: 'on' } : {}),
    maxFreezes: String(s.maxFreezes),
    initialFreezes: String(s.initialFreezes),
    freezeAutoEarnAmount: s.freezeAutoEarnAmount === null ? '' : String(s.freezeAutoEarnAmount),
    freezeAutoEarnInterval: s.freezeAutoEarnInterval === null ? '' : String(s.freezeAutoEarnInterval),
    ...Object.fromEntries(
      s.conditions.flatMap((c, i) => [
        [`conditions.${i}.metricId`, c.metricId],
        [`conditions.${i}.threshold`, String(c.threshold)],
      ]),
    ),
    _loaded: 'yes',
  };
  const f: FormState = { values, errors: form?.errors ?? {}, formError: form?.formError };
  const metricOptions = deps.catalog.snapshot.metrics.map((m) => [m.id, m.name] as [string, string]);
  return (
    <Layout
      title="Streaks"
      active="/dashboard/streaks"
      ctx={ctx}
      sub="A streak grows each period in which a user meets the conditions."
    >
      <div class="stats">
        <Stat
          label="Streaks"
          value={s.enabled ? 'On' : 'Off'}
          hint={`${s.frequency}, ${s.mode === 'all' ? 'all conditions' : 'any condition'}`}
        />
        <Stat label="Active streaks" value={fmt(summary.active)} />
        <Stat
          label="Longest current"
          value={summary.leaders[0] ? fmt(summary.leaders[0].length) : '–'}
          hint={summary.leaders[0]?.userId}
        />
        <Stat label="Freezes" value={s.freezesEnabled ? `Up to ${s.maxFreezes}` : 'Off'} />
      </div>
      <div class="grid two">
        <div class="card">
          <h2>Settings</h2>
          <form method="post" action="/dashboard/streaks" class="stack" id="streak-form">
            <Csrf token={ctx.csrf} />
            <input type="hidden" name="_loaded" value="yes" />
            <FormError form={f} />
            <Checkbox form={f} name="enabled" label="Streaks are enabled" />
            <div class="row">
              <Select
                form={f}
                name="frequency"
                label="Frequency"
                options={[
                  ['daily', 'Daily'],
                  ['weekly', 'Weekly'],
                  ['monthly', 'Monthly'],
                ]}
              />
              <Select
                form={f}
                name="mode"
                label="Conditions to meet"
                options={[
                  ['all', 'All of them'],
                  ['any', 'Any of them'],
                ]}
              />
            </div>
            <h3>Conditions</h3>
            {f.errors.conditions ? <div class="flash error">{f.errors.conditions}</div> : null}
            {[0, 1, 2].map((i) => (
              <div class="row">
                <Select
                  form={f}
                  name={`conditions.${i}.metricId`}
                  label={`Metric ${i + 1}`}
                  options={metricOptions}
                  blank="—"
                />
                <Input
                  form={f}
                  name={`conditions.${i}.threshold`}
                  label="At least, per period"
                  placeholder="1"
                />
              </div>
            ))}
            <h3>Freezes</h3>
            <Checkbox
              form={f}
              name="freezesEnabled"
              label="Freezes keep a streak alive through a missed period"
            />
            <div class="row">
              <Input form={f} name="maxFreezes" label="Maximum freezes" />
              <Input form={f} name="initialFreezes" label="Freezes for new users" />
            </div>
            <div class="row">
              <Input
                form={f}
                name="freezeAutoEarnAmount"
                label="Auto-earn amount"
                hint="Leave both empty to turn auto-earn off"
              />
              <Input form={f} name="freezeAutoEarnInterval" label="Auto-earn every (days)" />
            </div>
            <div>
              <button type="submit">Save streak settings</button>
            </div>
          </form>
        </div>
        <div class="card">
          <h2>Longest current streaks</h2>
          {summary.leaders.length ? (
            <table>
              <thead>
                <tr>
                  <th>User</th>
                  <th class="num">Length</th>
                </tr>
              </thead>
              <tbody>
                {summary.leaders.map((l) => (
                  <tr>
                    <td>
                      <a href={`/dashboard/users?id=${encodeURIComponent(l.userId)}`}>{l.userId}</a>
                    </td>
                    <td class="num">{fmt(l.length)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <Empty>No user has an active streak.</Empty>
          )}
        </div>
      </div>
    </Layout>
  );
}

// ---------------------------------------------------------------- routes

export function mountConfigPages(app: Hono<DashEnv>, deps: Deps): void {
  app.get('/metrics', async (c) => c.html(await metricsPage(deps, pageCtx(c), emptyForm())));
  app.post('/metrics', async (c) => {
    const v = await formOf(c);
    const item = { name: str(v.name), key: str(v.key), unitType: str(v.unitType), units: strOrNull(v.units) };
    const r = await attempt(deps, () => metricsResource.create!(deps, { item: item }), METRIC_FIELDS, v);
    if (!r.ok) return c.html(await metricsPage(deps, pageCtx(c), r.form), 422);
    return done(c, '/dashboard/metrics', `Metric “${r.value.name}” created.`);
  });
  app.post('/metrics/:id/delete', async (c) => {
    const r = await attempt(deps, () => metricsResource.remove!(deps, { id: c.req.param('id') }), [], {});
    return r.ok
      ? done(c, '/dashboard/metrics', 'Metric deleted.')
      : done(c, '/dashboard/metrics', r.form.formError ?? 'Not deleted', 'error');
  });

  app.get('/attributes', async (c) => c.html(await attributesPage(deps, pageCtx(c), emptyForm())));
  app.post('/attributes', async (c) => {
    const v = await formOf(c);
    const item = { name: str(v.name), key: str(v.key), type: str(v.type) };
    const r = await attempt(
      deps,
      () => attributesResource.create!(deps, { item: item }),
      ATTRIBUTE_FIELDS,
      v,
    );
    if (!r.ok) return c.html(await attributesPage(deps, pageCtx(c), r.form), 422);
    return done(c, '/dashboard/attributes', `Attribute “${r.value.name}” created.`);
  });
  app.post('/attributes/:id/delete', async (c) => {
    const r = await attempt(deps, () => attributesResource.remove!(deps, { id: c.req.param('id') }), [], {});
    return r.ok
      ? done(c, '/dashboard/attributes', 'Attribute deleted.')
      : done(c, '/dashboard/attributes', r.form.formError ?? 'Not deleted', 'error');
  });

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
    const r = await attempt(deps, () => achievementsResource.update!(deps, { item: item }), [], v);
    return r.ok
      ? done(c, '/dashboard/achievements', `Achievement “${r.value.name}” is now ${r.value.status}.`)
      : done(c, '/dashboard/achievements', r.form.formError ?? 'Not changed', 'error');
  });
  app.post('/achievements/:id/delete', async (c) => {
    const r = await attempt(
      deps,
      () => achievementsResource.remove!(deps, { id: c.req.param('id') }),
      [],
      {},
    );
    return r.ok
      ? done(c, '/dashboard/achievements', 'Achievement deleted.')
      : done(c, '/dashboard/achievements', r.form.formError ?? 'Not deleted', 'error');
  });

  app.get('/streaks', async (c) => c.html(await streaksPage(deps, pageCtx(c), null)));
  app.post('/streaks', async (c) => {
    const v = await formOf(c);
    // updateStreakSettings publishes the change itself.
    const r = await attempt(
      deps,
      () => updateStreakSettings(deps, parseWith(StreakSettingsPatchSchema, streakPatch(v))),
      STREAK_FIELDS,
      v,
      false,
    );
    if (!r.ok) return c.html(await streaksPage(deps, pageCtx(c), r.form), 422);
    return done(c, '/dashboard/streaks', 'Streak settings saved.');
  });
}
