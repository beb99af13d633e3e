import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { RedisClient } from './client';

const LUA_DIR = fileURLToPath(new URL('../../lua', import.meta.url));

/**
 * The typed registry of lua/. Every script takes a variable number of keys, so each call passes
 * `numKeys` first; ioredis sends EVALSHA and falls back to EVAL once after a script flush.
 */
export const SCRIPT_NAMES = [] as const;

export type ScriptName = (typeof SCRIPT_NAMES)[number];

export function scriptSource(name: string): string {
  return readFileSync(`${LUA_DIR}/${name}.lua`, 'utf8');
}

/** Names of the .lua files on disk (a test checks they equal SCRIPT_NAMES). */
export function luaFiles(): string[] {
  return readdirSync(LUA_DIR)
    .filter((f) => f.endsWith('.lua'))
    .map((f) => f.slice(0, -4))
    .sort();
}

export function registerScripts(client: RedisClient): void {
  for (const name of SCRIPT_NAMES as readonly string[]) {
    client.defineCommand(name, { lua: scriptSource(name) });
  }
}
