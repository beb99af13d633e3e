/**
 * One user's state is one Redis hash (`keys.user(id).hash`): the profile's fields as they are (id,
 * created, updated, tz, email, name, sub, dt, seq, a:<attribute>, p:<notification type>; sub, dt and
 * updated only once they differ from their defaults: compactProfile) and every
 * other part under a one-letter prefix. One HGETALL reads a user, one HSET writes an op's changes
 * (lua/lib/user.lua is the Lua side of this layout). Beside it, in the same slot, live only what
 * cannot be a field: the streak period history (a string), the recent awards (lists), the
 * idempotency buckets (expiring) and reply markers (expiring).
 */

/**
 * A profile without the fields that hold their defaults, as the user script stores a new user's
 * (lua/lib/profile.lua): sub '1' (subscribed), dt '[]' (no device tokens), updated equal to created.
 * Readers take an absent field as its default (src/wire/users.ts, the history writer's userRow).
 */
export function compactProfile(p: Record<string, string>): Record<string, string> {
  const out = { ...p };
  if (out.sub === '1') delete out.sub;
  if (out.dt === '[]') delete out.dt;
  if (out.updated !== undefined && out.updated === out.created) delete out.updated;
  return out;
}

/** Prefix of each part's fields in the user hash (the profile's fields have none). */
export const USER_PARTS = {
  /** metricId -> total in millionths. */
  metrics: 'm:',
  /** Running counters: af:<achievementId>, mtT:/mtH:<triggerId>:<epoch>, tt:<triggerId>, fz. */
  counters: 'c:',
  /** achievementId -> completion "<at ms>|<completion id>" (decodeCompletion). */
  achievements: 'd:',
  /** systemId -> points total. */
  points: 'n:',
  /**
   * Streak fields: the scalar ones (STREAK_PACKS) packed in `s:_` and `s:~`, and the period sums
   * s:<metricId>, freezeInit and pauses as fields of their own. splitUserHash shows the scalar ones by
   * name, as a hash of an earlier version held them.
   */
  streak: 's:',
  /** boardId -> "<run>|<value>" of the user's latest run, boardId~ -> the run before it. */
  boards: 'b:',
  /**
   * boardId -> seq of an op whose board move the API applied itself: written by earlier versions as a
   * hint for the history writer's repair pass, which now reads the board's member entry instead
   * (unappliedBoardMoves). Still read as a part, so such fields never show as profile fields.
   */
  applied: 'r:',
} as const;

export type UserPart = keyof typeof USER_PARTS;

/** A user hash split into its parts, each without its prefix. */
export type UserHashParts = { profile: Record<string, string> } & Record<UserPart, Record<string, string>>;

const PART_OF = new Map<string, UserPart>(
  (Object.entries(USER_PARTS) as Array<[UserPart, string]>).map(([part, prefix]) => [prefix[0]!, part]),
);

/** The part a field belongs to, or undefined for a profile field. */
function partOf(field: string): UserPart | undefined {
  return field.charCodeAt(1) === 58 /* ':' */ ? PART_OF.get(field[0]!) : undefined;
}

/**
 * The streak's scalar fields, stored in two fields of the user hash (`s:_` and `s:~`; lua/lib/streak.lua
 * writes them): each holds its fields' values joined by '|' in this order, '' for one not set. Two
 * fields rather than eleven keep a new user's HSET at 14 fields on the bench's configuration (23
 * before) and an op's streak write at two at most; two rather than one keep each value within the 64
 * bytes of Redis's compact hash encoding. A hash of an earlier version holds them as fields of their
 * own, which readers take as they are (the user script packs them at the user's next op).
 */
export const STREAK_PACKS = {
  _: ['epoch', 'length', 'freezes', 'longest', 'curIdx', 'curMet', 'lastMet', 'started'],
  '~': ['longestAt', 'lengthAt', 'metAt'],
} as const satisfies Record<string, readonly string[]>;

const PACKED_FIELDS = new Set<string>(Object.values(STREAK_PACKS).flat());

/**
 * Spreads the packed fields over the part's named fields ('' is a field not set), in place. Where a
 * hash holds both (fields of their own that a process of an earlier version wrote since), the packed
 * ones win, as in lua/lib/streak.lua streakUnpack.
 */
