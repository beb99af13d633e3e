import type { Context, Hono } from 'hono';
import { z } from '../../../zod';
import { type AdminIssue, ItemIssue } from '../../../admin/common';
import { type BulkResource, isUuid, type Scope } from '../../../admin/resource';
import { recordAdminWrite } from '../../../config-as-code/audit';
import type { Deps } from '../../../deps';
import { badRequest, notFoundNamed, unprocessable } from '../../../errors';
import type { AppEnv } from '../../../app-env';
import { ErrorBodySchema, type OpenAPIRegistry } from '../../openapi';
import { queryInt, queryList, queryOne, readJson } from '../../validate';

/** Reads a JSON array body of 1..max items: not JSON or not an array → 400; empty or too long → 422. */
export async function readItems(c: Context, max: number): Promise<unknown[]> {
  const body = await readJson(c);
  if (!Array.isArray(body)) throw badRequest('Request body must be a JSON array');
  if (body.length === 0) throw unprocessable('Request body must contain at least one item');
  if (body.length > max) throw unprocessable(`Request body must contain at most ${max} items`);
  return body;
}

/** `ids` query for bulk delete: repeated or comma-joined, 1..100 distinct. */
export function readIds(c: Context): string[] {
  const ids = [...new Set(queryList(c, 'ids'))];
  if (ids.length === 0) throw unprocessable('ids is required');
  if (ids.length > 100) throw unprocessable('ids must name at most 100 resources');
  return ids;
}

export function readPage(c: Context) {
  return {
    limit: queryInt(c, 'limit', 10, 1, 100),
    skip: queryInt(c, 'skip', 0, 0, Number.MAX_SAFE_INTEGER),
  };
}

/** The path parameters of a nested resource's route, e.g. `{ systemId }`. */
function scopeOf(c: Context, params: string[]): Scope {
  return Object.fromEntries(params.map((p) => [p, c.req.param(p) ?? '']));
}

/** The resource's extra list query parameters (`listQuery`), each given at most once. */
function listQueryOf(c: Context, r: BulkResource<unknown>): Record<string, string | undefined> | undefined {
  const names = Object.keys(r.listQuery?.shape ?? {});
  return names.length ? Object.fromEntries(names.map((n) => [n, queryOne(c, n)])) : undefined;
}

function issueFrom(err: unknown, where: { index?: number; id?: string }): AdminIssue {
  if (err instanceof ItemIssue) return { severity: err.severity, message: err.message, ...where };
  throw err;
}

/**
 * Mounts list, get, bulk create, bulk update and bulk delete for one resource at `path`
 * (relative to /admin/v1) and documents them.
 */
