import { type AdminIssue, ItemIssue } from '../../../admin/common';
import {
  AdminStreakPauseSchema,
  createPause,
  deletePause,
  listPauses,
  StreakPauseCreateSchema,
} from '../../../admin/streak-pauses';
import type { Deps } from '../../../deps';
import { badRequest, unprocessable } from '../../../errors';
import { z } from '../../../zod';
import { createRoute, errorResponse, mount, type RoutesApp } from '../../openapi';
import { queryOne, readJson } from '../../validate';
import { isUuid } from '../../../admin/resource';
import { readIds, readPage } from './bulk';

const errors = {
  400: errorResponse('Malformed request'),
  401: errorResponse('Missing or invalid admin key'),
  422: errorResponse('Invalid values'),
};
const IssueSchema = z.object({
  severity: z.enum(['error', 'warning']),
  message: z.string(),
  index: z.number().int().optional(),
  id: z.string().optional(),
  userId: z.string().optional(),
});

function issueFrom(err: unknown, where: Omit<AdminIssue, 'severity' | 'message'>): AdminIssue {
  if (err instanceof ItemIssue) return { severity: err.severity, message: err.message, ...where };
  throw err;
}

/** `/admin/v1/streaks/pauses` (admin §13.3): list, create in bulk, delete. */
export function mountStreakPauses(app: RoutesApp, deps: Deps): void {
  const path = '/streaks/pauses';
  const tags = ['streak pauses'];

  const listPausesRoute = createRoute({
    method: 'get',
    path,
    tags,
    summary: 'List pauses that have not ended yet',
    request: {
      query: z.object({
        limit: z.number().int().min(1).max(100).optional(),
        skip: z.number().int().min(0).optional(),
        userId: z.string().optional(),
      }),
    },
    responses: {
      200: {
        description: 'Oldest first',
        content: { 'application/json': { schema: z.array(AdminStreakPauseSchema) } },
      },
      ...errors,
    },
  });
  mount(app, listPausesRoute, async (c) => {
    const page = readPage(c);
    const userId = queryOne(c, 'userId');
    return c.json(await listPauses(deps, { ...page, ...(userId !== undefined ? { userId } : {}) }));
  });

  const createPausesRoute = createRoute({
    method: 'post',
    path,
    tags,
    summary: 'Create pauses (1-100 items)',
    request: {
      body: {
        content: {
          'application/json': {
            schema: z.object({ pauses: z.array(StreakPauseCreateSchema).min(1).max(100) }),
          },
        },
      },
    },
    responses: {
      201: {
        description: 'At least one created',
        content: {
          'application/json': {
            schema: z.object({ created: z.array(AdminStreakPauseSchema), issues: z.array(IssueSchema) }),
          },
        },
      },
      200: { description: 'None created (see issues)' },
      ...errors,
    },
  });
  mount(app, createPausesRoute, async (c) => {
    const body = await readJson(c);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw badRequest('Request body must be a JSON object');
    }
    const items = (body as { pauses?: unknown }).pauses;
    if (items === undefined || items === null) throw badRequest('pauses is required');
    if (!Array.isArray(items)) throw badRequest('pauses must be an array');
    if (items.length === 0) throw unprocessable('pauses must contain at least one item');
    if (items.length > 100) throw unprocessable('pauses must contain at most 100 items');
    const created = [];
    const issues: AdminIssue[] = [];
    for (const [index, item] of items.entries()) {
      const userId = (item as { userId?: unknown } | null)?.userId;
      try {
        created.push(await createPause(deps, item));
      } catch (err) {
        issues.push(issueFrom(err, typeof userId === 'string' ? { index, userId } : { index }));
      }
    }
    return c.json({ created, issues }, created.length ? 201 : 200);
  });

  const deletePausesRoute = createRoute({
    method: 'delete',
    path,
    tags,
    summary: 'Delete pauses',
    request: { query: z.object({ ids: z.string().describe('Ids, repeated or comma-joined, 1-100') }) },
    responses: {
      200: {
        description: 'Deleted ids and issues',
        content: {
          'application/json': {
            schema: z.object({
              deleted: z.array(z.object({ id: z.string() })),
              issues: z.array(IssueSchema),
            }),
          },
        },
      },
      ...errors,
    },
  });
  mount(app, deletePausesRoute, async (c) => {
    const ids = readIds(c);
    const deleted: { id: string }[] = [];
    const issues: AdminIssue[] = [];
    for (const id of ids) {
      try {
        if (!isUuid(id)) throw new ItemIssue('Pause not found');
        await deletePause(deps, id);
        deleted.push({ id });
      } catch (err) {
        issues.push(issueFrom(err, { id }));
      }
    }
    return c.json({ deleted, issues });
  });
}
