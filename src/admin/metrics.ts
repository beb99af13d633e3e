import { z } from '../zod';
import type { MetricRow } from '../catalog/snapshot';
import type { Deps } from '../deps';
import { metrics } from '../db/schema';
import type { BulkResource } from './resource';
import { ItemIssue, iso, liveTable, parseItem, rejectNulls } from './common';
import { keySchema, nameSchema } from './fields';

export const AdminMetricSchema = z
  .object({
    id: z.uuid(),
    key: z.string(),
    name: z.string(),
    unitType: z.enum(['number', 'currency']),
    units: z.string().nullable(),
    created: z.string(),
    updated: z.string(),
  })
  .openapi('AdminMetric');

const unitsSchema = z.string().max(32).nullable();

const createSchema = z
  .object({
    name: nameSchema,
    key: keySchema,
    unitType: z.enum(['number', 'currency']).nullish(),
    units: unitsSchema.optional(),
  })
  .openapi('AdminMetricCreate');

const updateSchema = z
  .object({
    id: z.uuid(),
    name: nameSchema.optional(),
    unitType: z.enum(['number', 'currency']).optional(),
    units: unitsSchema.optional(),
  })
  .openapi('AdminMetricUpdate');

function checkUnits(unitType: 'number' | 'currency', units: string | null): void {
  if (unitType === 'currency' && (units === null || !/^[A-Z]{3}$/.test(units))) {
    throw new ItemIssue('units must be a three-letter upper-case currency code when unitType is currency');
  }
}

export const showMetric = (m: MetricRow) => ({
  id: m.id,
  key: m.key,
  name: m.name,
  unitType: m.unitType,
  units: m.units,
  created: iso(m.created),
  updated: iso(m.updated),
});

const metricRows = liveTable(metrics, 'metric');

/** Whether anything that is not finished still references the metric (admin §5 delete rule). */
function metricInUse(deps: Deps, id: string): boolean {
  const snap = deps.catalog.snapshot;
  if (snap.streak.conditions.some((c) => c.metricId === id)) return true;
  if (snap.achievements.some((a) => a.metricId === id)) return true;
  if (snap.systems.some((s) => s.triggers.some((t) => t.metricId === id))) return true;
  return snap.leaderboards.some((b) => b.metricId === id && b.status !== 'finished');
}

export const metricsResource: BulkResource<ReturnType<typeof showMetric>> = {
  name: 'metric',
  schemas: { resource: AdminMetricSchema, create: createSchema, update: updateSchema },
  ...metricRows.reads(showMetric),
  async create(deps, { item }) {
    const input = parseItem(createSchema, item);
    const unitType = input.unitType ?? 'number';
    const units = input.units ?? null;
    checkUnits(unitType, units);
    const row = await metricRows.insert(deps, { key: input.key, name: input.name, unitType, units });
    return showMetric(row);
  },
  async update(deps, { item }) {
    rejectNulls(item as Record<string, unknown>, ['name', 'unitType']);
    if ((item as Record<string, unknown>).key !== undefined) throw new ItemIssue('key cannot be changed');
    const input = parseItem(updateSchema, item);
    const current = await metricRows.find(deps, { id: input.id });
    if (!current) throw new ItemIssue('Metric not found');
    const unitType = input.unitType ?? current.unitType;
    const units = input.units === undefined ? current.units : input.units;
    checkUnits(unitType, units);
    const row = await metricRows.update(deps, input.id, {
      name: input.name ?? current.name,
      unitType,
      units,
    });
    return showMetric(row);
  },
  async remove(deps, { id }) {
    await metricRows.remove(deps, { id }, () => metricInUse(deps, id));
  },
};
