import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ClientContext, Result } from 'ioredis';
import type { RedisClient } from './client';

const LUA_DIR = fileURLToPath(new URL('../../lua', import.meta.url));

/**
 * The typed registry of lua/ (top-level files; lua/lib/ holds shared code inlined with
 * `--!include lib/<name>.lua`). Every script takes a variable number of keys, so each call passes
 * the key count first; ioredis sends EVALSHA and falls back to EVAL after a script flush.
 */
export const SCRIPT_NAMES = [
  'ackWithGlobals',
  'applyUserOp',
  'batchProgress',
  'claimBatch',
  'claimDue',
  'migrateIdem',
  'migrateUser',
  'rateLimit',
  'readWindow',
  'recomputeStreak',
  'updateBoard',
  'updateGlobals',
] as const;

export type ScriptName = (typeof SCRIPT_NAMES)[number];

declare module 'ioredis' {
  interface RedisCommander<Context extends ClientContext> {
    ackWithGlobals(numKeys: number, ...keysAndArgs: string[]): Result<number, Context>;
    /** One op: its reply; "__multi": one reply per op (src/redis/user-script.ts oneReply / replyList). */
    applyUserOp(numKeys: number, ...keysAndArgs: string[]): Result<string | string[], Context>;
    batchProgress(numKeys: number, ...keysAndArgs: string[]): Result<number, Context>;
    claimBatch(numKeys: number, ...keysAndArgs: string[]): Result<[number, string, string] | null, Context>;
    claimDue(numKeys: number, ...keysAndArgs: string[]): Result<string[], Context>;
    migrateIdem(numKeys: number, ...keysAndArgs: string[]): Result<number, Context>;
    migrateUser(numKeys: number, ...keysAndArgs: string[]): Result<number, Context>;
    updateBoard(numKeys: number, ...keysAndArgs: string[]): Result<string, Context>;
    updateGlobals(numKeys: number, ...keysAndArgs: string[]): Result<number, Context>;
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

export function registerScripts(client: RedisClient): void {
  for (const name of SCRIPT_NAMES) client.defineCommand(name, { lua: scriptSource(name) });
}
