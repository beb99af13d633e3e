/**
 * The contract of lua/applyUserOp.lua, in one place: what the caller sends (input), what the script
 * answers (the op's record, also the outbox entry the history writer reads), its error codes, and the
 * wire objects written beside a record. Replies and records are parsed with the zod schemas below on
 * the way out of Redis; nothing else reads the script's JSON.
 */
import { z } from 'zod';

/** An attribute filter as the script sees it: [attribute key, value]. */
export type LuaFilter = [string, string];

/** ARGV[2]: one op's request and time context (built by src/services/user-op.ts). */
export interface UserScriptInput {
  op: (typeof USER_OPS)[number];
  now: number;
  eventId: string;
  user: {
    id: string;
    email?: string | undefined;
    name?: string | undefined;
    tz?: string | undefined;
    /** Device tokens as a JSON array string. */
    dt?: string | undefined;
    sub?: boolean | undefined;
    attrs?: Record<string, string> | undefined;
    /** Notification preferences: type -> JSON array string of channels. */
    prefs?: Record<string, string> | undefined;
  };
  /** The zone the caller evaluated dates in; the script answers err TZ when it is not the user's. */
  assumedTz: string;
  /** The stored zone the caller assumed (checked when the request changes it). */
  prevTz: string;
  /** [first, last] day index of local dates a change of zone to the east skipped. */
  skip?: [number, number] | undefined;
  localDate: string;
  periodIdx: number;
  /** An event's value in millionths, as a string. */
  value?: string | undefined;
  eattrs?: Record<string, string> | undefined;
  /**
   * Idempotency (src/engine/idempotency.ts): field, raw key, whether the event id is the derived one,
   * window (ms; 0 = forever), the bucket's expiry, KEYS indexes of older buckets.
   */
  idem?:
    | {
        f: string;
        k: string;
        d: boolean | undefined;
        win: number;
        exp: number | undefined;
        prevKi: number | undefined;
        oldKi: number | undefined;
      }
    | undefined;
  mustExist?: boolean | undefined;
  grant?: string[] | undefined;
  at?: number | undefined;
  count?: number | undefined;
  slot?: number | undefined;
  fromIdx?: number | undefined;
  /** How long the reply marker is kept (ms; default 10 s). */
  markMs?: number | undefined;
  /** The reply marker is a field of KEYS[4], a hash (a batch item's on a single Redis), named by eventId. */
  mf?: true | undefined;
  /** A replay (src/simulations/): no outbox entry. */
  noHistory?: boolean | undefined;
}

/**
 * ARGV[4]: what an op shares with the other ops of its plan, day and boards (one string for all of
 * them: the script keeps the decoded context by its JSON, as it keeps plans).
 */
export interface UserScriptContext {
  /** Active boosts per system id. */
  boosts: Record<string, Array<{ id: string; num: number; den: number; r: string; uf: LuaFilter[] }>>;
  /** The board runs the op may move (the values are the script's; the moves the caller's or fuse's). */
  boards: Array<{ id: string; run: string; kind: string; ref: string }>;
  /** Boards (boards[b], 1-based) moved by the script itself: KEYS[ki .. ki + kn - 1]. */
  fuse?: Array<{ b: number; ki: number; kn: number; max: number }> | undefined;
}

// cjson encodes an empty Lua table as {}: lists and maps are read through these.
const list = <T extends z.ZodType>(item: T) =>
  z.preprocess((v) => (Array.isArray(v) ? v : []), z.array(item));
const stringMap = z.preprocess(
  (v) => (v && typeof v === 'object' && !Array.isArray(v) ? v : {}),
  z.record(z.string(), z.string()),
);
/** Flat [field, value, ...] lists of hash fields (sh, cw). */
const flat = list(z.string());
/**
 * An integer of the record: the user script sends its digits (cjson would print a number through
 * snprintf, lua/applyUserOp.lua), records written before and lua/recomputeStreak.lua's a number.
 */
const int = z.union([
  z.number(),
  z
    .string()
    .regex(/^-?\d+$/)
    .transform(Number),
]);

