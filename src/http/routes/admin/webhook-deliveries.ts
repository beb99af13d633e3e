import {
  AdminWebhookDeliverySchema,
  DELIVERY_FILTERS,
  type DeliveryFilter,
  findWebhookEndpoint,
  listWebhookDeliveries,
} from '../../../admin/webhooks';
import type { Deps } from '../../../deps';
import { notFoundNamed, unprocessable } from '../../../errors';
import { z } from '../../../zod';
import { adminRoutes, errorResponse, mount, type RoutesApp } from '../../openapi';
import { queryOne } from '../../validate';
import { isUuid } from '../../../admin/resource';
import { readPage } from './bulk';
import { redeliver } from '../../../workers/webhooks';

/**
 * `GET /admin/v1/webhooks/{id}/deliveries` (admin §14): the delivery log of one endpoint, newest first;
 * `POST /admin/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver`: send a delivery again.
 */
export function mountWebhookDeliveries(app: RoutesApp, deps: Deps): void {
  const route = adminRoutes(['webhook endpoint']);
  const listDeliveries = route('get', '/webhooks/{id}/deliveries', {
    summary: 'Deliveries of one endpoint within the retention window, newest first',
    request: {
      params: z.object({ id: z.uuid() }),
      query: z.object({
        limit: z.number().int().min(1).max(100).optional(),
        skip: z.number().int().min(0).optional(),
        status: z
          .enum(DELIVERY_FILTERS)
          .optional()
          .describe('`retrying`: pending deliveries whose last attempt failed (they will be retried)'),
      }),
    },
    responses: {
      200: {
        description: 'Deliveries',
        content: { 'application/json': { schema: z.array(AdminWebhookDeliverySchema) } },
      },
      404: errorResponse('Unknown endpoint'),
      422: errorResponse('Invalid query'),
    },
  });
  const redeliverRoute = route('post', '/webhooks/{id}/deliveries/{deliveryId}/redeliver', {
    summary:
      'Manual redelivery: the delivery becomes pending and is sent again at once, with the same event id and body',
    request: { params: z.object({ id: z.uuid(), deliveryId: z.uuid() }) },
    responses: {
      202: {
        description: 'Queued; the delivery as it now stands',
        content: { 'application/json': { schema: AdminWebhookDeliverySchema } },
      },
      404: errorResponse('Unknown endpoint or delivery'),
      422: errorResponse('The endpoint is disabled'),
    },
  });
  mount(app, redeliverRoute, async (c) => {
    const id = c.req.param('id');
    const deliveryId = c.req.param('deliveryId');
    const endpoint = isUuid(id) ? await findWebhookEndpoint(deps, id) : undefined;
    if (!endpoint) throw notFoundNamed('Webhook endpoint', id);
    if (!endpoint.enabled) throw unprocessable('The webhook endpoint is disabled');
    if (!isUuid(deliveryId) || !(await redeliver(deps, id, deliveryId)))
      throw notFoundNamed('Delivery', deliveryId);
    const [shown] = (await listWebhookDeliveries(deps, id, { limit: 100, skip: 0 })).filter(
      (d) => d.id === deliveryId,
    );
    return c.json(shown ?? { id: deliveryId, status: 'pending' }, 202);
  });
  mount(app, listDeliveries, async (c) => {
    const page = readPage(c);
    const status = queryOne(c, 'status');
    if (status !== undefined && !(DELIVERY_FILTERS as readonly string[]).includes(status)) {
      throw unprocessable('status must be pending, retrying, succeeded or failed');
    }
    const id = c.req.param('id');
    if (!isUuid(id) || !(await findWebhookEndpoint(deps, id))) throw notFoundNamed('Webhook endpoint', id);
    return c.json(
      await listWebhookDeliveries(deps, id, {
        ...page,
        ...(status ? { status: status as DeliveryFilter } : {}),
      }),
    );
  });
}
