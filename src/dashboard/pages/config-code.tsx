import type { Hono } from 'hono';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { loadSnapshot } from '../../catalog/snapshot';
import { type PlanResult, runConfig, StaleVersion } from '../../config-as-code/apply';
import { listChanges } from '../../config-as-code/audit';
import { parseDocument } from '../../config-as-code/document';
import { exportDocument } from '../../config-as-code/items';
import type { Deps } from '../../deps';
import { checked, done, formOf, pageCtx } from '../forms';
import type { DashEnv } from '../session';
import { DocumentField } from '../components/form';
import { Table } from '../components/table';
import { Csrf, Layout, type PageCtx, when } from '../ui';

const PATH = '/dashboard/config-code';

/** A pasted document: JSON, else YAML. */
function readText(text: string): { body: unknown } | { error: string } {
  try {
    return { body: JSON.parse(text) };
  } catch {}
  try {
    return { body: parseYaml(text, { maxAliasCount: 100 }) };
  } catch (err) {
    return { error: `Neither JSON nor YAML: ${(err as Error).message.split('\n')[0]}` };
  }
}

const show = (v: unknown) => JSON.stringify(v);

const PlanView = (p: { plan: PlanResult }) => (
  <div class="card">
    <h3>
      Plan: {p.plan.summary.create} to create, {p.plan.summary.update} to update, {p.plan.summary.delete} to
      delete, {p.plan.summary.unchanged} unchanged
    </h3>
    <pre class="plan">
      {p.plan.changes
        .filter((c) => c.action !== 'unchanged' || c.notInDocument)
        .map((c) => {
          const name = `${c.resource} ${c.key}`;
          if (c.action === 'create') return `+ ${name}\n`;
          if (c.action === 'delete') return `- ${name}\n`;
          if (c.action === 'unchanged') return `  ${name} (not in the document, kept)\n`;
          return `~ ${name}\n${Object.entries(c.fields ?? {})
            .map(([f, v]) => `    ${f}: ${show(v.before)} → ${show(v.after)}\n`)
            .join('')}`;
        })
        .join('') || 'No changes.'}
    </pre>
    {p.plan.issues.length ? (
      <ul class="issues">
        {p.plan.issues.map((i) => (
          <li class={i.severity === 'error' ? 'err' : 'warn'}>
            {i.severity}: {i.key ? `${i.resource} ${i.key}: ` : ''}
            {i.message}
          </li>
        ))}
      </ul>
    ) : null}
  </div>
);

async function page(
  deps: Deps,
  ctx: PageCtx,
  opts: { text?: string; prune?: boolean; plan?: PlanResult; error?: string } = {},
) {
  const { changes } = await listChanges(deps, { limit: 50, skip: 0 });
  const canApply = opts.plan && !opts.plan.issues.some((i) => i.severity === 'error');
  return (
    <Layout
      title="Configuration as code"
      active={PATH}
      ctx={ctx}
      sub="Export the whole configuration as one document; import a document: see its plan, then apply it."
      actions={
        <div class="inline">
          <a class="button" href={`${PATH}/export`}>
            Export JSON
          </a>{' '}
          <a class="button" href={`${PATH}/export?format=yaml`}>
            Export YAML
          </a>
        </div>
      }
    >
      <div class="card">
        <h3>Import</h3>
        <form method="post" action={`${PATH}/plan`} class="stack">
          <Csrf token={ctx.csrf} />
          <DocumentField
            label="Document (JSON or YAML, format laurel.config/v1)"
            rows={14}
            text={opts.text ?? ''}
            error={opts.error}
          />
          <label>
            <input type="checkbox" name="prune" checked={opts.prune ?? false} /> Prune: delete items of the
            document's sections that it does not name
          </label>
          <button type="submit">Show plan</button>
        </form>
      </div>
      {opts.plan ? <PlanView plan={opts.plan} /> : null}
      {opts.plan && canApply ? (
        <form method="post" action={`${PATH}/apply`} class="card">
          <Csrf token={ctx.csrf} />
          <input type="hidden" name="document" value={opts.text ?? ''} />
          {opts.prune ? <input type="hidden" name="prune" value="on" /> : null}
          <button type="submit">Apply this plan</button>
        </form>
      ) : null}
      <div class="card">
        <h3>Recent changes</h3>
        <Table
          cols={['When', 'Key', 'Source', 'Change', 'Before → after']}
          rows={changes}
          empty="No configuration change recorded yet."
          row={(c) => (
            <tr>
              <td>{when(c.at)}</td>
              <td>{c.keyName}</td>
              <td>{c.source}</td>
              <td>
                {c.action} {c.resource} {c.item}
              </td>
              <td>
                <code>
                  {c.action === 'create'
                    ? show(c.after)
                    : c.action === 'delete'
                      ? show(c.before)
                      : diffText(c.before, c.after)}
                </code>
              </td>
            </tr>
          )}
        />
      </div>
    </Layout>
  );
}

