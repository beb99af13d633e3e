import { z } from '../zod';

// The schemas of the fields admin items have in common, as the bulk resources and the
// configuration-as-code document (src/config-as-code/document.ts) validate them.

export const keySchema = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_-]+$/, 'must match ^[A-Za-z0-9_-]+$');
export const nameSchema = z.string().min(1).max(255);
export const descriptionSchema = z.string().max(1000).nullable();
export const uuidSchema = z.uuid();
/** A badge as resources show it: its URL, or null. */
export const BadgeOutSchema = z.object({ url: z.string() }).nullable();

/** The fields every described resource (achievement, points system, level) shows first. */
export const describedOutFields = {
  id: z.uuid(),
  key: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  badge: BadgeOutSchema,
};

export const badgeSchema = z
  .object({
    url: z
      .string()
      .max(2048)
      .refine((u) => isHttpUrl(u), 'must be an absolute http(s) URL'),
  })
  .nullable();
export const dateSchema = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD')
  .refine(isValidDate, 'must be a valid calendar date');

export const filterInputSchema = z.object({
  attributeId: z.uuid(),
  attributeValue: z.string().min(1).max(255),
});
export const filterListSchema = z.array(filterInputSchema).max(20).nullable();

export function isHttpUrl(u: string): boolean {
  try {
    const url = new URL(u);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

export function isValidDate(d: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(d)) return false;
  const t = Date.parse(`${d}T00:00:00Z`);
  return !Number.isNaN(t) && new Date(t).toISOString().slice(0, 10) === d;
}