export const awardSchema = z.object({
  id: z.string(),
  awarded: int,
  total: int,
  trigger: z.string(),
  boosts: list(z.string()),
  date: int,
});
/** One points award as the record carries it (the recent-awards lists hold its fields as one delimited entry: lib/points.lua awardEntry). */
export type LuaAward = z.infer<typeof awardSchema>;

const completionSchema = z.object({ id: z.string(), cid: z.string(), at: int });

/** A resolved streak period (lua/recomputeStreak.lua writes met periods without the two flags). */
const periodSchema = z.object({
  idx: int,
  length: int,
  freeze: z.boolean().default(false),
  pause: z.boolean().default(false),
});

const streakSchema = z.object({
  length: int,
  started: z.string().optional(),
  lastMet: int.optional(),
  freezes: int,
  extended: z.boolean(),
  /** The length changed (extension, break, restore): the streak rankings follow. */
  changed: z.boolean().optional(),
  lost: int.optional(),
  periods: list(periodSchema).optional(),
  /** The user's pauses as [first day index, last day index] (absent when none). */
  pauses: list(z.tuple([z.number(), z.number()])).optional(),
});
export type LuaStreak = z.infer<typeof streakSchema>;

/** A level's position in plan.systems[i].lv (1-based), or false for none. */
const levelRef = z.union([z.number(), z.literal(false)]);

const pointsSchema = z.object({
  sys: z.string(),
  total: int,
  added: int,
  awards: list(awardSchema),
  /** The level before and after the op (positions in the plan's level list; false: none). */
  lb: levelRef.optional(),
  la: levelRef.optional(),
});

const boardSchema = z.object({
  id: z.string(),
  run: z.string(),
  value: z.string(),
  ap: z.boolean().optional(),
});

/** A board move the script applied itself (lib/board.lua's reply, with the board id). */
const moveSchema = z.object({
  id: z.string(),
  err: z.string().optional(),
  group: z.string().optional(),
  prevRank: z.number().optional(),
  rank: z.number().optional(),
  prevValue: z.string().optional(),
  value: z.string().optional(),
  threshold: z.string().optional(),
  evicted: z.string().optional(),
  stale: z.boolean().optional(),
});
export type LuaMove = z.infer<typeof moveSchema>;

const USER_OPS = ['event', 'complete', 'upsert', 'grant', 'backdate', 'freeze', 'restore'] as const;
/** Ops of outbox records: the user script's, and lua/recomputeStreak.lua's (a streak recomputed). */
const RECORD_OPS = [...USER_OPS, 'recompute'] as const;

/** The record of one committed op: the script's reply, its reply marker and its outbox entry (field r). */
const recordSchema = z.object({
  op: z.enum(RECORD_OPS),
  /** The op's id (an event's event id). */
  id: z.string(),
  user: z.string(),
  now: int,
  tz: z.string(),
  date: z.string(),
  seq: int,
  created: z.boolean(),
  metric: z.string().optional(),
  value: z.string().optional(),
  /** The metric's total after the op (millionths), as a string. */
  total: z.string().optional(),
  eattrs: stringMap.optional(),
  /** An event's idempotency key. */
  ik: z.string().optional(),
  /** "<metricId>|<key>": the key in records written before compact idempotency entries. */
  idem: z.string().optional(),
  completions: list(completionSchema),
  points: list(pointsSchema).optional(),
  streak: streakSchema,
  boards: list(boardSchema),
  battrs: stringMap.optional(),
  freq: z.enum(['daily', 'weekly', 'monthly']).optional(),
  granted: z.number().optional(),
  restore: z
    .object({
      from: z.number().optional(),
      to: z.number().optional(),
      issue: z.enum(['none', 'max']).optional(),
    })
    .optional(),
  slot: z.number().optional(),
  moves: list(moveSchema).optional(),
  /** An API completion that had already happened: as stored (src/redis/user-hash.ts decodeCompletion). */
  already: z.string().optional(),
  /** The stored profile (replies of ops other than events; in the outbox, field x's). */
  profile: stringMap.optional(),
  // Records written before the record was the reply carry the fields of x, and their awards and
  // levels (objects) as separate lists.
  ts: z.string().optional(),
  epoch: z.number().optional(),
  sh: flat.optional(),
  cw: flat.optional(),
  awards: list(z.object({ sys: z.string(), awards: list(awardSchema) })).optional(),
  levels: list(z.object({ sys: z.string(), b: z.any(), a: z.any(), sb: z.any().optional() })).optional(),
});
type UserScriptRecord = z.infer<typeof recordSchema>;