function unpackStreak(streak: Record<string, string>): void {
  for (const [name, fields] of Object.entries(STREAK_PACKS)) {
    const packed = streak[name];
    if (packed === undefined) continue;
    delete streak[name];
    // Fewer values than fields (a damaged value): none is read, as the Lua pattern matches nothing.
    const values = packed.split('|');
    if (values.length < fields.length) values.length = 0;
    for (let i = 0; i < fields.length; i++) {
      // The last value is the rest of the string, as the Lua pattern reads it.
      const v = i === fields.length - 1 ? values.slice(i).join('|') : values[i];
      if (v !== undefined && v !== '') streak[fields[i]!] = v;
      else delete streak[fields[i]!];
    }
  }
}

/** The streak part as stored: the scalar fields packed (a pack when any of its fields is set), the others as they are. */
function packStreak(streak: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [f, v] of Object.entries(streak)) if (!PACKED_FIELDS.has(f)) out[f] = v;
  for (const [name, fields] of Object.entries(STREAK_PACKS)) {
    if (fields.some((f) => streak[f] !== undefined)) out[name] = fields.map((f) => streak[f] ?? '').join('|');
  }
  return out;
}

/**
 * A streak part as it reads back once stored (packed, then unpacked): a scalar field set to '' (a
 * streak without a start) reads as not set. What to compare two parts by when either may hold ''.
 */
export function storedStreak(streak: Record<string, string>): Record<string, string> {
  const out = packStreak(streak);
  unpackStreak(out);
  return out;
}

/** A profile's attribute values by key (its a:<key> fields; every stored key, callers filter by configuration). */
export function profileAttributes(profile: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [field, value] of Object.entries(profile))
    if (field.startsWith('a:')) out[field.slice(2)] = value;
  return out;
}

/** Splits a user hash (HGETALL) into the profile and the other parts. */
export function splitUserHash(raw: Record<string, string>): UserHashParts {
  const out: UserHashParts = {
    profile: {},
    metrics: {},
    counters: {},
    achievements: {},
    points: {},
    streak: {},
    boards: {},
    applied: {},
  };
  for (const [field, value] of Object.entries(raw)) {
    const part = partOf(field);
    if (part) out[part][field.slice(2)] = value;
    else out.profile[field] = value;
  }
  unpackStreak(out.streak);
  return out;
}

/** The flat user hash of the given parts, as the user script stores it (inverse of splitUserHash). */
export function joinUserHash(parts: Partial<UserHashParts>): Record<string, string> {
  const out: Record<string, string> = { ...parts.profile };
  for (const part of Object.keys(USER_PARTS) as UserPart[]) {
    const fields = part === 'streak' ? packStreak(parts.streak ?? {}) : (parts[part] ?? {});
    for (const [field, value] of Object.entries(fields)) out[USER_PARTS[part] + field] = value;
  }
  return out;
}

/**
 * A stored completion: "<at ms>|<completion id>" (50 bytes for a UUID, so the user hash stays within
 * Redis's compact listpack encoding, whose values are at most 64 bytes by default), or the JSON
 * {"at":…,"cid":…} of layout 1 (65 bytes).
 */
export function decodeCompletion(raw: string | undefined): { cid: string; at: number } | null {
  if (!raw) return null;
  if (raw.startsWith('{')) return JSON.parse(raw) as { cid: string; at: number };
  const bar = raw.indexOf('|');
  return { at: Number(raw.slice(0, bar)), cid: raw.slice(bar + 1) };
}

/** A points award as the recent-awards lists keep it. */
export interface RecentAward {
  id: string;
  awarded: number;
  total: number;
  trigger: string;
  boosts: string[];
  date: number;
}

/**
 * One entry of a user's recent-awards list (lua/lib/points.lua awardEntry, lua/rebuild/encode.lua):
 * "<total>|<awarded>|<award id>|<date ms>|<trigger id>|<boost ids, comma-separated>", or the JSON
 * object lists held before entries were compact.
 */
export function decodeAward(raw: string): RecentAward {
  if (raw.startsWith('{')) {
    const a = JSON.parse(raw) as { boosts?: unknown };
    // cjson wrote an empty list as {}.
    return { ...(a as RecentAward), boosts: Array.isArray(a.boosts) ? a.boosts : [] };
  }
  const [total, awarded, id, date, trigger, boosts] = raw.split('|');
  return {
    id: id!,
    awarded: Number(awarded),
    total: Number(total),
    trigger: trigger!,
    boosts: boosts ? boosts.split(',') : [],
    date: Number(date),
  };
}

/** The field of one part's entry in the user hash: userField('metrics', id) = "m:<id>". */
export const userField = (part: UserPart, name: string): string => USER_PARTS[part] + name;
