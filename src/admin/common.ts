import { and, asc, eq, isNull, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Deps } from '../deps';
import { randomBytes, randomInt } from 'node:crypto';
import type { z } from '../zod';
import type { Snapshot } from '../catalog/snapshot';
import type { StoredFilter } from '../db/schema';
import type { ListInput, Scope } from './resource';
import { safeParseReported } from '../wire/parse';

/** A problem with one item of a bulk request: the item is skipped and reported (admin §1.4). */
export class ItemIssue extends Error {
  constructor(
    message: string,
    readonly severity: 'error' | 'warning' = 'error',
  ) {
    super(message);
  }
}

export interface AdminIssue {
  severity: 'error' | 'warning';
  message: string;
  index?: number;
  id?: string;
  userId?: string;
}

export const iso = (d: Date) => d.toISOString();
export const isoOrNull = (d: Date | null | undefined) => (d ? d.toISOString() : null);

/** Parses one item; the first zod issue becomes the item's error message. */
export function parseItem<S extends z.ZodType>(schema: S, item: unknown): z.output<S> {
  const r = safeParseReported(schema, item);
  if (r.success) return r.data;
  const i = r.error.issues[0]!;
  const where = i.path.length ? i.path.map(String).join('.') : 'item';
  const input = (i as { input?: unknown }).input;
  const message =
    (i.code === 'invalid_type' || i.code === 'invalid_value') && (input === undefined || input === null)
      ? `${where} is required`
      : `${where}: ${i.message}`;
  throw new ItemIssue(message);
}

/** Checks filters against the configured attributes of `type`; rejects duplicates and wrong types. */
export function checkFilters(
  snap: Snapshot,
  filters: StoredFilter[] | null | undefined,
  type: 'user' | 'event',
  field: string,
): StoredFilter[] {
  const list = filters ?? [];
  const seen = new Set<string>();
  for (const f of list) {
    const attr = snap.attributesById.get(f.attributeId);
    if (!attr) throw new ItemIssue(`${field}: attribute ${f.attributeId} does not exist`);
    if (attr.type !== type) throw new ItemIssue(`${field}: attribute ${attr.key} is not a ${type} attribute`);
    if (seen.has(f.attributeId)) throw new ItemIssue(`${field}: attribute ${attr.key} is given twice`);
    seen.add(f.attributeId);
  }
  return list.map((f) => ({ attributeId: f.attributeId, attributeValue: f.attributeValue }));
}

/** Filters as shown by the admin API: with the attribute key. */
export function showFilters(snap: Snapshot, filters: StoredFilter[]) {
  return filters.map((f) => ({
    attributeId: f.attributeId,
    attributeKey: snap.attributesById.get(f.attributeId)?.key ?? null,
    attributeValue: f.attributeValue,
  }));
}

/** Postgres unique violation (a duplicate key). */
export function isUniqueViolation(err: unknown): boolean {
  return pgCode(err) === '23505';
}

/** The Postgres SQLSTATE of an error, looking through drizzle's wrapper. */
export function pgCode(err: unknown): string | undefined {
  let e = err as { code?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e && depth < 4; depth++) {
    if (typeof e.code === 'string') return e.code;
    e = e.cause as typeof e;
  }
  return undefined;
}

/** Keys stay reserved after deletion, so uniqueness is checked against every row. */
export function duplicateKey(resource: string): ItemIssue {
  return new ItemIssue(`A ${resource} with this key already exists`);
}

/** PATCH rule: an absent field is unchanged; `null` clears nullable fields only. */
export function rejectNulls(item: Record<string, unknown>, nonNullable: readonly string[]): void {
  for (const f of nonNullable) {
    if (f in item && item[f] === null) throw new ItemIssue(`${f} cannot be null`);
  }
}

/** PATCH rule for a nullable field: absent keeps `current`, a value or `null` replaces it. */
export const patched = <T>(given: T | undefined, current: T): T => (given === undefined ? current : given);

