import type { Hono } from 'hono';
import {
  getStreakSettings,
  showStreakSettings,
  StreakSettingsPatchSchema,
  updateStreakSettings,
} from '../../admin/streak-settings';
import type { Deps } from '../../deps';
import { parseWith } from '../../wire/parse';
import { streakSummary } from '../data';
import { attempt, checked, done, formOf, num, pageCtx, str, type Values } from '../forms';
import type { DashEnv } from '../session';
import { numeric, Table } from '../components/table';
import { Csrf, Empty, fmt, Layout, type PageCtx, Stat } from '../ui';
import { Checkbox, FormError, Input, Select, type FormState, optionsOf } from '../components/fields';

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

/** The choices of the page's selects, by field: each value with its label. */
const CHOICES = {
  frequency: [
    ['daily', 'Daily'],
    ['weekly', 'Weekly'],
    ['monthly', 'Monthly'],
  ],
  mode: [
    ['all', 'All of them'],
    ['any', 'Any of them'],
  ],
} as const;

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
  const metricOptions = optionsOf(deps.catalog.snapshot.metrics);
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
              <Select form={f} name="frequency" label="Frequency" options={CHOICES.frequency} />
              <Select form={f} name="mode" label="Conditions to meet" options={CHOICES.mode} />
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
            <Table
              cols={['User', numeric('Length')]}
              rows={summary.leaders}
              row={(l) => (
                <tr>
                  <td>
                    <a href={`/dashboard/users?id=${encodeURIComponent(l.userId)}`}>{l.userId}</a>
                  </td>
                  <td class="num">{fmt(l.length)}</td>
                </tr>
              )}
            />
          ) : (
            <Empty>No user has an active streak.</Empty>
          )}
        </div>
      </div>
    </Layout>
  );
}

export function mountStreakPages(app: Hono<DashEnv>, deps: Deps): void {
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
