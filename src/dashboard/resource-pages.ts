import type { Hono } from 'hono';
import type { BulkResource } from '../admin/resource';
import type { Deps } from '../deps';
import { attempt, done } from './forms';
import type { DashEnv } from './session';

// What the pages of the admin resources share: they list every row, and delete one with a button.

/** Every row of an admin resource, for a page that lists them all. */
export const ALL = { limit: 1000, skip: 0 };

/**
 * POST `<page>/:id/delete` (relative to /dashboard): deletes one row through the admin resource,
 * then returns to the page with `deleted`, or with the reason it was not deleted.
 */
export function mountDelete(
  app: Hono<DashEnv>,
  deps: Deps,
  page: string,
  resource: BulkResource<unknown>,
  deleted: string,
): void {
  app.post(`${page}/:id/delete`, async (c) => {
    const r = await attempt(deps, () => resource.remove!(deps, { id: c.req.param('id') }), [], {});
    return r.ok
      ? done(c, `/dashboard${page}`, deleted)
      : done(c, `/dashboard${page}`, r.form.formError ?? 'Not deleted', 'error');
  });
}