/** Field x of an outbox entry: what only the history writer and rebuild need. */
const extraSchema = z.object({
  /** Commit order: Redis TIME in microseconds, as a decimal string. */
  ts: z.string(),
  /** The streak settings epoch the op ran under. */
  epoch: z.number(),
  /** Streak hash fields as written by the op (flat; period history excluded); counters written. */
  sh: flat.optional(),
  cw: flat.optional(),
  /** The stored profile, when the op changed it. */
  profile: stringMap.optional(),
});

/** replay: the original event's id, '' when it is derived from the key and `at` (its first use, ms). */
const replaySchema = z.object({
  replay: z.string(),
  at: z.string().optional(),
  total: z.string(),
  streak: streakSchema,
});
const errorSchema = z.object({ err: z.string(), tz: z.string().optional(), prevTz: z.string().optional() });

export type UserScriptReply =
  | { kind: 'error'; err: string; tz?: string | undefined; prevTz?: string | undefined }
  | { kind: 'replay'; replay: z.infer<typeof replaySchema> }
  | { kind: 'record'; record: UserScriptRecord };

/** The reply of a call with one op (the script answers a string). */
export function oneReply(raw: string | string[]): string {
  if (typeof raw !== 'string') throw new Error('applyUserOp: expected one reply');
  return raw;
}

/** The replies of a "__multi" call, one per op. */
export function replyList(raw: string | string[]): string[] {
  if (!Array.isArray(raw)) throw new Error('applyUserOp: expected a list of replies');
  return raw;
}

/**
 * Parses one reply of the script (throws on a reply outside the contract). A record, the reply of
 * every committed op, is read as trusted, as the history writer reads the same JSON from the outbox
 * (trustedRecord: checked where it matters, without zod's copy, about 6-10 µs of the API's CPU per
 * event); errors and replays through their schemas.
 */
export function parseReply(raw: string): UserScriptReply {
  const json = JSON.parse(raw) as Record<string, unknown>;
  if ('err' in json) return { kind: 'error', ...errorSchema.parse(json) };
  if ('replay' in json) return { kind: 'replay', replay: replaySchema.parse(json) };
  return { kind: 'record', record: trustedRecord(json) };
}

/** parseReply with the record validated by its zod schema (tests hold the two readings equal). */
export function validatedReply(raw: string): UserScriptReply {
  const json = JSON.parse(raw) as Record<string, unknown>;
  if ('err' in json || 'replay' in json) return parseReply(raw);
  return { kind: 'record', record: recordSchema.parse(json) };
}

/**
 * What a caller that needs no result (a batch item) must still do after a reply, read from the few
 * fields that decide it without building the record: 'done' (a record whose board moves the script
 * made itself: board.ap on every board), 'replayed' (an idempotency replay), or 'full' (an error, or
 * boards left to move: parseReply and the whole handling).
 */
export function quietOutcome(raw: string): 'done' | 'replayed' | 'full' {
  // The short answers of an op in a "__multi" call (lua/applyUserOp.lua).
  if (raw === 'd') return 'done';
  if (raw === 'r') return 'replayed';
  const json = JSON.parse(raw) as { err?: unknown; replay?: unknown; boards?: unknown };
  if (json.err !== undefined) return 'full';
  if (typeof json.replay === 'string') return 'replayed';
  if (!Array.isArray(json.boards)) return 'full';
  for (const b of json.boards as Array<{ ap?: unknown } | null>) if (b?.ap !== true) return 'full';
  return 'done';
}

// ------------------------------------------------------------------------------ wire objects

