import type { Hono } from 'hono';
import type { Snapshot } from '../../../catalog/snapshot';
import type { Deps } from '../../../deps';
import { acceptBatch, type BatchItem, processBatch } from '../../../engine/batch-events';
import { toMicros } from '../../../engine/decimal';
import { AppError, badRequest, notFound, unprocessable } from '../../../errors';
import { z } from '../../../zod';
import type { AppEnv } from '../../env';
import { ErrorBodySchema, type OpenAPIRegistry } from '../../openapi';
import {
  checkAttributeKeys,
  EventAttributesSchema,
  toUserInput,
  UpsertedUserSchema,
} from '../../schemas/user';
import { parseWith, readJson } from '../../validate';

export const MAX_BATCH_ITEMS = 1000;

/** BatchMetricEvent (admin-api §6). */
export const BatchMetricEventSchema = z
  .object({
    key: z.string(),
    user: UpsertedUserSchema,
    // A wrong JSON type is structural (400); a non-finite number passes here and is a 422 below.
    value: z
      .unknown()
      .superRefine((v, ctx) => {
        if (typeof v !== 'number') ctx.addIssue({ code: 'invalid_type', expected: 'number', input: v });
      })
      .openapi({ type: 'number' }),
    attributes: EventAttributesSchema.nullish(),
    idempotencyKey: z.string().nullish(),
  })
  .openapi('BatchMetricEvent');

type Parsed = z.output<typeof BatchMetricEventSchema>;

/** An item's problem, named by its index. */
const atItem = (i: number, err: AppError) => new AppError(err.code, `Item ${i}: ${err.message}`);

/**
 * Validates a whole batch before anything is processed (admin-api §6): structural problems of any
 * item → 400, then an unknown metric key → 404 `Metric not found: <key>`, then the first domain
 * problem → 422; each names the item index.
 */
export function validateBatch(snap: Snapshot, body: unknown): BatchItem[] {
  if (!Array.isArray(body)) throw badRequest('Request body must be a JSON array of events');
  if (body.length === 0) throw unprocessable('The batch must contain at least one event');
  if (body.length > MAX_BATCH_ITEMS) {
    throw unprocessable(`The batch must contain at most ${MAX_BATCH_ITEMS} events`);
  }
  const parsed: Array<Parsed | AppError> = body.map((raw) => {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      return badRequest('must be a JSON object');
    }
    try {
      return parseWith(BatchMetricEventSchema, raw);
    } catch (err) {
      if (err instanceof AppError) return err;
      throw err;
    }
  });
  parsed.forEach((p, i) => {
    if (p instanceof AppError && p.status === 400) throw atItem(i, p);
  });
  for (const p of parsed) {
    if (!(p instanceof AppError) && !snap.metricsByKey.has(p.key)) {
      throw notFound(`Metric not found: ${p.key.length > 100 ? `${p.key.slice(0, 100)}…` : p.key}`);
    }
  }
  return parsed.map((p, i) => {
    if (p instanceof AppError) throw atItem(i, p);
    try {
      return toItem(snap, p);
    } catch (err) {
      if (err instanceof AppError) throw atItem(i, err);
      throw err;
    }
  });
}

function toItem(snap: Snapshot, p: Parsed): BatchItem {
  const value = p.value as number;
  if (!Number.isFinite(value)) throw unprocessable('value must be a finite number');
  let v: number;
  try {
    v = toMicros(value);
  } catch {
    throw unprocessable('value is too large');
  }
  const k = p.idempotencyKey ?? undefined;
  if (k !== undefined && (k.length < 1 || k.length > 255)) {
    throw unprocessable('idempotencyKey must be 1 to 255 characters');
  }
  const u = toUserInput(snap, p.user.id, p.user);
  if (p.attributes) checkAttributeKeys(snap, p.attributes, 'event');
  const item: BatchItem = { m: snap.metricsByKey.get(p.key)!.id, u, v };
  if (p.attributes && Object.keys(p.attributes).length) item.a = p.attributes;
  if (k !== undefined) item.k = k;
  return item;
}

/** POST /admin/v1/metrics/events: validate all, accept durably, process in order, answer 202. */
export function mountMetricEvents(app: Hono<AppEnv>, deps: Deps, registry: OpenAPIRegistry): void {
  app.post('/metrics/events', async (c) => {
    const items = validateBatch(deps.catalog.snapshot, await readJson(c));
    const batch = await acceptBatch(deps, items);
    // Interrupted (Redis failed) or taken over: still 202, the batch resumes elsewhere (admin-api §6).
    await processBatch(deps, batch).catch((err) =>
      deps.logger.error({ batch: batch.id, err }, 'event batch interrupted; it resumes in another pass'),
    );
    return c.json({ accepted: items.length }, 202);
  });

  const error = (description: string) => ({
    description,
    content: { 'application/json': { schema: ErrorBodySchema } },
  });
  registry.registerPath({
    method: 'post',
    path: '/admin/v1/metrics/events',
    tags: ['metrics'],
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
      400: error('Body is not a JSON array, or an item is malformed (named by its index)'),
      401: error('Missing or invalid admin key'),
      404: error('Metric not found: <key>'),
      413: error('Body above the admin body limit'),
      422: error('Empty or too long, or an item has a bad value (named by its index)'),
      429: error('Rate limit exceeded'),
      503: error('Redis unavailable: nothing accepted'),
    },
  });
}
