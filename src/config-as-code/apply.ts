import { sql } from 'drizzle-orm';
import { achievementsResource } from '../admin/achievements';
import { attributesResource } from '../admin/attributes';
import { boostsResource } from '../admin/boosts';
import { ItemIssue } from '../admin/common';
import { leaderboardsResource } from '../admin/leaderboards';
import { levelsResource } from '../admin/levels';
import { metricsResource } from '../admin/metrics';
import { pointsSystemsResource } from '../admin/points-systems';
import { type StreakSettingsPatch, updateStreakSettings } from '../admin/streak-settings';
import { triggersResource } from '../admin/triggers';
import { webhooksResource } from '../admin/webhooks';
import type { Catalog } from '../catalog/cache';
import { loadSnapshot, type Snapshot } from '../catalog/snapshot';
import type { Db } from '../db/client';
import type { Deps } from '../deps';
import { AppError } from '../errors';
import type { BulkResource, Scope } from '../admin/resource';
import { CONFIG_LOCK, currentActor, serialise, writeAudit } from './audit';
import type { ConfigDocument, FilterDoc } from './document';
import {
  auditItems,
  changedFields,
  currentItems,
  diffItems,
  documentOf,
  type Item,
  itemId,
  itemsOf,
  type Resource,
  versionOf,
} from './items';

export interface PlanChange {
  resource: Resource;
  key: string;
  action: 'create' | 'update' | 'delete' | 'unchanged';
  /** update: the changed fields. */
  fields?: Record<string, { before: unknown; after: unknown }>;
  /** create: the new item; delete: the removed item. */
  value?: Record<string, unknown>;
  /** An existing item the document does not name: kept unless `prune`. */
  notInDocument?: true;
}

export interface PlanIssue {
  severity: 'error' | 'warning';
  message: string;
  resource?: Resource;
  key?: string;
}

export interface PlanResult {
  /** The configuration's version: before the change for a plan, after it for an apply. */
  version: string;
  changes: PlanChange[];
  issues: PlanIssue[];
  summary: { create: number; update: number; delete: number; unchanged: number };
  /** Signing secrets of webhook endpoints created by this apply, shown once. */
  secrets?: Array<{ url: string; secret: string }>;
}

/** The document names an older version than the current one (409). */
export class StaleVersion extends Error {
  constructor(
    readonly current: string,
    readonly given: string,
  ) {
    super(
      `The configuration changed since this document was exported (document version ${given}, current version ${current}); nothing was changed`,
    );
  }
}

class Rollback extends Error {
  constructor(readonly result: PlanResult) {
    super('rollback');
  }
}

/** The catalog seen by admin services inside the transaction: reloaded from the transaction itself. */
class TxCatalog {
  snapshot!: Snapshot;
  constructor(private readonly tx: Db) {}
  async reload(): Promise<void> {
    this.snapshot = await loadSnapshot(this.tx, 0);
  }
  /** Publishing waits for the commit (the caller publishes once). */
  async changed(): Promise<void> {
    await this.reload();
  }
}

type Tx = Parameters<Parameters<Deps['db']['transaction']>[0]>[0];

/**
 * Plans (`apply: false`) or applies a document in one transaction under the configuration lock,
 * through the resource services, so the validation is theirs. A plan always rolls back; an apply
 * rolls back when any item has an error. Changes are published and backdating starts after commit.
 */