/** A level as webhooks show it (src/engine/levels.ts levelResponse). */
const wireLevelSchema = z.object({
  id: z.string(),
  key: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  badgeUrl: z.string().nullable(),
  points: z.number(),
});
/** A points system's base fields as webhooks show them (src/engine/levels.ts systemBase). */
const wireSystemSchema = z.object({
  id: z.string(),
  key: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  badgeUrl: z.string().nullable(),
  maxPoints: z.number().nullable(),
});
export type WireLevel = z.infer<typeof wireLevelSchema>;
type WireSystem = z.infer<typeof wireSystemSchema>;

/** A boost's fields as webhooks show them, but its status (src/engine/points-shapes.ts boostFields). */
const wireBoostSchema = z.object({
  id: z.string(),
  name: z.string(),
  start: z.string(),
  end: z.string().nullable(),
  multiplier: z.number(),
  rounding: z.enum(['down', 'up', 'nearest']),
});
/** Trigger objects by id (src/engine/points-shapes.ts triggerShape; their fields vary by type). */
const wireTriggersSchema = z.record(z.string(), z.record(z.string(), z.unknown()));
type WireAwardConfig = {
  t?: z.infer<typeof wireTriggersSchema>;
  bo?: Record<string, z.infer<typeof wireBoostSchema>>;
};

/**
 * ARGV[3]: per system of the plan, its base fields, its levels in the plan's order, the objects of the
 * triggers that can award in the plan (t) and the fields of the boosts the op may apply (bo).
 */
const wireSchema = z.record(
  z.string(),
  z.object({
    sb: wireSystemSchema,
    lv: list(wireLevelSchema),
    t: wireTriggersSchema.optional(),
    bo: z.record(z.string(), wireBoostSchema).optional(),
  }),
);
export type PlanWire = z.infer<typeof wireSchema>;

// ------------------------------------------------------------------------------ outbox records

/** One outbox record as the history writer uses it: awards and levels per system resolved. */
export type OutboxRecord = Omit<UserScriptRecord, 'awards' | 'levels'> & {
  awards: Array<{ sys: string; awards: LuaAward[] }>;
  /**
   * Levels before and after the op per system with awards (or a new user at a level), and the
   * system's base fields, as configured at commit (false: no level). Absent in older records; set by
   * resolveLevels (src/services/wire-snapshots.ts resolveWires) from `points` and the wire objects.
   */
  levels?: Array<
    { sys: string; b: WireLevel | false; a: WireLevel | false; sb?: WireSystem } & WireAwardConfig
  >;
  /** Field w: the id of the op's wire snapshot, or (older records) its JSON. */
  wire?: string;
};

export interface OutboxEntry {
  /** Stream entry id. */
  entryId: string;
  /** The outbox stream it was read from (Keys.outboxes, or a legacy shard stream). */
  stream: string;
  record: OutboxRecord;
}

// Every op of one configuration snapshot carries the same wire string: parsed once.
const wires = new Map<string, PlanWire>();
/** The wire objects of a JSON string (validated; cached per string). */
export function parseWire(raw: string): PlanWire {
  let wire = wires.get(raw);
  if (!wire) {
    if (wires.size >= 64) wires.clear();
    wire = wireSchema.parse(JSON.parse(raw));
    wires.set(raw, wire);
  }
  return wire;
}

/** The record of an outbox entry's fields (r, x, w: see parseRecord), in either reading. */
function recordOf(
  fields: string[],
  read: (raw: string) => UserScriptRecord,
  readExtra: (raw: string) => z.infer<typeof extraSchema>,
): OutboxRecord | null {
  let raw: string | undefined;
  let extraRaw: string | undefined;
  let wireRaw: string | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === 'r') raw = fields[i + 1];
    else if (fields[i] === 'x') extraRaw = fields[i + 1];
    else if (fields[i] === 'w') wireRaw = fields[i + 1];
  }
  if (raw === undefined) return null;
  const parsed = read(raw);
  const points = parsed.points;
  let awards: OutboxRecord['awards'] = parsed.awards ?? [];
  if (points) {
    awards = [];
    for (const p of points) if (p.awards.length > 0) awards.push({ sys: p.sys, awards: p.awards });
  }
  const out: OutboxRecord = Object.assign(parsed, { awards, levels: parsed.levels, wire: wireRaw });
  if (extraRaw !== undefined) {
    const extra = readExtra(extraRaw);
    out.ts = extra.ts;
    out.epoch = extra.epoch;
    if (extra.sh) out.sh = extra.sh;
    if (extra.cw) out.cw = extra.cw;
    // Only a changed profile is news for the users table.
    out.profile = extra.profile;
  }
  return out;
}

