import type { Deps } from '../../../deps';
import { acceptBatch, processBatch } from '../../../services/batch-events';
import { z } from '../../../zod';
import { adminRoutes, errorResponse, mount, type RoutesApp } from '../../openapi';
import { BatchMetricEventSchema, MAX_BATCH_ITEMS, validateBatch } from '../../../wire/metric-event-batch';
import { readJson } from '../../validate';

const route = adminRoutes(['metrics']);

const recordBatch = route('post', '/metrics/events', {
  summary:
    'Record a batch of 1-1000 metric events: validated all-or-nothing, accepted durably, processed in array order like POST /v1/metrics/{key}/event',
  request: {
    body: {
      content: {
        'application/json': {
          schema: z.array(BatchMetricEventSchema).min(1).max(MAX_BATCH_ITEMS),
        },
      },
    },
  },
  responses: {
    202: {
      description: 'Accepted and processed (or, after an infrastructure failure, resuming in order)',
      content: {
        'application/json': {
          schema: z.object({ accepted: z.number().int() }).openapi('BatchMetricEventsResponse'),
        },
      },
    },
    400: errorResponse('Body is not a JSON array, or an item is malformed (named by its index)'),
    404: errorResponse('Metric not found: <key>'),
    413: errorResponse('Body above the admin body limit'),
    422: errorResponse('Empty or too long, or an item has a bad value (named by its index)'),
    429: errorResponse('Rate limit exceeded'),
    503: errorResponse('Redis unavailable: nothing accepted'),
  },
});

/** POST /admin/v1/metrics/events: validate all, accept durably, process in order, answer 202. */
export function mountMetricEvents(app: RoutesApp, deps: Deps): void {
  mount(app, recordBatch, async (c) => {
    const items = validateBatch(deps.catalog.snapshot, await readJson(c));
    const batch = await acceptBatch(deps, items);
    // Interrupted (Redis failed) or taken over: still 202, the batch resumes elsewhere (admin-api §6).
    await processBatch(deps, batch).catch((err) =>
      deps.logger.error({ batch: batch.id, err }, 'event batch interrupted; it resumes in another pass'),
    );
    return c.json({ accepted: items.length }, 202);
  });
}
