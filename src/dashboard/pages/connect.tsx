import type { Hono } from 'hono';
import { apiKeysResource } from '../../admin/api-keys';
import {
  DELIVERY_FILTERS,
  type DeliveryFilter,
  type EndpointHealth,
  findWebhookEndpoint,
  listWebhookDeliveries,
  WEBHOOK_EVENT_TYPES,
  webhookEndpointHealth,
  webhooksResource,
} from '../../admin/webhooks';
import type { Deps } from '../../deps';
import { notFound } from '../../errors';
import { isUuid } from '../../admin/resource';
import { redeliver } from '../data';
import { attempt, done, formOf, list, num, pageCtx, str, strOrNull } from '../forms';
import { ALL, mountDelete } from '../resource-pages';
import type { DashEnv } from '../session';
import { CreateCard } from '../components/form';
import { DeleteButton, numeric, RowActions, Table } from '../components/table';
import { fmt, Layout, type PageCtx, PostButton, Status, when } from '../ui';
import { Checkbox, emptyForm, type FormState, Input, Select } from '../components/fields';

const WEBHOOK_FIELDS = ['url', 'eventTypes', 'description', 'enabled', 'secret'] as const;
const KEY_FIELDS = ['name', 'kind', 'rateLimitPerSecond'] as const;

/** The choices of the page's selects, by field: each value with its label. */
const CHOICES = {
  kind: [
    ['application', 'Application (/v1)'],
    ['admin', 'Admin (/admin/v1, dashboard)'],
  ],
} as const;

const Secret = (p: { title: string; value: string; note: string }) => (
  <div class="flash ok" role="status">
    <strong>{p.title}</strong>
    <div class="secret">
      <code id="new-secret">{p.value}</code>
    </div>
    <div style="margin-top:6px">{p.note}</div>
  </div>
);

// ---------------------------------------------------------------- webhooks

/** An enabled endpoint with deliveries in retry or failed in the last 24 h is shown as failing. */
const EndpointState = (p: { enabled: boolean; health: EndpointHealth | undefined; href: string }) => {
  if (!p.enabled) return <Status s="inactive" />;
  const h = p.health;
  if (!h) return <Status s="active" />;
  const parts = [
    h.retrying ? `${fmt(h.retrying)} retrying` : '',
    h.failed ? `${fmt(h.failed)} failed in 24 h` : '',
  ].filter(Boolean);
  return (
    <div class="warn-cell">
      <span class="badge failing">failing</span>
      <div class="sub">
        <a href={`${p.href}?status=${h.retrying ? 'retrying' : 'failed'}`}>{parts.join(', ')}</a>
        {h.lastError ? ` · last: ${h.lastError.slice(0, 80)}` : ''}
      </div>
    </div>
  );
};

/** A pending delivery whose last attempt failed is shown as retrying (its status stays `pending`). */
const deliveryState = (d: { status: string; lastError: string | null }) =>
  d.status === 'pending' && d.lastError !== null ? 'retrying' : d.status;

async function webhooksPage(
  deps: Deps,
  ctx: PageCtx,
  form: FormState,
  created?: { url: string; secret: string },
) {
  const [rows, health] = await Promise.all([webhooksResource.list(deps, ALL), webhookEndpointHealth(deps)]);
  const chosen = new Set(
    Array.isArray(form.values.eventTypes)
      ? form.values.eventTypes
      : form.values.eventTypes
        ? [form.values.eventTypes]
        : [],
  );
  return (
    <Layout
      title="Webhooks"
      active="/dashboard/webhooks"
      ctx={ctx}
      sub="Laurel posts signed events to these endpoints and retries failed deliveries."
    >
      {created ? (
        <Secret
          title={`Endpoint ${created.url} created. Its signing secret:`}
          value={created.secret}
          note="Copy it now: it is not shown again."
        />
      ) : null}
      <div class="card">
        <h2>Endpoints</h2>
        <Table
          cols={['URL', 'Events', 'State', '']}
          rows={rows}
          empty="No webhook endpoints."
          row={(w) => (
            <tr>
              <td>
                <a href={`/dashboard/webhooks/${w.id}`}>{w.url}</a>
                {w.description ? <div class="sub">{w.description}</div> : null}
              </td>
              <td>
                {w.eventTypes.length === WEBHOOK_EVENT_TYPES.length ? 'All events' : w.eventTypes.join(', ')}
              </td>
              <td data-endpoint-state={w.url}>
                <EndpointState
                  enabled={w.enabled}
                  health={health.get(w.id)}
                  href={`/dashboard/webhooks/${w.id}`}
                />
              </td>
              <RowActions href={`/dashboard/webhooks/${w.id}`} csrf={ctx.csrf}>
                <PostButton
                  action={`/dashboard/webhooks/${w.id}/enabled`}
                  csrf={ctx.csrf}
                  label={w.enabled ? 'Disable' : 'Enable'}
                  fields={{ enabled: w.enabled ? 'off' : 'on' }}
                />
              </RowActions>
            </tr>
          )}
        />
      </div>
      <CreateCard
        title="New endpoint"
        action="/dashboard/webhooks"
        csrf={ctx.csrf}
        form={form}
        submit="Create endpoint"
      >
        <div class="row">
          <Input form={form} name="url" label="URL" placeholder="https://example.com/laurel" />
          <Input form={form} name="description" label="Description" />
        </div>
        <div class={`field${form.errors.eventTypes ? ' bad' : ''}`} data-field="eventTypes">
          <span class="label">Events</span>
          <div class="checks">
            {WEBHOOK_EVENT_TYPES.map((t) => (
              <label class="check">
                <input type="checkbox" name="eventTypes" value={t} checked={chosen.has(t)} /> <code>{t}</code>
              </label>
            ))}
          </div>
          {form.errors.eventTypes ? <div class="err">{form.errors.eventTypes}</div> : null}
        </div>
        <Checkbox form={form} name="enabled" label="Enabled" def />
      </CreateCard>
    </Layout>
  );
}