/**
 * The record of an outbox entry's fields (r: the record, x: the writer's extras, w: the id of the wire
 * objects at commit), or null. The record is then completed in place (no copy of the parsed object,
 * no delete: the history writer reads every field of every record, so the object keeps one shape).
 * Its levels wait for resolveLevels.
 *
 * The outbox is written only by our own scripts, so its JSON is read as trusted (trustedRecord: the
 * fields the writer keys rows on are checked, and cjson's empty tables are normalised as the schemas
 * do) rather than through the zod schemas, which cost the history writer about a fifth of its CPU.
 * validatedRecord reads the same fields through the schemas (tests hold the two readings equal).
 */
export function parseRecord(fields: string[]): OutboxRecord | null {
  return recordOf(
    fields,
    (raw) => trustedRecord(JSON.parse(raw)),
    (raw) => trustedExtra(JSON.parse(raw)),
  );
}

/** parseRecord, with both parts validated by their zod schemas (throws on a record outside them). */
export function validatedRecord(fields: string[]): OutboxRecord | null {
  return recordOf(
    fields,
    (raw) => recordSchema.parse(JSON.parse(raw)),
    (raw) => extraSchema.parse(JSON.parse(raw)),
  );
}

// ----------------------------------------------------------------- trusted reading of the outbox

const RECORD_OP_SET: ReadonlySet<string> = new Set(RECORD_OPS);
const FREQUENCIES: ReadonlySet<string> = new Set(['daily', 'weekly', 'monthly']);

/** A list as recordSchema's `list` reads it: cjson writes an empty one as {}. */
const listOf = <T>(v: unknown): T[] => (Array.isArray(v) ? (v as T[]) : []);
/** A string map as `stringMap` reads it (a list or a scalar: empty). */
const mapOf = (v: unknown): Record<string, string> =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, string>) : {};

function fail(what: string, v: unknown): never {
  throw new Error(`outbox record: ${what} is ${JSON.stringify(v)}`);
}

/** An integer of the record as `int` reads it: digits become the number ('' is none: NaN). */
const intOf = <T>(v: T): T => (typeof v === 'string' ? ((v === '' ? Number.NaN : Number(v)) as T) : v);

/** Award lists (points[i].awards, legacy awards[i].awards): their integers and boost lists normalised in place. */
function trustedAwards(v: unknown): LuaAward[] {
  const awards = listOf<LuaAward>(v);
  for (const a of awards) {
    a.total = intOf(a.total);
    a.awarded = intOf(a.awarded);
    a.date = intOf(a.date);
    if (typeof a.id !== 'string' || !Number.isInteger(a.total) || !Number.isInteger(a.awarded))
      fail('an award', a);
    a.boosts = listOf(a.boosts);
  }
  return awards;
}

/**
 * A record of our own scripts as recordSchema reads it, without copying: the fields rows are keyed on
 * are checked (a record outside the contract is refused, not guessed at), cjson's empty tables become
 * the lists and maps the schema makes of them, and periods get their default flags. Optional fields
 * the JSON lacks stay absent, as in the schema's output.
 */
