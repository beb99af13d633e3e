import type { Context } from 'hono';
import { z } from '../../../zod';
import { type AdminIssue, ItemIssue } from '../../../admin/common';
import { type BulkResource, isUuid, type Scope } from '../../../admin/resource';
import { recordAdminWrite } from '../../../config-as-code/audit';
import type { Deps } from '../../../deps';
import { badRequest, notFoundNamed, unprocessable } from '../../../errors';
import { adminRoutes, errorResponse, jsonContent, jsonResponse, mount, type RoutesApp } from '../../openapi';
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
 * Writes each input on its own, as one audited admin write: what `write` returns for those that
 * succeed, and an issue (at `where`) for each refused one; the configuration change is published
 * when any succeeded. An error that is not an ItemIssue propagates.
 */
async function writeEach<In, Res>(
  deps: Deps,
  inputs: readonly In[],
  where: (input: In, index: number) => { index?: number; id?: string },
  write: (input: In) => Promise<Res>,
): Promise<{ written: Res[]; issues: AdminIssue[] }> {
  const written: Res[] = [];
  const issues: AdminIssue[] = [];
  await recordAdminWrite(deps, async () => {
    for (const [index, input] of inputs.entries()) {
      try {
        written.push(await write(input));
      } catch (err) {
        issues.push(issueFrom(err, where(input, index)));
      }
    }
    if (written.length) await deps.catalog.changed();
  });
  return { written, issues };
}

/** The `id` of an update item, when it has a string one. */
const itemId = (item: unknown): string | undefined =>
  typeof (item as { id?: unknown })?.id === 'string' ? (item as { id: string }).id : undefined;

/**
 * Mounts list, get, bulk create, bulk update and bulk delete for one resource at `path`
 * (relative to /admin/v1, Hono style: `/points/:systemId/levels`), each with its route definition.
 */
export function mountBulk<Out>(app: RoutesApp, deps: Deps, path: string, r: BulkResource<Out>): void {
  const max = r.maxItems ?? 100;
  const docPath = path.replace(/:([A-Za-z]+)/g, '{$1}');
  const params = [...path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1]!);
  const pathParams = params.length
    ? z.object(Object.fromEntries(params.map((p) => [p, z.string()])))
    : undefined;
  /** The path parameters of a route on the collection, when it is nested. */
  const scoped = pathParams ? { params: pathParams } : {};
  const errors = {
    400: errorResponse('Malformed request'),
    404: errorResponse('Unknown resource'),
    422: errorResponse('Invalid values'),
  };
  const issues = z.array(
    z.object({
      severity: z.enum(['error', 'warning']),
      message: z.string(),
      index: z.number().int().optional(),
      id: z.string().optional(),
    }),
  );
  const route = adminRoutes([r.name]);
  /** The scope of a request (its path parameters), once the parent it names is known to exist. */
  const scopeFor = async (c: Context) => {
    const scope = scopeOf(c, params);
    await r.parent?.(deps, scope);
    return scope;
  };

  const listItems = route('get', docPath, {
    summary: `List ${r.name} resources`,
    request: {
      ...scoped,
      query: z
        .object({
          limit: z.number().int().min(1).max(100).optional(),
          skip: z.number().int().min(0).optional(),
        })
        .extend(r.listQuery?.shape ?? {}),
    },
    responses: { 200: jsonResponse('Oldest first', z.array(r.schemas.resource)), ...errors },
  });
  mount(app, listItems, async (c) => {
    const scope = await scopeFor(c);
    const page = readPage(c);
    return c.json(await r.list(deps, { ...page, ...scope, query: listQueryOf(c, r) }));
  });

  const getItem = route('get', `${docPath}/{id}`, {
    summary: `Get one ${r.name}`,
    request: { params: (pathParams ?? z.object({})).extend({ id: z.uuid() }) },
    responses: { 200: jsonResponse('The resource', r.schemas.resource), ...errors },
  });
  mount(app, getItem, async (c) => {
    const scope = await scopeFor(c);
    const id = c.req.param('id');
    const found = isUuid(id) ? await r.get(deps, { ...scope, id }) : null;
    if (!found) throw notFoundNamed(capitalise(r.name), id);
    return c.json(found as object);
  });

  if (r.create) {
    const create = r.create;
    const createItems = route('post', docPath, {
      summary: `Create ${r.name} resources (1-${max} items)`,
      request: { ...scoped, body: jsonContent(z.array(r.schemas.create).min(1).max(max)) },
      responses: {
        201: jsonResponse('At least one created', z.object({ created: z.array(r.schemas.resource), issues })),
        200: { description: 'None created (see issues)' },
        ...errors,
      },
    });
    mount(app, createItems, async (c) => {
      const scope = await scopeFor(c);
      const items = await readItems(c, max);
      const { written, issues: refused } = await writeEach(
        deps,
        items,
        (_, index) => ({ index }),
        (item) => create(deps, { ...scope, item }),
      );
      return c.json({ created: written, issues: refused }, written.length ? 201 : 200);
    });
  }

  if (r.update) {
    const update = r.update;
    const updateItems = route('patch', docPath, {
      summary: `Update ${r.name} resources (1-100 items, each with id)`,
      request: { ...scoped, body: jsonContent(z.array(r.schemas.update).min(1).max(100)) },
      responses: {
        200: jsonResponse(
          'Updated resources and issues',
          z.object({ updated: z.array(r.schemas.resource), issues }),
        ),
        ...errors,
      },
    });
    mount(app, updateItems, async (c) => {
      const scope = await scopeFor(c);
      const items = await readItems(c, 100);
      const { written, issues: refused } = await writeEach(
        deps,
        items,
        (item, index) => {
          const id = itemId(item);
          return id ? { index, id } : { index };
        },
        (item) => {
          if (!itemId(item)) throw new ItemIssue('id is required');
          return update(deps, { ...scope, item });
        },
      );
      return c.json({ updated: written, issues: refused });
    });
  }

  if (r.remove) {
    const remove = r.remove;
    const removeItems = route('delete', docPath, {
      summary: `Delete ${r.name} resources`,
      request: {
        ...scoped,
        query: z.object({ ids: z.string().describe('Ids, repeated or comma-joined, 1-100') }),
      },
      responses: {
        200: jsonResponse(
          'Deleted ids and issues',
          z.object({ deleted: z.array(z.object({ id: z.string() })), issues }),
        ),
        ...errors,
      },
    });
    mount(app, removeItems, async (c) => {
      const scope = await scopeFor(c);
      const ids = readIds(c);
      const { written, issues: refused } = await writeEach(
        deps,
        ids,
        (id) => ({ id }),
        async (id) => {
          if (!isUuid(id)) throw new ItemIssue(`${capitalise(r.name)} not found`);
          await remove(deps, { ...scope, id });
          return { id };
        },
      );
      return c.json({ deleted: written, issues: refused });
    });
  }
}

export const capitalise = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
