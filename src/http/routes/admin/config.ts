import type { Context } from 'hono';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { loadSnapshot } from '../../../catalog/snapshot';
import { runConfig, StaleVersion } from '../../../config-as-code/apply';
import { listChanges } from '../../../config-as-code/audit';
import { ConfigDocumentSchema, configJsonSchema, parseDocument } from '../../../config-as-code/document';
import { exportDocument } from '../../../config-as-code/items';
import type { Deps } from '../../../deps';
import { badRequest, unprocessable } from '../../../errors';
import { z } from '../../../zod';
import type { AppEnv } from '../../../app-env';
import { readBody } from '../../middleware/body-limit';
import { adminRoutes, createRoute, errorResponse, mount, type RoutesApp } from '../../openapi';
import { readJson } from '../../validate';
import { readPage } from './bulk';

const fieldChange = z.object({ before: z.unknown(), after: z.unknown() });
const PlanSchema = z
  .object({
    version: z.string().describe('Current version (plan) or the version after the change (apply)'),
    applied: z.boolean(),
    changes: z.array(
      z.object({
        resource: z.string(),
        key: z.string(),
        action: z.enum(['create', 'update', 'delete', 'unchanged']),
        fields: z.record(z.string(), fieldChange).optional(),
        value: z.record(z.string(), z.unknown()).optional(),
        notInDocument: z.boolean().optional(),
      }),
    ),
    issues: z.array(
      z.object({
        severity: z.enum(['error', 'warning']),
        message: z.string(),
        resource: z.string().optional(),
        key: z.string().optional(),
      }),
    ),
    summary: z.object({ create: z.number(), update: z.number(), delete: z.number(), unchanged: z.number() }),
    secrets: z.array(z.object({ url: z.string(), secret: z.string() })).optional(),
  })
  .openapi('ConfigPlan');

const ChangeSchema = z
  .object({
    id: z.number().int(),
    batch: z.uuid().describe('Changes made by one write share it'),
    at: z.string(),
    keyName: z.string().describe('Name of the admin key that made the change ("system" for start-up tasks)'),
    keyPrefix: z.string().nullable(),
    source: z.enum(['api', 'dashboard', 'config', 'system']),
    resource: z.string(),
    item: z.string(),
    action: z.enum(['create', 'update', 'delete']),
    before: z.record(z.string(), z.unknown()).nullable(),
    after: z.record(z.string(), z.unknown()).nullable(),
  })
  .openapi('ConfigChange');

const utf8 = new TextDecoder('utf-8', { fatal: true });

const isYaml = (c: Context) => /yaml/i.test(c.req.header('content-type') ?? '');