function trustedRecord(json: unknown): UserScriptRecord {
  const r = json as Record<string, unknown> & UserScriptRecord;
  if (!r || typeof r !== 'object') fail('the record', r);
  if (!RECORD_OP_SET.has(r.op)) fail('op', r.op);
  if (typeof r.id !== 'string' || typeof r.user !== 'string') fail('id or user', [r.id, r.user]);
  r.now = intOf(r.now);
  r.seq = intOf(r.seq);
  if (!Number.isInteger(r.now) || !Number.isInteger(r.seq)) fail('now or seq', [r.now, r.seq]);
  if (typeof r.tz !== 'string' || typeof r.date !== 'string') fail('tz or date', [r.tz, r.date]);
  if (typeof r.created !== 'boolean') fail('created', r.created);
  if (r.freq !== undefined && !FREQUENCIES.has(r.freq)) fail('freq', r.freq);
  r.completions = listOf(r.completions);
  for (const c of r.completions) c.at = intOf(c.at);
  r.boards = listOf(r.boards);
  if (r.points !== undefined) {
    const points = listOf<NonNullable<UserScriptRecord['points']>[number]>(r.points);
    for (const p of points) {
      p.total = intOf(p.total);
      p.added = intOf(p.added);
      p.awards = trustedAwards(p.awards);
    }
    r.points = points;
  }
  if (r.awards !== undefined) {
    const groups = listOf<{ sys: string; awards: LuaAward[] }>(r.awards);
    for (const g of groups) g.awards = trustedAwards(g.awards);
    r.awards = groups;
  }
  if (r.levels !== undefined) r.levels = listOf(r.levels);
  if (r.moves !== undefined) r.moves = listOf(r.moves);
  if (r.sh !== undefined) r.sh = listOf(r.sh);
  if (r.cw !== undefined) r.cw = listOf(r.cw);
  if (r.eattrs !== undefined) r.eattrs = mapOf(r.eattrs);
  if (r.battrs !== undefined) r.battrs = mapOf(r.battrs);
  if (r.profile !== undefined) r.profile = mapOf(r.profile);
  const s = r.streak;
  if (!s || typeof s !== 'object') fail('streak', s);
  s.length = intOf(s.length);
  s.freezes = intOf(s.freezes);
  if (s.lastMet !== undefined) s.lastMet = intOf(s.lastMet);
  if (s.lost !== undefined) s.lost = intOf(s.lost);
  if (!Number.isInteger(s.length)) fail('streak', s);
  if (s.periods !== undefined) {
    const periods = listOf<NonNullable<LuaStreak['periods']>[number]>(s.periods);
    for (const p of periods) {
      p.idx = intOf(p.idx);
      p.length = intOf(p.length);
      if (p.freeze === undefined) p.freeze = false;
      if (p.pause === undefined) p.pause = false;
    }
    s.periods = periods;
  }
  if (s.pauses !== undefined) s.pauses = listOf(s.pauses);
  return r;
}

/** Field x as extraSchema reads it (see trustedRecord). */
function trustedExtra(json: unknown): z.infer<typeof extraSchema> {
  const x = json as z.infer<typeof extraSchema>;
  if (!x || typeof x !== 'object' || typeof x.ts !== 'string' || typeof x.epoch !== 'number')
    fail('field x', x);
  if (x.sh !== undefined) x.sh = listOf(x.sh);
  if (x.cw !== undefined) x.cw = listOf(x.cw);
  if (x.profile !== undefined) x.profile = mapOf(x.profile);
  return x;
}

/** The level at a position (1-based) of a system's level list, as the script names it, or false for none. */
export const levelAtPosition = (list: WireLevel[] | undefined, ref: number | false | undefined) =>
  (ref && list?.[ref - 1]) || false;

/**
 * A record's levels per system before and after the op, with the objects configured at commit, from
 * its points and `wire` (the wire objects its field w names). Records without points keep theirs.
 */
export function resolveLevels(r: OutboxRecord, wire: PlanWire): void {
  if (!r.points) return;
  // No closure per record: under tsx (esbuild's keepNames) every named function the code creates is
  // named by redefining its `name` property, a slow path.
  const levels: NonNullable<OutboxRecord['levels']> = [];
  for (const p of r.points) {
    const w = wire[p.sys];
    levels.push({
      sys: p.sys,
      b: levelAtPosition(w?.lv, p.lb),
      a: levelAtPosition(w?.lv, p.la),
      ...(w?.sb ? { sb: w.sb } : {}),
      ...(w?.t ? { t: w.t } : {}),
      ...(w?.bo ? { bo: w.bo } : {}),
    });
  }
  r.levels = levels;
  r.points = undefined;
}
