import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type ClientContext, Command, type Redis, type Result } from 'ioredis';
import { isCluster, type RedisClient } from './client';

const LUA_DIR = fileURLToPath(new URL('../../lua', import.meta.url));

/**
 * The typed registry of lua/ (top-level files; lua/lib/ holds shared code inlined with
 * `--!include lib/<name>.lua`). Every script takes a variable number of keys, so each call passes
 * the key count first; ioredis sends EVALSHA and falls back to EVAL after a script flush.
 */
export const SCRIPT_NAMES = [
  'ackOutboxes',
  'ackStream',
  'ackWithGlobals',
  'applyUserOp',
  'batchProgress',
  'claimBatch',
  'claimDue',
  'commitUserOp',
  'dropDrainedStream',
  'dropIdleConsumers',
  'migrateIdem',
  'migrateUser',
  'rateLimit',
  'readOutboxes',
  'readWindow',
  'recomputeStreak',
  'updateBoard',
  'updateGlobals',
] as const;

export type ScriptName = (typeof SCRIPT_NAMES)[number];

/** lua/readOutboxes.lua's reply: per stream read, [stream, entries]; then flat failed stream, error pairs. */
type OutboxReads = [Array<[string, Array<[string, string[]]>]>, string[]];

/** lua/commitUserOp.lua's reply: "read": [user hash (flat), history | null, '1' | '0']; "commit": the record, or 'STALE'. */
type CommitUserOpReply = string | [string[], string | null, string];

/** lua/claimBatch.lua's reply: owner token, done, items JSON, mk ('1': markers in the batch's hash). */
type ClaimedBatch = [owner: number, done: string, items: string, mk: string];

declare module 'ioredis' {
  interface RedisCommander<Context extends ClientContext> {
    /** lua/ackOutboxes.lua: the streams it could not acknowledge and their errors, flat. */
    ackOutboxes(numKeys: number, ...keysAndArgs: string[]): Result<string[], Context>;
    ackStream(numKeys: number, ...keysAndArgs: string[]): Result<number, Context>;
    ackWithGlobals(numKeys: number, ...keysAndArgs: string[]): Result<number, Context>;
    /** One op: its reply; "__multi": one reply per op (src/redis/user-script.ts oneReply / replyList). */
    applyUserOp(numKeys: number, ...keysAndArgs: string[]): Result<string | string[], Context>;
    batchProgress(numKeys: number, ...keysAndArgs: string[]): Result<number, Context>;
    claimBatch(numKeys: number, ...keysAndArgs: string[]): Result<ClaimedBatch | null, Context>;
    claimDue(numKeys: number, ...keysAndArgs: string[]): Result<string[], Context>;
    commitUserOp(numKeys: number, ...keysAndArgs: string[]): Result<CommitUserOpReply, Context>;
    dropDrainedStream(numKeys: number, ...keysAndArgs: string[]): Result<number, Context>;
    dropIdleConsumers(numKeys: number, ...keysAndArgs: string[]): Result<number, Context>;
    migrateIdem(numKeys: number, ...keysAndArgs: string[]): Result<number, Context>;
    migrateUser(numKeys: number, ...keysAndArgs: string[]): Result<number, Context>;
    /** One move: its reply JSON; several (packed, src/redis/board-moves.ts): one JSON array of replies. */
    updateBoard(numKeys: number, ...keysAndArgs: string[]): Result<string, Context>;
    updateGlobals(numKeys: number, ...keysAndArgs: string[]): Result<number, Context>;
    readOutboxes(numKeys: number, ...keysAndArgs: string[]): Result<OutboxReads, Context>;
    readWindow(numKeys: number, ...keysAndArgs: string[]): Result<Array<string | number | null>, Context>;
    recomputeStreak(numKeys: number, ...keysAndArgs: string[]): Result<number, Context>;
    rateLimit(numKeys: number, ...keysAndArgs: string[]): Result<[number, number], Context>;
  }
}

const INCLUDE = /^--!include (lib\/[A-Za-z0-9_-]+\.lua)$/gm;

/**
 * The script source with its includes inlined, recursively; a file already inlined is not inlined
 * again (its locals are in scope), so an include may name what it needs.
 */
export function scriptSource(name: string): string {
  const seen = new Set<string>();
  const inline = (src: string): string =>
    src.replace(INCLUDE, (_m, file: string) => {
      if (seen.has(file)) return '';
      seen.add(file);
      return inline(readFileSync(`${LUA_DIR}/${file}`, 'utf8'));
    });
  return inline(readFileSync(`${LUA_DIR}/${name}.lua`, 'utf8'));
}

/** The lib files a script includes, directly or through another include. */
export function scriptIncludes(name: string): string[] {
  const seen: string[] = [];
  const walk = (file: string) => {
    for (const m of readFileSync(`${LUA_DIR}/${file}`, 'utf8').matchAll(INCLUDE)) {
      if (seen.includes(m[1]!)) continue;
      seen.push(m[1]!);
      walk(m[1]!);
    }
  };
  walk(`${name}.lua`);
  return seen;
}

/** Names of the top-level .lua files on disk (a test checks they equal SCRIPT_NAMES). */
export function luaFiles(): string[] {
  return readdirSync(LUA_DIR)
    .filter((f) => f.endsWith('.lua'))
    .map((f) => f.slice(0, -4))
    .sort();
}