function diffText(before: Record<string, unknown> | null, after: Record<string, unknown> | null): string {
  const out: string[] = [];
  for (const f of Object.keys({ ...before, ...after })) {
    if (show(before?.[f]) !== show(after?.[f])) out.push(`${f}: ${show(before?.[f])} → ${show(after?.[f])}`);
  }
  return out.join('; ');
}

/** Export and import (plan, then apply) of the configuration document, and the audit log. */
export function mountConfigCodePages(app: Hono<DashEnv>, deps: Deps): void {
  app.get('/config-code', async (c) => c.html(await page(deps, pageCtx(c))));

  app.get('/config-code/export', async (c) => {
    const doc = exportDocument(await loadSnapshot(deps.db, 0), deps.clock.now());
    const yaml = c.req.query('format') === 'yaml';
    c.header('Content-Disposition', `attachment; filename="laurel-config.${yaml ? 'yaml' : 'json'}"`);
    if (yaml) return c.body(toYaml(doc), 200, { 'Content-Type': 'application/yaml; charset=utf-8' });
    return c.body(`${JSON.stringify(doc, null, 2)}\n`, 200, {
      'Content-Type': 'application/json; charset=utf-8',
    });
  });

  const read = async (text: string) => {
    const r = readText(text);
    if ('error' in r) return { error: r.error };
    if (typeof r.body !== 'object' || r.body === null || Array.isArray(r.body))
      return { error: 'The document must be an object' };
    const parsed = parseDocument(r.body);
    if ('problems' in parsed) return { error: parsed.problems.join('; ') };
    return { doc: parsed.doc };
  };

  app.post('/config-code/plan', async (c) => {
    const v = await formOf(c);
    const text = typeof v.document === 'string' ? v.document : '';
    const prune = checked(v.prune);
    const r = await read(text);
    if (!r.doc) return c.html(await page(deps, pageCtx(c), { text, prune, error: r.error }), 422);
    const { result } = await runConfig(deps, r.doc, { prune, apply: false });
    return c.html(await page(deps, pageCtx(c), { text, prune, plan: result }));
  });

  app.post('/config-code/apply', async (c) => {
    const v = await formOf(c);
    const text = typeof v.document === 'string' ? v.document : '';
    const prune = checked(v.prune);
    const r = await read(text);
    if (!r.doc) return c.html(await page(deps, pageCtx(c), { text, prune, error: r.error }), 422);
    try {
      const { result, applied } = await runConfig(deps, r.doc, { prune, apply: true });
      if (!applied) return c.html(await page(deps, pageCtx(c), { text, prune, plan: result }), 422);
      const s = result.summary;
      const secrets = (result.secrets ?? []).map((x) => ` Signing secret of ${x.url}: ${x.secret}`).join('');
      return done(
        c,
        PATH,
        `Applied: ${s.create} created, ${s.update} updated, ${s.delete} deleted.${secrets}`,
      );
    } catch (err) {
      if (err instanceof StaleVersion)
        return c.html(await page(deps, pageCtx(c), { text, prune, error: err.message }), 409);
      throw err;
    }
  });
}
