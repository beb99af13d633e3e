import type { Deps } from '../deps';
import type { z } from '../zod';

// The admin domain's interface to a bulk resource (admin §1.3). Its operations take plain inputs,
// never a Hono Context: the HTTP adapter (src/http/routes/admin/bulk.ts), the dashboard and
// config-as-code extract path, query and body their own way and call the same functions.

/** Where a nested resource lives: its route's path parameters (`{systemId}` of triggers, levels, boosts). */
export interface Scope {
  systemId?: string;
}

/** A list page, with the resource's extra list query parameters (see `listQuery`), each given once. */
export interface ListInput extends Scope {
  limit: number;
  skip: number;
  query?: Readonly<Record<string, string | undefined>>;
}

/** What a bulk resource implements; the HTTP pattern of admin §1.3 is shared by all of them. */
export interface BulkResource<Out> {
  /** Singular name for messages, e.g. "metric". */
  name: string;
  /** Schemas for the OpenAPI document. */
  schemas: { resource: z.ZodType; create: z.ZodType; update: z.ZodType };
  /** Extra list query parameters, documented (e.g. userId). */
  listQuery?: z.ZodObject;
  /** Checks the parent resources named in the path (e.g. `{systemId}` → 404) before anything else. */
  parent?(deps: Deps, scope: Scope): Promise<void>;
  list(deps: Deps, input: ListInput): Promise<Out[]>;
  get(deps: Deps, input: Scope & { id: string }): Promise<Out | null>;
  create?(deps: Deps, input: Scope & { item: unknown }): Promise<Out>;
  update?(deps: Deps, input: Scope & { item: unknown }): Promise<Out>;
  /** Deletes one; throws ItemIssue when it cannot. */
  remove?(deps: Deps, input: Scope & { id: string }): Promise<void>;
  /** Max items of a create array (default 100). */
  maxItems?: number;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string) => UUID_RE.test(s);
