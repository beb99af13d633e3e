import { randomBytes } from 'node:crypto';
import { and, desc, eq, gte, isNotNull } from 'drizzle-orm';
import type { WebhookEndpointRow } from '../catalog/snapshot';
import { webhookDeliveries, webhookEndpoints } from '../db/schema';
import type { Deps } from '../deps';
import type { BulkResource } from './resource';
import { z } from '../zod';
import { iso, isoOrNull, ItemIssue, liveTable, parseItem, patched, rejectNulls } from './common';
import { descriptionSchema, isHttpUrl } from './fields';

export const WEBHOOK_EVENT_TYPES = [
  'achievement.completed',
  'streak.started',
  'streak.extended',
  'streak.lost',
  'streak.freeze_consumed',
  'streak.freeze_earned',
  'points.changed',
  'points.level_changed',
  'points.boost_started',
  'points.boost_finished',
  'leaderboard.started',
  'leaderboard.changed',
  'leaderboard.finished',
  'leaderboard.rank_changed',
] as const;

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
/**
 * Values of the delivery log's `status` filter: the contract's statuses plus `retrying`, Laurel's
 * name for the pending deliveries whose last attempt failed (their `status` stays `pending` until
 * every retry is spent, admin-api §14).
 */
export const DELIVERY_FILTERS = [...DELIVERY_STATUSES, 'retrying'] as const;
export type DeliveryFilter = (typeof DELIVERY_FILTERS)[number];

const WebhookEventTypeSchema = z.enum(WEBHOOK_EVENT_TYPES).openapi('WebhookEventType');

export const AdminWebhookEndpointSchema = z
  .object({
    id: z.uuid(),
    url: z.string(),
    description: z.string().nullable(),
    eventTypes: z.array(WebhookEventTypeSchema),
    enabled: z.boolean(),
    secret: z
      .string()
      .optional()
      .describe('Only in the create response and in an update that set or rotated it'),
    created: z.string(),
    updated: z.string(),
  })
  .openapi('AdminWebhookEndpoint');

export const AdminWebhookDeliverySchema = z
  .object({
    id: z.uuid(),
    eventId: z.string(),
    type: WebhookEventTypeSchema,
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int(),
    lastAttemptAt: z.string().nullable(),
    nextAttemptAt: z.string().nullable(),
    lastStatusCode: z.number().int().nullable(),
    lastError: z.string().nullable(),
    created: z.string(),
    payload: z.record(z.string(), z.unknown()),
  })
  .openapi('AdminWebhookDelivery');

const urlSchema = z
  .string()
  .max(2048)
  .refine((u) => isHttpUrl(u), 'must be an absolute http(s) URL');
const eventTypesSchema = z
  .array(z.enum(WEBHOOK_EVENT_TYPES))
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length)
  .refine((types) => new Set(types).size === types.length, 'must not repeat an event type');
const secretSchema = z.string().regex(/^[\x20-\x7E]{16,256}$/, 'must be 16-256 printable ASCII characters');

const createSchema = z
  .object({
    url: urlSchema,
    eventTypes: eventTypesSchema,
    description: descriptionSchema.optional(),
    enabled: z.boolean().optional(),
    secret: secretSchema.optional(),
  })
  .openapi('AdminWebhookEndpointCreate');

const updateSchema = z
  .object({
    id: z.uuid(),
    url: urlSchema.optional(),
    eventTypes: eventTypesSchema.optional(),
    description: descriptionSchema.optional(),
    enabled: z.boolean().optional(),
    secret: secretSchema.optional(),
    rotateSecret: z.boolean().optional(),
  })
  .openapi('AdminWebhookEndpointUpdate');

/** A signing secret: `whsec_` and 256 random bits as 43 base64url characters. */
export const generateWebhookSecret = () => `whsec_${randomBytes(32).toString('base64url')}`;

export const showWebhookEndpoint = (w: WebhookEndpointRow, withSecret = false) => ({
  id: w.id,
  url: w.url,
  description: w.description,
  eventTypes: w.eventTypes,
  enabled: w.enabled,
  ...(withSecret ? { secret: w.secret } : {}),
  created: iso(w.created),
  updated: iso(w.updated),
});

type ShownEndpoint = ReturnType<typeof showWebhookEndpoint>;

const endpointRows = liveTable(webhookEndpoints, 'webhook endpoint');

export const findWebhookEndpoint = (deps: Deps, id: string): Promise<WebhookEndpointRow | undefined> =>
  endpointRows.find(deps, { id });