async function deliveriesPage(deps: Deps, ctx: PageCtx, id: string, status: string | undefined) {
  const endpoint = isUuid(id) ? await findWebhookEndpoint(deps, id) : undefined;
  if (!endpoint) throw notFound('Webhook endpoint not found');
  const filter = (DELIVERY_FILTERS as readonly string[]).includes(status ?? '')
    ? (status as DeliveryFilter)
    : undefined;
  const rows = await listWebhookDeliveries(deps, id, {
    limit: 100,
    skip: 0,
    ...(filter ? { status: filter } : {}),
  });
  return (
    <Layout
      title="Deliveries"
      active="/dashboard/webhooks"
      ctx={ctx}
      sub={endpoint.url}
      actions={<a href="/dashboard/webhooks">All endpoints</a>}
    >
      <div class="card">
        <div class="tabs">
          <a href={`/dashboard/webhooks/${id}`} class={filter ? '' : 'on'}>
            All
          </a>
          {DELIVERY_FILTERS.map((s) => (
            <a href={`/dashboard/webhooks/${id}?status=${s}`} class={filter === s ? 'on' : ''}>
              {s}
            </a>
          ))}
        </div>
        <Table
          cols={['Event', 'Created', 'Status', numeric('Attempts'), 'Last attempt', 'Result', '']}
          rows={rows}
          empty={<>No deliveries in the last {deps.config.WEBHOOK_RETENTION_DAYS} days.</>}
          row={(d) => (
            <tr>
              <td>
                <code>{d.type}</code>
                <div class="sub mono">{d.eventId}</div>
              </td>
              <td>{when(d.created)}</td>
              <td>
                <Status s={deliveryState(d)} />
              </td>
              <td class="num">{fmt(d.attempts)}</td>
              <td>{when(d.lastAttemptAt)}</td>
              <td>
                {d.lastStatusCode ? `HTTP ${d.lastStatusCode}` : (d.lastError ?? '–')}
                {d.status === 'pending' && d.nextAttemptAt ? (
                  <div class="sub">
                    {d.lastError ? 'retry' : 'next attempt'} {when(d.nextAttemptAt)}
                  </div>
                ) : null}
              </td>
              <td class="num">
                {d.status !== 'pending' ? (
                  <PostButton
                    action={`/dashboard/webhooks/${id}/deliveries/${d.id}/redeliver`}
                    csrf={ctx.csrf}
                    label="Redeliver"
                  />
                ) : null}
              </td>
            </tr>
          )}
        />
      </div>
    </Layout>
  );
}

// ---------------------------------------------------------------- integration (API keys)