/** PATCH rule for a badge: absent keeps the current URL, `null` clears it, a badge sets its URL. */
export const patchedBadgeUrl = (given: { url: string } | null | undefined, current: string | null) =>
  given === undefined ? current : (given?.url ?? null);

let lastIdMs = 0;
let idSeq = 0;

/**
 * A UUIDv7 whose order follows creation order within this process. Lists are ordered by
 * (created, id), and `created` comes from the injected clock at millisecond precision, so items
 * created in the same millisecond (one bulk request, or a frozen test clock) keep their order.
 */
export function newId(): string {
  const now = Date.now();
  if (now > lastIdMs) {
    lastIdMs = now;
    idSeq = randomInt(0, 0x800);
  } else if (++idSeq > 0xfff) {
    lastIdMs++;
    idSeq = 0;
  }
  const b = randomBytes(16);
  b.writeUIntBE(lastIdMs, 0, 6);
  b[6] = 0x70 | (idSeq >> 8);
  b[7] = idSeq & 0xff;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** PATCH rule for fields that cannot change: repeating the current value is fine, another value is an item error. */
export function rejectChanges(
  item: Record<string, unknown>,
  current: Record<string, unknown>,
  fields: readonly string[],
): void {
  for (const f of fields) {
    if (item[f] !== undefined && item[f] !== current[f]) throw new ItemIssue(`${f} cannot be changed`);
  }
}

/** A configuration table with soft deletes: listed oldest first, deleted rows invisible. */
type LiveTable = PgTable & { id: PgColumn; created: PgColumn; deletedAt: PgColumn };

/**
 * The live rows of one configuration table as the bulk resource `name` ("metric", "points system")
 * reads and writes them; its messages say "Metric not found", "Metric is in use" and "A metric with
 * this key already exists". With `parent` (the `systemId` column of triggers, levels and boosts),
 * the rows belong to a points system and every read keeps to the `{systemId}` of the scope.
 */
export function liveTable<T extends LiveTable>(table: T, name: string, parent?: PgColumn) {
  type Row = T['$inferSelect'];
  const title = `${name[0]!.toUpperCase()}${name.slice(1)}`;
  const live = (scope: Scope) =>
    and(isNull(table.deletedAt), parent ? eq(parent, scope.systemId ?? '') : undefined);

  /** The live row with this id (in this scope), if any; `db` is the caller's transaction when it holds one. */
  async function find(
    deps: Deps,
    { id, ...scope }: Scope & { id: string },
    db: Pick<Deps['db'], 'select'> = deps.db,
  ): Promise<Row | undefined> {
    const [row] = await db
      .select()
      .from(table as PgTable)
      .where(and(eq(table.id, id), live(scope)));
    return row as Row | undefined;
  }

  /** One page of live rows (in this scope), oldest first (admin §1.3 List); `where` narrows it. */
  async function list(deps: Deps, { limit, skip, ...scope }: ListInput, where?: SQL): Promise<Row[]> {
    return (await deps.db
      .select()
      .from(table as PgTable)
      .where(and(live(scope), where))
      .orderBy(asc(table.created), asc(table.id))
      .limit(limit)
      .offset(skip)) as Row[];
  }

  return {
    find,
    list,

    /** `list` and `get` of a resource that shows each row as `show` does. */
    reads<Out>(show: (row: Row) => Out) {
      return {
        list: async (deps: Deps, page: ListInput): Promise<Out[]> => (await list(deps, page)).map(show),
        async get(deps: Deps, at: Scope & { id: string }): Promise<Out | null> {
          const row = await find(deps, at);
          return row ? show(row) : null;
        },
      };
    },

    /**
     * Inserts one new row with a fresh id and `created` = `updated` = `now`; a unique violation (a
     * key that is taken) is "A `name` with this key already exists", or `taken()` when given. The id
     * and time are explicit: inside one transaction (configuration apply) the database's now() is
     * the same for every row, which would lose the creation order.
     */
    async insert(
      deps: Deps,
      values: Omit<T['$inferInsert'], 'id' | 'created' | 'updated'>,
      opts: { now?: Date; taken?: () => ItemIssue } = {},
    ): Promise<Row> {
      const now = opts.now ?? new Date(deps.clock.now());
      try {
        const [row] = await deps.db
          .insert(table as PgTable)
          .values({ id: newId(), ...values, created: now, updated: now })
          .returning();
        return row as Row;
      } catch (err) {
        if (isUniqueViolation(err)) throw opts.taken ? opts.taken() : duplicateKey(name);
        throw err;
      }
    },

    /**
     * Writes `values` to the row with this id with `updated` = `now` and returns the row; a unique
     * violation (a key that is taken) is "A `name` with this key already exists". `db` is the
     * caller's transaction when it holds one.
     */
    async update(
      deps: Deps,
      id: string,
      values: Partial<Omit<T['$inferInsert'], 'id' | 'created' | 'updated'>>,
      opts: { now?: Date; db?: Pick<Deps['db'], 'update'> } = {},
    ): Promise<Row> {
      try {
        const [row] = await (opts.db ?? deps.db)
          .update(table as PgTable)
          .set({ ...values, updated: opts.now ?? new Date(deps.clock.now()) })
          .where(eq(table.id, id))
          .returning();
        return row as Row;
      } catch (err) {
        if (isUniqueViolation(err)) throw duplicateKey(name);
        throw err;
      }
    },

    /** `patchTarget` of an item naming a live row (in this scope): else "`Name` not found". */
    patch<S extends z.ZodType>(
      deps: Deps,
      item: unknown,
      schema: S,
      rules: { nonNullable: readonly string[]; fixed?: readonly string[] },
      scope: Scope = {},
    ): Promise<{ input: z.output<S>; current: Row }> {
      return patchTarget(item, schema, { name: title, ...rules }, (id) => find(deps, { ...scope, id }));
    },

    /**
     * Soft-deletes the live row `at` (history keeps naming it, the live reads no longer see it):
     * "`Name` not found" when there is none, "`Name` is in use" when `inUse` says so.
     */
    async remove(
      deps: Deps,
      at: Scope & { id: string },
      inUse?: () => boolean | Promise<boolean>,
    ): Promise<void> {
      if (!(await find(deps, at))) throw new ItemIssue(`${title} not found`);
      if (inUse && (await inUse())) throw new ItemIssue(`${title} is in use`);
      await deps.db
        .update(table as PgTable)
        .set({ deletedAt: new Date(deps.clock.now()) })
        .where(eq(table.id, at.id));
    },
  };
}

/** The columns a new keyed row takes from its create input as they are. */
export const keyedColumns = (input: {
  key: string;
  name: string;
  description?: string | null | undefined;
}) => ({
  key: input.key,
  name: input.name,
  description: input.description ?? null,
});

/** The same columns after a PATCH: absent key and name keep theirs, description as `patched`. */
export const keyedPatch = (
  input: { key?: string | undefined; name?: string | undefined; description?: string | null | undefined },
  current: { key: string; name: string; description: string | null },
) => ({
  key: input.key ?? current.key,
  name: input.name ?? current.name,
  description: patched(input.description, current.description),
});

/**
 * The start of a PATCH of one item: `null` refused for the `nonNullable` fields, the item parsed,
 * the current row found (else "`name` not found") and changes of the `fixed` fields refused.
 */
export async function patchTarget<S extends z.ZodType, Row extends object>(
  item: unknown,
  schema: S,
  rules: { name: string; nonNullable: readonly string[]; fixed?: readonly string[] },
  find: (id: string) => Promise<Row | undefined>,
): Promise<{ input: z.output<S>; current: Row }> {
  const raw = item as Record<string, unknown>;
  rejectNulls(raw, rules.nonNullable);
  const input = parseItem(schema, item);
  const current = await find((input as { id: string }).id);
  if (!current) throw new ItemIssue(`${rules.name} not found`);
  rejectChanges(raw, current as Record<string, unknown>, rules.fixed ?? []);
  return { input, current };
}