export const webhooksResource: BulkResource<ShownEndpoint> = {
  name: 'webhook endpoint',
  schemas: { resource: AdminWebhookEndpointSchema, create: createSchema, update: updateSchema },
  ...endpointRows.reads(showWebhookEndpoint),
  async create(deps, { item }) {
    const input = parseItem(createSchema, item);
    const row = await endpointRows.insert(deps, {
      url: input.url,
      description: input.description ?? null,
      eventTypes: input.eventTypes,
      enabled: input.enabled ?? true,
      secret: input.secret ?? generateWebhookSecret(),
    });
    return showWebhookEndpoint(row, true);
  },
  async update(deps, { item }) {
    const raw = item as Record<string, unknown>;
    rejectNulls(raw, ['url', 'eventTypes', 'enabled', 'secret', 'rotateSecret']);
    const input = parseItem(updateSchema, item);
    if (input.secret !== undefined && input.rotateSecret === true) {
      throw new ItemIssue('secret and rotateSecret cannot be given together');
    }
    const current = await findWebhookEndpoint(deps, input.id);
    if (!current) throw new ItemIssue('Webhook endpoint not found');
    const newSecret = input.rotateSecret === true ? generateWebhookSecret() : input.secret;
    const row = await endpointRows.update(deps, input.id, {
      url: input.url ?? current.url,
      eventTypes: input.eventTypes ?? current.eventTypes,
      description: patched(input.description, current.description),
      enabled: input.enabled ?? current.enabled,
      secret: newSecret ?? current.secret,
    });
    return showWebhookEndpoint(row, newSecret !== undefined);
  },
  async remove(deps, { id }) {
    await endpointRows.remove(deps, { id });
  },
};

/** Deliveries of one endpoint within the retention window, newest first. */
export async function listWebhookDeliveries(
  deps: Deps,
  endpointId: string,
  page: { limit: number; skip: number; status?: DeliveryFilter },
) {
  const since = new Date(deps.clock.now() - deps.config.WEBHOOK_RETENTION_DAYS * 86_400_000);
  const rows = await deps.db
    .select()
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.endpointId, endpointId),
        gte(webhookDeliveries.created, since),
        page.status === 'retrying'
          ? and(eq(webhookDeliveries.status, 'pending'), isNotNull(webhookDeliveries.lastError))
          : page.status
            ? eq(webhookDeliveries.status, page.status)
            : undefined,
      ),
    )
    .orderBy(desc(webhookDeliveries.created), desc(webhookDeliveries.id))
    .limit(page.limit)
    .offset(page.skip);
  return rows.map((d) => ({
    id: d.id,
    eventId: d.eventId,
    type: d.type,
    status: d.status,
    attempts: d.attempts,
    lastAttemptAt: isoOrNull(d.lastAttemptAt),
    nextAttemptAt: d.status === 'pending' ? isoOrNull(d.nextAttemptAt) : null,
    lastStatusCode: d.lastStatusCode,
    lastError: d.lastError,
    created: iso(d.created),
    payload: d.payload,
  }));
}

export interface EndpointHealth {
  /** Pending deliveries whose last attempt failed (they will be retried). */
  retrying: number;
  /** Deliveries that failed for good within the last `FAILING_WINDOW_MS`. */
  failed: number;
  lastFailureAt: Date | null;
  lastError: string | null;
}

/** How far back a delivery that failed for good still marks its endpoint as failing. */
export const FAILING_WINDOW_MS = 24 * 3_600_000;

/**
 * Endpoints with deliveries in retry or recently failed, by endpoint id; an endpoint that is not in
 * the map has no failure to show. Reads only deliveries that carry an error.
 */
export async function webhookEndpointHealth(deps: Deps): Promise<Map<string, EndpointHealth>> {
  const since = new Date(deps.clock.now() - FAILING_WINDOW_MS).toISOString();
  const rows = await deps.sql<
    Array<{
      endpoint_id: string;
      retrying: number;
      failed: number;
      last_at: Date | null;
      last_error: string | null;
    }>
  >`
    select endpoint_id,
           count(*) filter (where status = 'pending')::int as retrying,
           count(*) filter (where status = 'failed')::int as failed,
           max(last_attempt_at) as last_at,
           (array_agg(last_error order by last_attempt_at desc nulls last))[1] as last_error
      from webhook_deliveries
     where last_error is not null
       and (status = 'pending' or (status = 'failed' and last_attempt_at >= ${since}::timestamptz))
     group by endpoint_id`;
  return new Map(
    rows.map((r) => [
      r.endpoint_id,
      { retrying: r.retrying, failed: r.failed, lastFailureAt: r.last_at, lastError: r.last_error },
    ]),
  );
}
