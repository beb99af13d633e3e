import type { Snapshot } from '../catalog/snapshot';
import type { UserInput } from '../services/user-op';
import { isValidTimeZone } from '../engine/periods';
import { invalidAttributeKeys, unprocessable } from '../errors';
import { z } from '../zod';

/** Attribute maps of a user or an event: at most 100 keys of at most 100 characters (configured keys never are longer). */
export const MAX_ATTRIBUTES = 100;
const attributeMap = z
  .record(z.string(), z.string().max(255, 'attribute values must be at most 255 characters'))
  .refine((m) => Object.keys(m).length <= MAX_ATTRIBUTES, `must have at most ${MAX_ATTRIBUTES} attributes`)
  .refine(
    (m) => Object.keys(m).every((k) => k.length <= 100),
    'attribute keys must be at most 100 characters',
  );

/** UpdatedUser (application-api §7.2): null in any field means "not provided". */
export const UpdatedUserSchema = z
  .object({
    email: z
      .string()
      .max(320)
      .refine((e) => e.includes('@'), 'must be an e-mail address')
      .nullish(),
    name: z.string().min(1).max(255).nullish(),
    tz: z.string().nullish(),
    deviceTokens: z.array(z.string().min(1).max(1024)).max(100).nullish(),
    subscribeToEmails: z.boolean().nullish(),
    attributes: attributeMap.nullish(),
  })
  .openapi('UpdatedUser');

export const UpsertedUserSchema = UpdatedUserSchema.extend({ id: z.string().min(1).max(255) }).openapi(
  'UpsertedUser',
);

export const EventAttributesSchema = attributeMap;

/**
 * The value of a metric event. A wrong JSON type (or a missing value) is structural, so it outranks
 * 422 checks of other fields (application-api §5.3); a non-finite number (e.g. 1e400) passes here
 * and is a 422 later.
 */
export const EventValueSchema = z
  .unknown()
  .superRefine((v, ctx) => {
    if (typeof v !== 'number') ctx.addIssue({ code: 'invalid_type', expected: 'number', input: v });
  })
  .openapi({ type: 'number' });

type Updated = z.output<typeof UpdatedUserSchema>;

/** An input-domain check (422), done before resources named in the path are looked up. */
export function checkTimeZone(u: Updated): void {
  if (u.tz != null && !isValidTimeZone(u.tz)) throw unprocessable(`Unknown time zone: ${u.tz}`);
}

/** Drops nulls and checks attribute keys against configuration (422). */
export function toUserInput(snap: Snapshot, id: string, u: Updated): UserInput {
  checkTimeZone(u);
  if (u.attributes) checkAttributeKeys(snap, u.attributes, 'user');
  return {
    id,
    email: u.email ?? undefined,
    name: u.name ?? undefined,
    tz: u.tz ?? undefined,
    deviceTokens: u.deviceTokens ? [...new Set(u.deviceTokens)] : undefined,
    subscribeToEmails: u.subscribeToEmails ?? undefined,
    attributes: u.attributes ?? undefined,
  };
}

/** Unknown keys → 422 `Invalid attribute keys: a, b.` in the order given. */
export function checkAttributeKeys(
  snap: Snapshot,
  attrs: Record<string, string>,
  type: 'user' | 'event',
): void {
  const known = type === 'user' ? snap.userAttributesByKey : snap.eventAttributesByKey;
  const unknown = Object.keys(attrs).filter((k) => !known.has(k));
  if (unknown.length) throw invalidAttributeKeys(unknown);
}