async function integrationPage(
  deps: Deps,
  ctx: PageCtx,
  form: FormState,
  created?: { name: string; key: string },
) {
  const rows = await apiKeysResource.list(deps, ALL);
  return (
    <Layout
      title="Integration"
      active="/dashboard/integration"
      ctx={ctx}
      sub="API keys: application keys call /v1 from your backend; admin keys configure Laurel and sign in here."
    >
      {created ? (
        <Secret
          title={`Key “${created.name}” created:`}
          value={created.key}
          note="Copy it now: only its prefix is shown again."
        />
      ) : null}
      <div class="grid two">
        <div class="card">
          <h2>API keys</h2>
          <table id="api-keys">
            <thead>
              <tr>
                <th>Name</th>
                <th>Kind</th>
                <th>Prefix</th>
                <th>Last used</th>
                <th>Status</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {rows.map((k) => (
                <tr>
                  <td>{k.name}</td>
                  <td>{k.kind}</td>
                  <td>
                    <code>{k.prefix}.…</code>
                  </td>
                  <td>{when(k.lastUsed)}</td>
                  <td>
                    <Status s={k.status} />
                  </td>
                  <td class="num">
                    {k.status === 'active' ? (
                      <DeleteButton
                        action={`/dashboard/integration/keys/${k.id}/revoke`}
                        csrf={ctx.csrf}
                        label="Revoke"
                      />
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <CreateCard
          title="New API key"
          action="/dashboard/integration/keys"
          csrf={ctx.csrf}
          form={form}
          submit="Create key"
          id="key-form"
          below={
            <>
              <h3>Send an event</h3>
              <pre
                class="mono"
                style="white-space:pre-wrap;background:#f5f6f8;padding:10px;border-radius:6px;margin:0"
              >
                {`curl -X POST <laurel>/v1/metrics/<metric-key>/event \\
  -H "X-API-KEY: <application key>" \\
  -H "Content-Type: application/json" \\
  -d '{"user": {"id": "user-1"}, "value": 1}'`}
              </pre>
            </>
          }
        >
          <Input form={form} name="name" label="Name" placeholder="Production backend" />
          <Select form={form} name="kind" label="Kind" options={CHOICES.kind} />
          <Input
            form={form}
            name="rateLimitPerSecond"
            label="Rate limit per second"
            hint={`Empty = server default (${fmt(deps.config.RATE_LIMIT_PER_SECOND)})`}
          />
        </CreateCard>
      </div>
    </Layout>
  );
}

export function mountConnectPages(app: Hono<DashEnv>, deps: Deps): void {
  app.get('/webhooks', async (c) => c.html(await webhooksPage(deps, pageCtx(c), emptyForm())));
  app.post('/webhooks', async (c) => {
    const v = await formOf(c);
    const item = {
      url: str(v.url),
      eventTypes: list(v.eventTypes),
      description: strOrNull(v.description),
      enabled: str(v.enabled) === 'on',
    };
    const r = await attempt(deps, () => webhooksResource.create!(deps, { item }), WEBHOOK_FIELDS, v);
    if (!r.ok) return c.html(await webhooksPage(deps, pageCtx(c), r.form), 422);
    const secret = (r.value as { secret?: string }).secret ?? '';
    return c.html(await webhooksPage(deps, pageCtx(c), emptyForm(), { url: r.value.url, secret }), 201);
  });
  app.get('/webhooks/:id', async (c) =>
    c.html(await deliveriesPage(deps, pageCtx(c), c.req.param('id'), c.req.query('status'))),
  );
  app.post('/webhooks/:id/enabled', async (c) => {
    const v = await formOf(c);
    const r = await attempt(
      deps,
      () =>
        webhooksResource.update!(deps, { item: { id: c.req.param('id'), enabled: str(v.enabled) === 'on' } }),
      [],
      v,
    );
    return r.ok
      ? done(c, '/dashboard/webhooks', `Endpoint ${r.value.enabled ? 'enabled' : 'disabled'}.`)
      : done(c, '/dashboard/webhooks', r.form.formError ?? 'Not changed', 'error');
  });
  mountDelete(app, deps, '/webhooks', webhooksResource, 'Endpoint deleted.');
  app.post('/webhooks/:id/deliveries/:delivery/redeliver', async (c) => {
    const id = c.req.param('id');
    const delivery = c.req.param('delivery');
    const ok = isUuid(id) && isUuid(delivery) && (await redeliver(deps, id, delivery));
    return ok
      ? done(c, `/dashboard/webhooks/${id}`, 'Delivery queued again.')
      : done(c, '/dashboard/webhooks', 'Delivery not found.', 'error');
  });

  app.get('/integration', async (c) =>
    c.html(await integrationPage(deps, pageCtx(c), emptyForm({ kind: 'application' }))),
  );
  app.post('/integration/keys', async (c) => {
    const v = await formOf(c);
    const item = {
      name: str(v.name),
      kind: str(v.kind),
      rateLimitPerSecond: num(v.rateLimitPerSecond) ?? null,
    };
    const r = await attempt(deps, () => apiKeysResource.create!(deps, { item }), KEY_FIELDS, v);
    if (!r.ok) return c.html(await integrationPage(deps, pageCtx(c), r.form), 422);
    // Shown once, in this response only: never through a redirect or a cookie.
    return c.html(
      await integrationPage(deps, pageCtx(c), emptyForm({ kind: 'application' }), {
        name: r.value.name,
        key: r.value.key ?? '',
      }),
      201,
    );
  });
  app.post('/integration/keys/:id/revoke', async (c) => {
    const r = await attempt(deps, () => apiKeysResource.remove!(deps, { id: c.req.param('id') }), [], {});
    return r.ok
      ? done(c, '/dashboard/integration', 'Key revoked. Requests with it are refused from now on.')
      : done(
          c,
          '/dashboard/integration',
          r.form.formError ?? 'Not revoked',
          r.form.formError?.includes('already') ? 'warn' : 'error',
        );
  });
}
