import type { AttributeRow, Snapshot } from '../catalog/snapshot';
import { attributes, type StoredFilter } from '../db/schema';
import type { BulkResource } from './resource';
import { z } from '../zod';
import { ItemIssue, iso, liveTable, parseItem } from './common';
import { keySchema, nameSchema } from './fields';

export const AdminAttributeSchema = z
  .object({
    id: z.uuid(),
    key: z.string(),
    name: z.string(),
    type: z.enum(['user', 'event']),
    created: z.string(),
    updated: z.string(),
  })
  .openapi('AdminAttribute');

const createSchema = z
  .object({ name: nameSchema, key: keySchema, type: z.enum(['user', 'event']) })
  .openapi('AdminAttributeCreate');

const updateSchema = z.object({ id: z.uuid(), name: nameSchema.optional() }).openapi('AdminAttributeUpdate');

export const showAttribute = (a: AttributeRow) => ({
  id: a.id,
  key: a.key,
  name: a.name,
  type: a.type,
  created: iso(a.created),
  updated: iso(a.updated),
});

const uses = (filters: StoredFilter[], id: string) => filters.some((f) => f.attributeId === id);

/** Whether any filter or leaderboard breakdown still references the attribute (admin §4 delete rule). */
function attributeInUse(snap: Snapshot, id: string): boolean {
  for (const s of snap.systems) {
    if (s.triggers.some((t) => uses(t.userAttributes, id) || uses(t.eventAttributes, id))) return true;
    if (s.boosts.some((b) => uses(b.userAttributes, id))) return true;
  }
  if (snap.achievements.some((a) => uses(a.userAttributes, id) || uses(a.eventAttributes, id))) return true;
  return snap.leaderboards.some((b) => b.breakdownAttributes.includes(id));
}

const attributeRows = liveTable(attributes, 'attribute');

export const attributesResource: BulkResource<ReturnType<typeof showAttribute>> = {
  name: 'attribute',
  schemas: { resource: AdminAttributeSchema, create: createSchema, update: updateSchema },
  ...attributeRows.reads(showAttribute),
  async create(deps, { item }) {
    const input = parseItem(createSchema, item);
    // Keys of deleted attributes stay reserved: the unique index covers every row.
    const taken = () =>
      new ItemIssue(
        `${input.type === 'user' ? 'A user' : 'An event'} attribute with this key already exists`,
      );
    const row = await attributeRows.insert(
      deps,
      { key: input.key, name: input.name, type: input.type },
      { taken },
    );
    return showAttribute(row);
  },
  async update(deps, { item }) {
    const { input, current } = await attributeRows.patch(deps, item, updateSchema, {
      nonNullable: ['name'],
      fixed: ['key', 'type'],
    });
    const row = await attributeRows.update(deps, input.id, { name: input.name ?? current.name });
    return showAttribute(row);
  },
  async remove(deps, { id }) {
    await attributeRows.remove(deps, { id }, () => attributeInUse(deps.catalog.snapshot, id));
  },
};