export function mountBulk<Out>(
  app: Hono<AppEnv>,
  deps: Deps,
  registry: OpenAPIRegistry,
  path: string,
  r: BulkResource<Out>,
): void {
  const max = r.maxItems ?? 100;
  const docPath = `/admin/v1${path.replace(/:([A-Za-z]+)/g, '{$1}')}`;
  const params = [...path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1]!);
  const pathParams = params.length
    ? z.object(Object.fromEntries(params.map((p) => [p, z.string()])))
    : undefined;
  const errors = {
    400: { description: 'Malformed request', content: { 'application/json': { schema: ErrorBodySchema } } },
    401: {
      description: 'Missing or invalid admin key',
      content: { 'application/json': { schema: ErrorBodySchema } },
    },
    404: { description: 'Unknown resource', content: { 'application/json': { schema: ErrorBodySchema } } },
    422: { description: 'Invalid values', content: { 'application/json': { schema: ErrorBodySchema } } },
  };
  const issues = z.array(
    z.object({
      severity: z.enum(['error', 'warning']),
      message: z.string(),
      index: z.number().int().optional(),
      id: z.string().optional(),
    }),
  );
  const tags = [r.name];

  registry.registerPath({
    method: 'get',
    path: docPath,
    tags,
    summary: `List ${r.name} resources`,
    request: {
      ...(pathParams ? { params: pathParams } : {}),
      query: z
        .object({
          limit: z.number().int().min(1).max(100).optional(),
          skip: z.number().int().min(0).optional(),
        })
        .extend(r.listQuery?.shape ?? {}),
    },
    responses: {
      200: {
        description: 'Oldest first',
        content: { 'application/json': { schema: z.array(r.schemas.resource) } },
      },
      ...errors,
    },
  });
  app.get(path, async (c) => {
    const scope = scopeOf(c, params);
    await r.parent?.(deps, scope);
    const page = readPage(c);
    return c.json(await r.list(deps, { ...page, ...scope, query: listQueryOf(c, r) }));
  });

  registry.registerPath({
    method: 'get',
    path: `${docPath}/{id}`,
    tags,
    summary: `Get one ${r.name}`,
    request: { params: (pathParams ?? z.object({})).extend({ id: z.uuid() }) },
    responses: {
      200: { description: 'The resource', content: { 'application/json': { schema: r.schemas.resource } } },
      ...errors,
    },
  });
  app.get(`${path}/:id`, async (c) => {
    const scope = scopeOf(c, params);
    await r.parent?.(deps, scope);
    const id = c.req.param('id');
    const found = isUuid(id) ? await r.get(deps, { ...scope, id }) : null;
    if (!found) throw notFoundNamed(capitalise(r.name), id);
    return c.json(found as object);
  });

  if (r.create) {
    const create = r.create;
    registry.registerPath({
      method: 'post',
      path: docPath,
      tags,
      summary: `Create ${r.name} resources (1-${max} items)`,
      request: {
        ...(pathParams ? { params: pathParams } : {}),
        body: { content: { 'application/json': { schema: z.array(r.schemas.create).min(1).max(max) } } },
      },
      responses: {
        201: {
          description: 'At least one created',
          content: {
            'application/json': { schema: z.object({ created: z.array(r.schemas.resource), issues }) },
          },
        },
        200: { description: 'None created (see issues)' },
        ...errors,
      },
    });
    app.post(path, async (c) => {
      const scope = scopeOf(c, params);
      await r.parent?.(deps, scope);
      const items = await readItems(c, max);
      const created: Out[] = [];
      const problems: AdminIssue[] = [];
      await recordAdminWrite(deps, async () => {
        for (const [index, item] of items.entries()) {
          try {
            created.push(await create(deps, { ...scope, item }));
          } catch (err) {
            problems.push(issueFrom(err, { index }));
          }
        }
        if (created.length) await deps.catalog.changed();
      });
      return c.json({ created, issues: problems }, created.length ? 201 : 200);
    });
  }

  if (r.update) {
    const update = r.update;
    registry.registerPath({
      method: 'patch',
      path: docPath,
      tags,
      summary: `Update ${r.name} resources (1-100 items, each with id)`,
      request: {
        ...(pathParams ? { params: pathParams } : {}),
        body: { content: { 'application/json': { schema: z.array(r.schemas.update).min(1).max(100) } } },
      },
      responses: {
        200: {
          description: 'Updated resources and issues',
          content: {
            'application/json': { schema: z.object({ updated: z.array(r.schemas.resource), issues }) },
          },
        },
        ...errors,
      },
    });
    app.patch(path, async (c) => {
      const scope = scopeOf(c, params);
      await r.parent?.(deps, scope);
      const items = await readItems(c, 100);
      const updated: Out[] = [];
      const problems: AdminIssue[] = [];
      await recordAdminWrite(deps, async () => {
        for (const [index, item] of items.entries()) {
          const id =
            typeof (item as { id?: unknown })?.id === 'string' ? (item as { id: string }).id : undefined;
          try {
            if (!id) throw new ItemIssue('id is required');
            updated.push(await update(deps, { ...scope, item }));
          } catch (err) {
            problems.push(issueFrom(err, id ? { index, id } : { index }));
          }
        }
        if (updated.length) await deps.catalog.changed();
      });
      return c.json({ updated, issues: problems });
    });
  }

  if (r.remove) {
    const remove = r.remove;
    registry.registerPath({
      method: 'delete',
      path: docPath,
      tags,
      summary: `Delete ${r.name} resources`,
      request: {
        ...(pathParams ? { params: pathParams } : {}),
        query: z.object({ ids: z.string().describe('Ids, repeated or comma-joined, 1-100') }),
      },
      responses: {
        200: {
          description: 'Deleted ids and issues',
          content: {
            'application/json': {
              schema: z.object({ deleted: z.array(z.object({ id: z.string() })), issues }),
            },
          },
        },
        ...errors,
      },
    });
    app.delete(path, async (c) => {
      const scope = scopeOf(c, params);
      await r.parent?.(deps, scope);
      const ids = readIds(c);
      const deleted: { id: string }[] = [];
      const problems: AdminIssue[] = [];
      await recordAdminWrite(deps, async () => {
        for (const id of ids) {
          try {
            if (!isUuid(id)) throw new ItemIssue(`${capitalise(r.name)} not found`);
            await remove(deps, { ...scope, id });
            deleted.push({ id });
          } catch (err) {
            problems.push(issueFrom(err, { id }));
          }
        }
        if (deleted.length) await deps.catalog.changed();
      });
      return c.json({ deleted, issues: problems });
    });
  }
}

export const capitalise = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
