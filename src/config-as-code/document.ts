import { badgeSchema, dateSchema, descriptionSchema, keySchema, nameSchema } from '../admin/fields';
import { WEBHOOK_EVENT_TYPES } from '../admin/webhooks';
import { z } from '../zod';

/**
 * The configuration document (`laurel.config/v1`): the whole configuration in one file, references
 * by key, never by id, and no secrets. The schema checks shapes and types only; value rules (ranges,
 * references, transitions, "in use") are the resource services' own, so a plan reports exactly the
 * issues the resource endpoints give.
 */
export const FORMAT = 'laurel.config/v1';

const filter = z
  .strictObject({ attribute: keySchema, value: z.string().min(1).max(255) })
  .describe('An attribute filter: the attribute key and the value it must have');
const filters = z.array(filter).max(20);

export const AttributeDoc = z.strictObject({
  key: keySchema,
  name: nameSchema,
  type: z.enum(['user', 'event']),
});

export const MetricDoc = z.strictObject({
  key: keySchema,
  name: nameSchema,
  unitType: z.enum(['number', 'currency']).default('number'),
  units: z.string().nullable().default(null),
});

export const AchievementDoc = z.strictObject({
  key: keySchema,
  name: nameSchema,
  description: descriptionSchema.default(null),
  badge: badgeSchema.default(null),
  trigger: z.enum(['metric', 'streak', 'api', 'achievement']),
  status: z.enum(['inactive', 'active', 'locked']).default('inactive'),
  metric: keySchema.optional().describe('Metric key (trigger metric)'),
  metricValue: z.number().optional().describe('trigger metric'),
  eventAttributes: filters.optional().describe('trigger metric'),
  streakLength: z.number().int().optional().describe('trigger streak'),
  achievements: z.array(keySchema).optional().describe('Prerequisite achievement keys (trigger achievement)'),
  userAttributes: filters.default([]),
});

export const TriggerDoc = z.strictObject({
  type: z.enum(['metric', 'achievement', 'streak', 'time', 'user_creation']),
  points: z.number().int(),
  status: z.enum(['active', 'inactive']).default('inactive'),
  metric: keySchema.optional().describe('Metric key (type metric)'),
  metricThreshold: z.number().optional().describe('type metric'),
  eventAttributes: filters.optional().describe('type metric'),
  achievement: keySchema.optional().describe('Achievement key (type achievement)'),
  streakLength: z.number().int().optional().describe('type streak'),
  timeUnit: z
    .enum(['hours', 'days', 'hour', 'day'])
    .optional()
    .describe('type time (hour and day are read as hours and days)'),
  timeInterval: z.number().int().optional().describe('type time'),
  userAttributes: filters.default([]),
});

export const LevelDoc = z.strictObject({
  key: keySchema,
  name: nameSchema,
  description: descriptionSchema.default(null),
  badge: badgeSchema.default(null),
  points: z.number().int(),
});

export const BoostDoc = z.strictObject({
  name: nameSchema,
  start: dateSchema,
  end: dateSchema.nullable().default(null),
  multiplier: z.number(),
  rounding: z.enum(['down', 'up', 'nearest']).default('down'),
  userAttributes: filters.default([]),
});

export const PointsSystemDoc = z.strictObject({
  key: keySchema,
  name: nameSchema,
  description: descriptionSchema.default(null),
  badge: badgeSchema.default(null),
  maxPoints: z.number().int().nullable().default(null),
  triggers: z.array(TriggerDoc).optional().describe('Absent: the triggers are left as they are'),
  levels: z.array(LevelDoc).optional().describe('Absent: the levels are left as they are'),
  boosts: z
    .array(BoostDoc)
    .optional()
    .describe(
      'Global and cohort boosts (user-specific boosts are not configuration); absent: left as they are',
    ),
});

export const StreakDoc = z.strictObject({
  enabled: z.boolean().default(false),
  frequency: z.enum(['daily', 'weekly', 'monthly']).default('daily'),
  mode: z.enum(['all', 'any']).default('all'),
  conditions: z.array(z.strictObject({ metric: keySchema, threshold: z.number() })).default([]),
  freezesEnabled: z.boolean().default(false),
  maxFreezes: z.number().int().default(1),
  initialFreezes: z.number().int().default(0),
  freezeAutoEarnAmount: z.number().int().nullable().default(null),
  freezeAutoEarnInterval: z.number().int().nullable().default(null),
});

export const LeaderboardDoc = z.strictObject({
  key: keySchema,
  name: nameSchema,
  description: descriptionSchema.default(null),
  status: z
    .enum(['inactive', 'active', 'finished'])
    .default('inactive')
    .describe('active covers scheduled (a future start) and active'),
  rankBy: z.enum(['metric', 'points', 'streak']),
  metric: keySchema.nullable().default(null).describe('Metric key (rankBy metric)'),
  pointsSystem: keySchema.nullable().default(null).describe('Points system key (rankBy points)'),
  maxParticipants: z.number().int().default(1000),
  start: dateSchema.optional().describe('Absent: today (UTC) on create, unchanged on update'),
  end: dateSchema.nullable().default(null),
  breakdownAttributes: z.array(keySchema).default([]).describe('User attribute keys'),
  runUnit: z.enum(['day', 'month', 'year']).nullable().default(null),
  runInterval: z.number().int().default(0),
});