/**
 * Scripts served as a Redis Function instead (FUNCTION LOAD once per Redis, FCALL per call): their
 * code is loaded once rather than run again on every call, and what they keep in library locals
 * (lua/applyUserOp.lua's decoded plans) outlives the call. The file ends with `return run(KEYS, ARGV)`
 * (so it still runs as a plain script in tests), which the library replaces with the registration of
 * its `served` function (run, with what only the Functions engine's Lua state should have).
 * lua/readOutboxes.lua and lua/ackOutboxes.lua are for their allow-cross-slot-keys flag, which only a
 * Function can have.
 */
const FUNCTION_SCRIPTS: ReadonlySet<ScriptName> = new Set([
  'ackOutboxes',
  'applyUserOp',
  'commitUserOp',
  'readOutboxes',
]);

const RUN_LINE = /^return run\(KEYS, ARGV\)\s*$/m;

/**
 * A function script's library: its name (versioned by its code), its function, its source, and the
 * line of that source that registers `served` (which the bench's instrumented copies replace).
 */
export function functionLibrary(name: ScriptName): {
  library: string;
  fn: string;
  code: string;
  registration: string;
} {
  const body = scriptSource(name);
  if (!RUN_LINE.test(body)) throw new Error(`lua/${name}.lua: no "return run(KEYS, ARGV)" line to register`);
  // allow-cross-slot-keys: on a Redis Cluster a call may reach keys of other slots that the master it
  // runs on serves (lua/applyUserOp.lua "__multi_node"); a key this master does not serve still fails.
  const register = (lib: string) =>
    `redis.register_function{function_name='${lib}', callback=served, flags={'allow-cross-slot-keys'}}`;
  // The version covers the registration too, so a change of flags loads a library of its own.
  const version = createHash('sha1').update(body).update(register('')).digest('hex').slice(0, 16);
  const library = `laurel_${name}_${version}`;
  const registration = register(library);
  const code = `#!lua name=${library}\n${body.replace(RUN_LINE, registration)}`;
  return { library, fn: library, code, registration };
}

/** Replies as strings, as ioredis's own command methods ask for them. */
const FCALL_OPTIONS = { replyEncoding: 'utf8' as const };

/**
 * An FCALL command with its arguments set after construction: ioredis's Command copies its arguments
 * with `Array.prototype.flat()`, which on Node 20 costs about 140 ns an argument (a call gathering 16
 * ops carries a few hundred). Constructed empty, the arguments are then the caller's strings as they
 * are (every one a string: the constructor's conversion of other types ran on none).
 */
function fcallCommand(fn: string, numKeys: number, keysAndArgs: string[]): Command {
  const command = new Command('fcall', [], FCALL_OPTIONS);
  command.args = [fn, String(numKeys), ...keysAndArgs];
  return command;
}

/** The error of an FCALL whose function this Redis does not have (restarted, flushed, new node). */
const FUNCTION_MISSING = /Function not found/;
const MISSING_ATTEMPTS = 4;

/**
 * Defines `name` on the client as an FCALL of its library's function, loading the library (on every
 * master of a Cluster) when Redis answers that it does not have it, then calling again: the missing
 * function ran nothing, so the call is simply repeated. Before its first call a process removes the
 * other versions of the library (left by earlier code).
 */
function defineFunction(client: RedisClient, name: ScriptName): void {
  const { library, fn, code } = functionLibrary(name);
  const nodes = (): Redis[] => (isCluster(client) ? client.nodes('master') : [client]);
  let loading: Promise<void> | null = null;
  let pruning: Promise<void> | null = null;
  let pruned = false;
  const pruneOn = async (node: Redis) => {
    const listed = (await node.function('LIST', 'LIBRARYNAME', `laurel_${name}_*`)) as unknown[];
    for (const entry of listed) {
      const other = Array.isArray(entry) ? entry[entry.indexOf('library_name') + 1] : undefined;
      if (typeof other === 'string' && other !== library)
        await node.function('DELETE', other).catch(() => {});
    }
  };
  // Once per process, before its first call (whether or not it loads the library: another process
  // of the same code may have loaded it first). A failed pass is not repeated (no call pays for it
  // again): older versions then stay until a later process removes them; they only take memory.
  const prune = () => {
    const done = () => {
      pruned = true;
    };
    pruning ??= Promise.all(nodes().map(pruneOn)).then(done, done);
    return pruning;
  };
  const load = () => {
    loading ??= Promise.all(nodes().map((node) => node.function('LOAD', 'REPLACE', code)))
      .then(() => {})
      .finally(() => {
        loading = null;
      });
    return loading;
  };
  // A call that finds the function missing loads it and calls again; a few times, since Redis may
  // lose it again between the load and the call (a second flush or restart while calls are in flight).
  const call = async (numKeys: number, ...keysAndArgs: string[]) => {
    if (!pruned) await prune();
    for (let attempt = 1; ; attempt++) {
      try {
        return await client.sendCommand(fcallCommand(fn, numKeys, keysAndArgs));
      } catch (err) {
        if (attempt === MISSING_ATTEMPTS || !FUNCTION_MISSING.test((err as Error)?.message)) throw err;
        await load();
      }
    }
  };
  Object.defineProperty(client, name, { value: call, writable: true, configurable: true });
}

export function registerScripts(client: RedisClient): void {
  for (const name of SCRIPT_NAMES) {
    if (FUNCTION_SCRIPTS.has(name)) defineFunction(client, name);
    else client.defineCommand(name, { lua: scriptSource(name) });
  }
}