export async function runConfig(
  deps: Deps,
  doc: ConfigDocument,
  opts: {
    prune: boolean;
    apply: boolean;
    /** Sees the configuration as the document leaves it, inside the transaction (simulations' draft). */
    inspect?: (draft: Snapshot) => void;
  },
): Promise<{ result: PlanResult; applied: boolean }> {
  const actor = currentActor('config');
  return serialise(deps, async () => {
    const deferred: Array<(d: Deps) => Promise<void>> = [];
    let outcome: { result: PlanResult; applied: boolean; changed: boolean };
    try {
      outcome = await deps.db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(${CONFIG_LOCK})`);
        const nowMs = deps.clock.now();
        const cat = new TxCatalog(tx as unknown as Db);
        await cat.reload();
        const before = cat.snapshot;
        const version = versionOf(documentOf(before, nowMs));
        if (opts.apply && doc.version !== undefined && doc.version !== version) {
          throw new StaleVersion(version, doc.version);
        }
        const txDeps: Deps = {
          ...deps,
          db: tx as unknown as Db,
          catalog: cat as unknown as Catalog,
          afterCommit: (task) => deferred.push(task),
        };
        const result = await new Run(txDeps, tx, cat, doc, opts.prune).execute(currentItems(before, nowMs));
        result.version = version;
        if (version !== doc.version && doc.version !== undefined) {
          result.issues.unshift({
            severity: 'error',
            message: new StaleVersion(version, doc.version).message.replace(
              'nothing was changed',
              'apply would be refused',
            ),
          });
        }
        if (opts.inspect) {
          await cat.reload();
          opts.inspect(cat.snapshot);
        }
        if (!opts.apply || result.issues.some((i) => i.severity === 'error')) throw new Rollback(result);
        await cat.reload();
        const changes = diffItems(auditItems(before, nowMs), auditItems(cat.snapshot, nowMs));
        await writeAudit(tx as unknown as Db, actor, changes, deps.clock.now());
        result.version = versionOf(documentOf(cat.snapshot, nowMs));
        return { result, applied: true, changed: changes.length > 0 };
      });
    } catch (err) {
      if (err instanceof Rollback) return { result: err.result, applied: false };
      throw err;
    }
    if (outcome.changed) await deps.catalog.changed();
    for (const task of deferred) await task(deps);
    return { result: outcome.result, applied: outcome.applied };
  });
}

/** Fields given for another trigger/type than the item's: an item error, as the resource endpoints say. */
const FOREIGN: Record<string, Record<string, string[]>> = {
  achievement: {
    metric: ['metric', 'metricValue', 'eventAttributes'],
    streak: ['streakLength'],
    achievement: ['achievements'],
    api: [],
  },
  'points trigger': {
    metric: ['metric', 'metricThreshold', 'eventAttributes'],
    achievement: ['achievement'],
    streak: ['streakLength'],
    time: ['timeUnit', 'timeInterval'],
    user_creation: [],
  },
};

function rejectForeign(resource: Resource, raw: Record<string, unknown>, kind: string): void {
  const table = FOREIGN[resource];
  if (!table) return;
  const field = resource === 'achievement' ? 'trigger' : 'type';
  for (const [other, fields] of Object.entries(table)) {
    if (other === kind) continue;
    for (const f of fields) {
      const v = raw[f];
      if (v !== undefined && !(Array.isArray(v) && v.length === 0))
        throw new ItemIssue(`${f} is only allowed with ${field} ${other}`);
    }
  }
}

const RESOURCES: Partial<Record<Resource, BulkResource<unknown>>> = {
  attribute: attributesResource,
  metric: metricsResource,
  achievement: achievementsResource,
  'points system': pointsSystemsResource,
  'points trigger': triggersResource,
  'points level': levelsResource,
  'points boost': boostsResource,
  leaderboard: leaderboardsResource,
  'webhook endpoint': webhooksResource,
};

const FORWARD: Resource[] = [
  'attribute',
  'metric',
  'achievement',
  'streak settings',
  'points system',
  'points trigger',
  'points level',
  'points boost',
  'leaderboard',
  'webhook endpoint',
];

class Run {
  private readonly issues: PlanIssue[] = [];
  private readonly secrets: Array<{ url: string; secret: string }> = [];

  constructor(
    private readonly deps: Deps,
    private readonly tx: Tx,
    private readonly cat: TxCatalog,
    private readonly doc: ConfigDocument,
    private readonly prune: boolean,
  ) {}

  private get snap(): Snapshot {
    return this.cat.snapshot;
  }

  /** Which existing items the document manages: its sections that are present. */
  private managed(item: Item, desiredSystems: Set<string>): boolean {
    const d = this.doc;
    switch (item.resource) {
      case 'attribute':
        return d.attributes !== undefined;
      case 'metric':
        return d.metrics !== undefined;
      case 'achievement':
        return d.achievements !== undefined;
      case 'streak settings':
        return d.streak !== undefined;
      case 'points system':
        return d.pointsSystems !== undefined;
      case 'leaderboard':
        return d.leaderboards !== undefined;
      case 'webhook endpoint':
        return d.webhooks !== undefined;
      default: {
        // Children of a system the document names, in a list the document gives.
        if (!item.system || !desiredSystems.has(item.system)) return false;
        const sys = d.pointsSystems!.find((p) => p.key === item.system)!;
        if (item.resource === 'points trigger') return sys.triggers !== undefined;
        if (item.resource === 'points level') return sys.levels !== undefined;
        return sys.boosts !== undefined;
      }
    }
  }

  async execute(current: Item[]): Promise<PlanResult> {
    const desired = itemsOf(this.doc);
    const rawOf = rawItems(this.doc);
    const currentById = new Map(current.map((i) => [itemId(i), i]));
    const desiredIds = new Set(desired.map(itemId));
    const desiredSystems = new Set((this.doc.pointsSystems ?? []).map((p) => p.key));
    const changes: PlanChange[] = [];
    const work: Array<{ change: PlanChange; item: Item; existing?: Item; raw?: Record<string, unknown> }> =
      [];

    for (const item of desired) {
      const existing = currentById.get(itemId(item));
      if (!existing) {
        const change: PlanChange = {
          resource: item.resource,
          key: item.key,
          action: 'create',
          value: item.value,
        };
        changes.push(change);
        work.push({ change, item, raw: rawOf.get(itemId(item)) });
        continue;
      }
      const fields = changedFields(existing.value, item.value);
      if (Object.keys(fields).length === 0) {
        changes.push({ resource: item.resource, key: item.key, action: 'unchanged' });
        continue;
      }
      const change: PlanChange = { resource: item.resource, key: item.key, action: 'update', fields };
      changes.push(change);
      work.push({ change, item, existing, raw: rawOf.get(itemId(item)) });
    }
    let kept = 0;
    const deletions: Array<{ change: PlanChange; item: Item }> = [];
    for (const item of current) {
      if (desiredIds.has(itemId(item)) || !this.managed(item, desiredSystems)) continue;
      // A deleted system takes its triggers, levels and boosts with it.
      if (item.system && !desiredSystems.has(item.system)) continue;
      if (!this.prune) {
        kept++;
        changes.push({ resource: item.resource, key: item.key, action: 'unchanged', notInDocument: true });
        continue;
      }
      const change: PlanChange = {
        resource: item.resource,
        key: item.key,
        action: 'delete',
        value: item.value,
      };
      changes.push(change);
      deletions.push({ change, item });
    }
    if (kept > 0) {
      this.issues.push({
        severity: 'warning',
        message: `${kept} existing item${kept === 1 ? ' is' : 's are'} not in the document and ${kept === 1 ? 'is' : 'are'} kept (prune deletes ${kept === 1 ? 'it' : 'them'})`,
      });
    }

    for (const resource of FORWARD) {
      let batch = work.filter((w) => w.item.resource === resource);
      if (batch.length === 0) continue;
      if (resource === 'achievement') batch = prerequisitesFirst(batch);
      for (const w of batch) {
        this.warn(w.change, w.existing, w.item);
        await this.attempt(w.item, () => this.write(w.item, w.existing, w.raw ?? {}));
        // Later achievements may name this one; other resources only need a reload per phase.
        if (resource === 'achievement') await this.cat.reload();
      }
      await this.cat.reload();
    }
    for (const resource of [...FORWARD].reverse()) {
      let batch = deletions.filter((d) => d.item.resource === resource);
      if (batch.length === 0) continue;
      if (resource === 'achievement') batch = prerequisitesFirst(batch).reverse();
      for (const d of batch) {
        this.warn(d.change, d.item, undefined);
        await this.attempt(d.item, () => this.remove(d.item));
        if (resource === 'achievement') await this.cat.reload();
      }
      await this.cat.reload();
    }

    const count = (a: PlanChange['action']) => changes.filter((c) => c.action === a).length;
    return {
      version: '',
      changes,
      issues: this.issues,
      summary: {
        create: count('create'),
        update: count('update'),
        delete: count('delete'),
        unchanged: count('unchanged'),
      },
      ...(this.secrets.length ? { secrets: this.secrets } : {}),
    };
  }

  /** Runs one item's write in a savepoint: an item error undoes that item only and becomes an issue. */
  private async attempt(item: Item, fn: () => Promise<void>): Promise<void> {
    try {
      await this.tx.transaction(async (sp) => {
        const outer = this.deps.db;
        (this.deps as { db: Db }).db = sp as unknown as Db;
        try {
          await fn();
        } finally {
          (this.deps as { db: Db }).db = outer;
        }
      });
    } catch (err) {
      if (err instanceof ItemIssue) {
        this.issues.push({
          severity: err.severity,
          message: err.message,
          resource: item.resource,
          key: item.key,
        });
      } else if (err instanceof AppError && err.status < 500) {
        this.issues.push({ severity: 'error', message: err.message, resource: item.resource, key: item.key });
      } else {
        throw err;
      }
      await this.cat.reload();
    }
  }

  // ---------------------------------------------------------------- references by key

  private attributeId(key: string, type: 'user' | 'event', field: string): string {
    const a = (type === 'user' ? this.snap.userAttributesByKey : this.snap.eventAttributesByKey).get(key);
    if (!a) throw new ItemIssue(`${field}: ${type} attribute ${key} does not exist`);
    return a.id;
  }

  private filters(list: unknown, type: 'user' | 'event', field: string) {
    return ((list as FilterDoc[] | undefined) ?? []).map((f) => ({
      attributeId: this.attributeId(f.attribute, type, field),
      attributeValue: f.value,
    }));
  }

  private metricId(key: unknown, field = 'metric'): string {
    const m = this.snap.metricsByKey.get(String(key));
    if (!m) throw new ItemIssue(`${field}: metric ${String(key)} does not exist`);
    return m.id;
  }

  private achievementId(key: unknown, field = 'achievement'): string {
    const a = this.snap.achievementsByKey.get(String(key));
    if (!a) throw new ItemIssue(`${field}: achievement ${String(key)} does not exist`);
    return a.id;
  }

  private systemId(key: unknown, field = 'pointsSystem'): string {
    const p = this.snap.systemsByKey.get(String(key));
    if (!p) throw new ItemIssue(`${field}: points system ${String(key)} does not exist`);
    return p.id;
  }

  /** Document fields → the resource API's fields (ids for keys). */
  private translate(resource: Resource, v: Record<string, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [f, value] of Object.entries(v)) {
      if (value === undefined) continue;
      switch (f) {
        case 'metric':
          if (resource === 'leaderboard') out.metricId = value === null ? null : this.metricId(value);
          else out.metricId = this.metricId(value);
          break;
        case 'achievement':
          out.achievementId = this.achievementId(value);
          break;
        case 'achievements':
          out.achievementIds = (value as string[]).map((k) => this.achievementId(k, 'achievements'));
          break;
        case 'pointsSystem':
          out.pointsSystemId = value === null ? null : this.systemId(value);
          break;
        case 'userAttributes':
          out.userAttributes = this.filters(value, 'user', f);
          break;
        case 'eventAttributes':
          out.eventAttributes = this.filters(value, 'event', f);
          break;
        case 'breakdownAttributes':
          out.breakdownAttributes = (value as string[]).map((k) => this.attributeId(k, 'user', f));
          break;
        case 'conditions':
          out.conditions = (value as Array<{ metric: string; threshold: number }>).map((c, i) => ({
            metricId: this.metricId(c.metric, `conditions.${i}.metric`),
            threshold: c.threshold,
          }));
          break;
        default:
          out[f] = value;
      }
    }
    return out;
  }

  // ---------------------------------------------------------------- writes

  private async write(item: Item, existing: Item | undefined, raw: Record<string, unknown>): Promise<void> {
    const resource = item.resource;
    if (resource === 'achievement' || resource === 'points trigger') {
      rejectForeign(resource, raw, String(item.value.trigger ?? item.value.type));
    }
    if (resource === 'streak settings') {
      const fields = existing ? changedFields(existing.value, item.value) : {};
      const patch = this.translate(
        resource,
        Object.fromEntries(Object.entries(fields).map(([f, c]) => [f, c.after])),
      );
      await updateStreakSettings(this.deps, patch as StreakSettingsPatch);
      return;
    }
    const service = RESOURCES[resource]!;
    // The nested resources (triggers, levels, boosts) name their points system.
    const scope: Scope = item.system ? { systemId: this.systemId(item.system) } : {};
    if (!existing) {
      const value = { ...item.value };
      if (resource === 'leaderboard' && value.status === 'inactive') delete value.status;
      // A locked achievement is created active, then locked (the only way the endpoints allow).
      const lock = resource === 'achievement' && value.status === 'locked';
      if (lock) value.status = 'active';
      const shown = (await service.create!(this.deps, {
        ...scope,
        item: this.translate(resource, value),
      })) as {
        id: string;
        url?: string;
        secret?: string;
      };
      if (lock) await service.update!(this.deps, { ...scope, item: { id: shown.id, status: 'locked' } });
      if (resource === 'webhook endpoint' && shown.secret)
        this.secrets.push({ url: shown.url!, secret: shown.secret });
      return;
    }
    const fields = changedFields(existing.value, item.value);
    const patch: Record<string, unknown> = Object.fromEntries(
      Object.entries(fields).map(([f, c]) => [f, c.after]),
    );
    // A new trigger or ranking rule needs every field of its kind, not only the changed ones.
    if (resource === 'achievement' && 'trigger' in patch) {
      for (const f of ['metric', 'metricValue', 'eventAttributes', 'streakLength', 'achievements'])
        if (item.value[f] !== undefined) patch[f] = item.value[f];
    }
    if (resource === 'leaderboard' && 'rankBy' in patch) {
      patch.metric = item.value.metric;
      patch.pointsSystem = item.value.pointsSystem;
    }
    await service.update!(this.deps, {
      ...scope,
      item: { id: existing.id, ...this.translate(resource, patch) },
    });
  }

  private async remove(item: Item): Promise<void> {
    const service = RESOURCES[item.resource]!;
    const scope: Scope = item.system ? { systemId: this.systemId(item.system) } : {};
    await service.remove!(this.deps, { ...scope, id: item.id! });
  }

  // ---------------------------------------------------------------- consequences

  private warn(change: PlanChange, existing: Item | undefined, desired: Item | undefined): void {
    const add = (message: string) =>
      this.issues.push({ severity: 'warning', message, resource: change.resource, key: change.key });
    const f = change.fields ?? {};
    const now = existing?.value;
    switch (change.resource) {
      case 'leaderboard':
        if (change.action === 'delete') add('Deleting a leaderboard removes its runs and standings');
        else if (
          desired?.value.status === 'active' &&
          (change.action === 'create' || now?.status === 'inactive')
        )
          add(
            'Activating a leaderboard fixes its ranking rule (rankBy, metric, points system, breakdown, runs): it cannot change once the leaderboard has runs',
          );
        break;
      case 'metric':
        if (change.action === 'update' && ('unitType' in f || 'units' in f) && this.metricInUse(change.key))
          add(
            'The metric is in use: the new units show everywhere it is used, past values are not converted',
          );
        break;
      case 'points trigger':
        if (change.action === 'update') {
          if (f.status?.after === 'active')
            add('Activating a trigger resets its running totals and time anchors; it awards from now on');
          else add('A trigger change affects future awards only; past awards keep their points');
        }
        break;
      case 'achievement': {
        const requirement = Object.keys(f).some(
          (k) => !['name', 'description', 'badge', 'status', 'key'].includes(k),
        );
        const active = desired?.value.status === 'active';
        if (active && (change.action === 'create' || now?.status !== 'active' || requirement))
          add('Users who already meet the requirement are completed in the background (backdating)');
        if (change.action === 'delete') add('Deleting an achievement removes its completions');
        break;
      }
      case 'points system':
        if (change.action === 'delete')
          add("Deleting a points system removes its triggers, levels, boosts and users' totals");
        else if ('maxPoints' in f)
          add('A new maxPoints caps future awards only; existing totals are not reduced');
        break;
      case 'points level':
        add("Level changes re-evaluate users' levels silently (no webhooks)");
        break;
      case 'streak settings':
        if ('enabled' in f || 'frequency' in f)
          add("Enabling, disabling or a new frequency discards or recomputes every user's current streak");
        break;
      case 'webhook endpoint':
        if (change.action === 'create') add('A new signing secret is generated; apply answers it once');
        break;
      default:
        break;
    }
  }

  private metricInUse(key: string): boolean {
    const id = this.snap.metricsByKey.get(key)?.id;
    if (!id) return false;
    const s = this.snap;
    return (
      s.streak.conditions.some((c) => c.metricId === id) ||
      s.achievements.some((a) => a.metricId === id) ||
      s.systems.some((p) => p.triggers.some((t) => t.metricId === id)) ||
      s.leaderboards.some((b) => b.metricId === id)
    );
  }
}

/** The document's own items by identity (to see fields the canonical form drops). */
function rawItems(doc: ConfigDocument): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  const items = itemsOf(doc);
  const raws: unknown[] = [
    ...(doc.attributes ?? []),
    ...(doc.metrics ?? []),
    ...(doc.achievements ?? []),
    ...(doc.streak ? [doc.streak] : []),
    ...(doc.pointsSystems ?? []).flatMap((p) => [
      p,
      ...(p.triggers ?? []),
      ...(p.levels ?? []),
      ...(p.boosts ?? []),
    ]),
    ...(doc.leaderboards ?? []),
    ...(doc.webhooks ?? []),
  ];
  for (const [i, item] of items.entries()) out.set(itemId(item), raws[i] as Record<string, unknown>);
  return out;
}

/** Achievements ordered so that prerequisites (by key) come before the achievements naming them. */
function prerequisitesFirst<T extends { item: Item }>(list: T[]): T[] {
  const byKey = new Map(list.map((w) => [w.item.key, w]));
  const out: T[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (w: T) => {
    const k = w.item.key;
    if (state.get(k)) return; // done, or a cycle (the service reports it)
    state.set(k, 'visiting');
    for (const p of (w.item.value.achievements as string[] | undefined) ?? []) {
      const dep = byKey.get(p);
      if (dep) visit(dep);
    }
    state.set(k, 'done');
    out.push(w);
  };
  for (const w of list) visit(w);
  return out;
}