export const WebhookDoc = z.strictObject({
  url: z.string().max(2048),
  description: descriptionSchema.default(null),
  eventTypes: z.array(z.enum(WEBHOOK_EVENT_TYPES)),
  enabled: z.boolean().default(true),
});

/** A section that is absent is not managed: nothing in it is changed or deleted. */
export const ConfigDocumentSchema = z
  .strictObject({
    $schema: z.string().optional(),
    format: z.literal(FORMAT),
    version: z
      .string()
      .optional()
      .describe(
        'The version this document was exported at; apply refuses it (409) once the configuration changed',
      ),
    attributes: z.array(AttributeDoc).optional(),
    metrics: z.array(MetricDoc).optional(),
    achievements: z.array(AchievementDoc).optional(),
    streak: StreakDoc.optional(),
    pointsSystems: z.array(PointsSystemDoc).optional(),
    leaderboards: z.array(LeaderboardDoc).optional(),
    webhooks: z.array(WebhookDoc).optional(),
  })
  .openapi('ConfigDocument');

export type ConfigDocument = z.output<typeof ConfigDocumentSchema>;
export type AttributeDocT = z.output<typeof AttributeDoc>;
export type MetricDocT = z.output<typeof MetricDoc>;
export type AchievementDocT = z.output<typeof AchievementDoc>;
export type TriggerDocT = z.output<typeof TriggerDoc>;
export type LevelDocT = z.output<typeof LevelDoc>;
export type BoostDocT = z.output<typeof BoostDoc>;
export type PointsSystemDocT = z.output<typeof PointsSystemDoc>;
export type StreakDocT = z.output<typeof StreakDoc>;
export type LeaderboardDocT = z.output<typeof LeaderboardDoc>;
export type WebhookDocT = z.output<typeof WebhookDoc>;
export type FilterDoc = z.output<typeof filter>;

let jsonSchema: unknown;

/** The JSON Schema of the document (for editors), built once. */
export function configJsonSchema(): unknown {
  jsonSchema ??= {
    ...(z.toJSONSchema(ConfigDocumentSchema, { io: 'input', unrepresentable: 'any' }) as object),
    $id: 'laurel.config/v1',
    title: 'Laurel configuration document',
  };
  return jsonSchema;
}

/**
 * Parses a document. Problems come back as `path: message` lines in the words of the resource
 * endpoints' validation (the same field schemas).
 */
export function parseDocument(body: unknown): { doc: ConfigDocument } | { problems: string[] } {
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const format = (body as { format?: unknown }).format;
    if (format !== FORMAT)
      return {
        problems: [format === undefined ? `format is required ("${FORMAT}")` : `format must be "${FORMAT}"`],
      };
  }
  const r = ConfigDocumentSchema.safeParse(body, { reportInput: true });
  if (!r.success) {
    return {
      problems: r.error.issues.slice(0, 20).map((i) => {
        const where = i.path.length ? i.path.map(String).join('.') : 'document';
        const input = (i as { input?: unknown }).input;
        if (i.code === 'invalid_type' && input === undefined) return `${where} is required`;
        if (i.code === 'unrecognized_keys') return `${where}: unknown field ${i.keys.join(', ')}`;
        return `${where}: ${i.message}`;
      }),
    };
  }
  const problems = duplicates(r.data);
  return problems.length ? { problems } : { doc: r.data };
}

function dupes(section: string, ids: string[], what = 'key'): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const [i, id] of ids.entries()) {
    if (seen.has(id)) out.push(`${section}.${i}: ${what} ${id} is given twice`);
    seen.add(id);
  }
  return out;
}

/** Keys must be unique within their section (attributes: within their type; levels: within their system). */
function duplicates(doc: ConfigDocument): string[] {
  const out = [
    ...dupes(
      'attributes',
      (doc.attributes ?? []).map((a) => `${a.type}:${a.key}`),
    ),
    ...dupes(
      'metrics',
      (doc.metrics ?? []).map((m) => m.key),
    ),
    ...dupes(
      'achievements',
      (doc.achievements ?? []).map((a) => a.key),
    ),
    ...dupes(
      'pointsSystems',
      (doc.pointsSystems ?? []).map((p) => p.key),
    ),
    ...dupes(
      'leaderboards',
      (doc.leaderboards ?? []).map((b) => b.key),
    ),
  ];
  for (const [i, p] of (doc.pointsSystems ?? []).entries()) {
    out.push(
      ...dupes(
        `pointsSystems.${i}.levels`,
        (p.levels ?? []).map((l) => l.key),
      ),
    );
  }
  return out;
}
