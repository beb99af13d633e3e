import type { Snapshot } from '../catalog/snapshot';
import type { BatchItem } from '../services/batch-events';
import { toMicros } from '../engine/decimal';
import { AppError, badRequest, notFound, unprocessable } from '../errors';
import { z } from '../zod';
import { parseWith } from './parse';
import {
  checkAttributeKeys,
  EventAttributesSchema,
  EventValueSchema,
  toUserInput,
  UpsertedUserSchema,
} from './user-input';

// The request of POST /admin/v1/metrics/events, shared with the dashboard's import page.

export const MAX_BATCH_ITEMS = 1000;

/** BatchMetricEvent (admin-api §6). */
export const BatchMetricEventSchema = z
  .object({
    key: z.string(),
    user: UpsertedUserSchema,
    value: EventValueSchema,
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