/** The document of a plan or apply request: JSON, or YAML when the content type says so. */
async function readDocumentBody(c: Context<AppEnv>): Promise<unknown> {
  if (!isYaml(c)) return readJson(c);
  const buf = await readBody(c);
  if (buf.byteLength === 0) throw badRequest('Request body is required');
  let parsed: unknown;
  try {
    parsed = parseYaml(utf8.decode(buf), { maxAliasCount: 100 });
  } catch (err) {
    throw badRequest(`Request body is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (JSON.stringify(parsed ?? null).includes('\\u0000'))
    throw unprocessable('Strings must not contain the NUL character (\\u0000)');
  return parsed;
}

function readPrune(c: Context): boolean {
  const v = c.req.query('prune');
  if (v === undefined || v === 'false' || v === '0') return false;
  if (v === '' || v === 'true' || v === '1') return true;
  throw unprocessable('prune must be true or false');
}

async function readDocument(c: Context<AppEnv>) {
  const body = await readDocumentBody(c);
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw badRequest('Request body must be a configuration document (an object)');
  const parsed = parseDocument(body);
  if ('problems' in parsed) {
    return { problems: parsed.problems };
  }
  return { doc: parsed.doc };
}

const configSchemaRoute = createRoute({
  method: 'get',
  path: '/admin/v1/config/schema.json',
  tags: ['configuration as code'],
  summary: 'JSON Schema of the configuration document (no key needed)',
  security: [],
  responses: { 200: { description: 'JSON Schema (draft 2020-12)' } },
});

/**
 * Public: the document's JSON Schema (no data in it; editors fetch it without a key), mounted on the
 * root app ahead of the admin key check.
 */
export function mountConfigSchema(app: RoutesApp): void {
  mount(app, configSchemaRoute, (c) => c.json(configJsonSchema() as object));
}

/** Configuration as code: export, plan, apply and the audit log (`/admin/v1/config…`). */
export function mountConfig(app: RoutesApp, deps: Deps): void {
  const tags = ['configuration as code'];
  const route = adminRoutes(tags);
  const docBody = {
    content: {
      'application/json': { schema: ConfigDocumentSchema },
      'application/yaml': { schema: ConfigDocumentSchema },
    },
  };
  const prune = z.object({
    prune: z
      .boolean()
      .optional()
      .describe('Delete the items of the present sections that the document does not name'),
  });

  const exportConfig = route('get', '/config', {
    summary: 'Export the whole configuration as one document, with its version',
    request: { query: z.object({ format: z.enum(['json', 'yaml']).optional() }) },
    responses: {
      200: {
        description: 'The configuration document (YAML with ?format=yaml)',
        content: { 'application/json': { schema: ConfigDocumentSchema } },
      },
    },
  });
  mount(app, exportConfig, async (c) => {
    const format = c.req.query('format') ?? 'json';
    if (format !== 'json' && format !== 'yaml') throw unprocessable('format must be json or yaml');
    const doc = exportDocument(await loadSnapshot(deps.db, 0), deps.clock.now());
    if (format === 'yaml')
      return c.body(toYaml(doc), 200, { 'content-type': 'application/yaml; charset=utf-8' });
    return c.json(doc);
  });

  const planConfig = route('post', '/config/plan', {
    summary:
      'The changes a document would make, item by item, with validation issues and warnings; changes nothing',
    request: { query: prune, body: docBody },
    responses: {
      200: { description: 'The plan', content: { 'application/json': { schema: PlanSchema } } },
      400: errorResponse('Not JSON/YAML or not an object'),
      422: errorResponse('The document does not match the schema (see issues)'),
    },
  });
  mount(app, planConfig, async (c) => {
    const prune = readPrune(c);
    const read = await readDocument(c);
    if (read.problems) return invalidDocument(c, read.problems);
    const { result } = await runConfig(deps, read.doc!, { prune, apply: false });
    return c.json({ ...result, applied: false });
  });

  const applyConfig = route('post', '/config/apply', {
    summary: 'Apply a document in one transaction (all items or none); published to every process',
    request: { query: prune, body: docBody },
    responses: {
      200: {
        description: 'Applied (the plan as executed, and the new version)',
        content: { 'application/json': { schema: PlanSchema } },
      },
      400: errorResponse('Not JSON/YAML or not an object'),
      409: errorResponse('The document names an older version; nothing changed'),
      422: errorResponse('Invalid document or items (see issues); nothing changed'),
    },
  });
  mount(app, applyConfig, async (c) => {
    const prune = readPrune(c);
    const read = await readDocument(c);
    if (read.problems) return invalidDocument(c, read.problems);
    try {
      const { result, applied } = await runConfig(deps, read.doc!, { prune, apply: true });
      if (!applied) {
        const errors = result.issues.filter((i) => i.severity === 'error');
        // Like every 4xx, exactly {"error"}: the plan endpoint answers the full list of issues.
        const more = errors.length > 5 ? ` (and ${errors.length - 5} more; see the plan)` : '';
        return c.json(
          {
            error: `${errors.length} item${errors.length === 1 ? ' has' : 's have'} errors; nothing was changed: ${errors
              .slice(0, 5)
              .map((i) => (i.key ? `${i.resource} ${i.key}: ${i.message}` : i.message))
              .join('; ')}${more}`,
          },
          422,
        );
      }
      return c.json({ ...result, applied: true });
    } catch (err) {
      if (err instanceof StaleVersion) return c.json({ error: err.message }, 409);
      throw err;
    }
  });

  const listChangesRoute = route('get', '/config/changes', {
    summary: 'The audit log of configuration changes (every path), newest first',
    request: {
      query: z.object({
        limit: z.number().int().min(1).max(100).optional(),
        skip: z.number().int().min(0).optional(),
      }),
    },
    responses: {
      200: {
        description: 'Newest first',
        content: { 'application/json': { schema: z.array(ChangeSchema) } },
      },
      422: errorResponse('Bad limit or skip'),
    },
  });
  mount(app, listChangesRoute, async (c) => {
    const { changes, total } = await listChanges(deps, readPage(c));
    c.header('X-Total-Count', String(total));
    return c.json(changes);
  });
}

function invalidDocument(c: Context, problems: string[]) {
  const more = problems.length > 3 ? ` (and ${problems.length - 3} more)` : '';
  return c.json({ error: `Invalid configuration document: ${problems.slice(0, 3).join('; ')}${more}` }, 422);
}
