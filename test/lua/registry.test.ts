// The script registry (src/redis/scripts.ts) against lua/ on disk: a script added, renamed or removed
// on one side only, or a broken include, fails here rather than at the first call in production.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { luaFiles, SCRIPT_NAMES, scriptSource } from '../../src/redis/scripts';
import { createLuaHarness, LUA_DIR, type LuaHarness } from './harness';

/** Every .lua file under lua/, as paths relative to it. */
function allLuaFiles(dir = LUA_DIR, rel = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? allLuaFiles(`${dir}/${e.name}`, `${rel}${e.name}/`)
      : e.name.endsWith('.lua')
        ? [`${rel}${e.name}`]
        : [],
  );
}

const INCLUDE_LINE = /^--!include\b.*$/gm;
// The form scriptSource inlines; any other spelling would stay a comment and the script would fail later.
const INCLUDE_FORM = /^--!include (lib\/[A-Za-z0-9_-]+\.lua)$/;

function includesOf(file: string): string[] {
  return (readFileSync(`${LUA_DIR}/${file}`, 'utf8').match(INCLUDE_LINE) ?? []).map((line) => {
    const m = INCLUDE_FORM.exec(line);
    if (!m) throw new Error(`lua/${file}: malformed include ${JSON.stringify(line)}`);
    return m[1]!;
  });
}

let h: LuaHarness;
beforeAll(async () => {
  h = await createLuaHarness();
});
afterAll(async () => {
  await h.close();
});

describe('script registry', () => {
  it('registers every top-level lua/*.lua file and nothing that is not on disk', () => {
    expect([...SCRIPT_NAMES].sort()).toEqual(luaFiles());
  });

  it('declares a typed command for every registered script', () => {
    const src = readFileSync(fileURLToPath(new URL('../../src/redis/scripts.ts', import.meta.url)), 'utf8');
    const declared = [...src.matchAll(/^\s+(\w+)\(numKeys: number/gm)].map((m) => m[1]);
    expect(declared.sort()).toEqual([...SCRIPT_NAMES].sort());
  });

  it('includes only lua/lib files that exist, in the one form the loader inlines', () => {
    for (const file of allLuaFiles()) {
      for (const target of includesOf(file))
        expect(existsSync(`${LUA_DIR}/${target}`), `${file} → ${target}`).toBe(true);
    }
  });

  it('includes every lua/lib file somewhere, and no lib includes itself through others', () => {
    const files = allLuaFiles();
    const libs = files.filter((f) => f.startsWith('lib/'));
    const included = new Set(files.flatMap(includesOf));
    expect(libs.filter((l) => !included.has(l))).toEqual([]);
    const reaches = (from: string, seen = new Set<string>()): Set<string> => {
      for (const next of includesOf(from)) {
        if (seen.has(next)) continue;
        seen.add(next);
        reaches(next, seen);
      }
      return seen;
    };
    for (const lib of libs) expect(reaches(lib).has(lib), lib).toBe(false);
  });

  it('compiles every registered script and the rebuild encoder with their includes inlined', async () => {
    for (const name of [...SCRIPT_NAMES, 'rebuild/encode']) {
      const src = scriptSource(name);
      expect(src, name).not.toMatch(INCLUDE_LINE);
      // SCRIPT LOAD compiles without running; a syntax error is rejected here.
      const sha = (await h.redis.script('LOAD', src)) as string;
      expect(sha, name).toMatch(/^[0-9a-f]{40}$/);
    }
  });
});
