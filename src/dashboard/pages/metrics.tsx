import type { Hono } from 'hono';
import { metricsResource } from '../../admin/metrics';
import type { Deps } from '../../deps';
import { attempt, done, formOf, pageCtx, str, strOrNull } from '../forms';
import type { DashEnv } from '../session';
import { ALL, mountDelete } from '../resource-pages';
import { CreateCard, NameKeyInputs } from '../components/form';
import { DeleteButton, Table } from '../components/table';
import { Layout, type PageCtx } from '../ui';
import { emptyForm, type FormState, Input, Select } from '../components/fields';

const METRIC_FIELDS = ['name', 'key', 'unitType', 'units'] as const;

/** The choices of the page's selects, by field: each value with its label. */
const CHOICES = {
  unitType: [
    ['number', 'Number'],
    ['currency', 'Currency'],
  ],
} as const;

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
          <Table
            cols={['Name', 'Key', 'Units', 'Created', '']}
            rows={rows}
            empty="No metrics yet. Create the first one to start recording events."
            row={(m) => (
              <tr>
                <td>{m.name}</td>
                <td>
                  <code>{m.key}</code>
                </td>
                <td>{m.unitType === 'currency' ? `${m.units} (currency)` : (m.units ?? '–')}</td>
                <td>{m.created.slice(0, 10)}</td>
                <td class="num">
                  <DeleteButton action={`/dashboard/metrics/${m.id}/delete`} csrf={ctx.csrf} />
                </td>
              </tr>
            )}
          />
        </div>
        <CreateCard
          title="New metric"
          action="/dashboard/metrics"
          csrf={ctx.csrf}
          form={form}
          submit="Create metric"
          id="metric-form"
        >
          <NameKeyInputs
            form={form}
            placeholders={['Lessons completed', 'lessons']}
            keyHint="Used in the API path: letters, digits, _ and -"
          />
          <div class="row">
            <Select form={form} name="unitType" label="Unit type" options={CHOICES.unitType} />
            <Input form={form} name="units" label="Units" placeholder="lessons, USD…" />
          </div>
        </CreateCard>
      </div>
    </Layout>
  );
}

export function mountMetricPages(app: Hono<DashEnv>, deps: Deps): void {
  app.get('/metrics', async (c) => c.html(await metricsPage(deps, pageCtx(c), emptyForm())));
  app.post('/metrics', async (c) => {
    const v = await formOf(c);
    const item = { name: str(v.name), key: str(v.key), unitType: str(v.unitType), units: strOrNull(v.units) };
    const r = await attempt(deps, () => metricsResource.create!(deps, { item }), METRIC_FIELDS, v);
    if (!r.ok) return c.html(await metricsPage(deps, pageCtx(c), r.form), 422);
    return done(c, '/dashboard/metrics', `Metric “${r.value.name}” created.`);
  });
  mountDelete(app, deps, '/metrics', metricsResource, 'Metric deleted.');
}
