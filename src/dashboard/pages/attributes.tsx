import type { Hono } from 'hono';
import { attributesResource } from '../../admin/attributes';
import type { Deps } from '../../deps';
import { attempt, done, formOf, pageCtx, str } from '../forms';
import type { DashEnv } from '../session';
import { ALL, mountDelete } from '../resource-pages';
import { CreateCard, NameKeyInputs } from '../components/form';
import { DeleteButton, Table } from '../components/table';
import { Layout, type PageCtx } from '../ui';
import { emptyForm, type FormState, Select } from '../components/fields';

const ATTRIBUTE_FIELDS = ['name', 'key', 'type'] as const;

/** The choices of the page's selects, by field: each value with its label. */
const CHOICES = {
  type: [
    ['user', 'User attribute'],
    ['event', 'Event attribute'],
  ],
} as const;

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
          <Table
            cols={['Name', 'Key', 'Type', '']}
            rows={rows}
            empty="No attributes yet."
            row={(a) => (
              <tr>
                <td>{a.name}</td>
                <td>
                  <code>{a.key}</code>
                </td>
                <td>
                  <span class="badge">{a.type}</span>
                </td>
                <td class="num">
                  <DeleteButton action={`/dashboard/attributes/${a.id}/delete`} csrf={ctx.csrf} />
                </td>
              </tr>
            )}
          />
        </div>
        <CreateCard
          title="New attribute"
          action="/dashboard/attributes"
          csrf={ctx.csrf}
          form={form}
          submit="Create attribute"
        >
          <NameKeyInputs form={form} placeholders={['Plan', 'plan']} />
          <Select form={form} name="type" label="Type" options={CHOICES.type} />
        </CreateCard>
      </div>
    </Layout>
  );
}

export function mountAttributePages(app: Hono<DashEnv>, deps: Deps): void {
  app.get('/attributes', async (c) => c.html(await attributesPage(deps, pageCtx(c), emptyForm())));
  app.post('/attributes', async (c) => {
    const v = await formOf(c);
    const item = { name: str(v.name), key: str(v.key), type: str(v.type) };
    const r = await attempt(deps, () => attributesResource.create!(deps, { item }), ATTRIBUTE_FIELDS, v);
    if (!r.ok) return c.html(await attributesPage(deps, pageCtx(c), r.form), 422);
    return done(c, '/dashboard/attributes', `Attribute “${r.value.name}” created.`);
  });
  mountDelete(app, deps, '/attributes', attributesResource, 'Attribute deleted.');
}
