// Runs the Lua rules of lua/lib/*.lua (and excerpts of the top-level scripts) on the real Redis the
// other tests use, so unit and property tests exercise the code the scripts actually inline.
//
// A call is one EVAL of `<prelude> <libs> local INPUT = cjson.decode(ARGV[1]) <body>`, where the body
// returns the value to encode. Two cjson habits matter when reading replies:
// - numbers are printed with 14 significant digits (9007199254740991 comes back as 9.007199254741e+15):
//   bodies return exact numbers through the prelude's N(n), a string the TypeScript side reads with
//   Number();
// - an empty table is encoded as {} (see arr()), and JSON null decodes to cjson.null, not nil: inputs
//   leave optional fields out (JSON.stringify drops undefined) rather than sending null.
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { createRedis, type RedisClient, waitReady } from '../../src/redis/client';
import { scriptSource } from '../../src/redis/scripts';

export const LUA_DIR = fileURLToPath(new URL('../../lua', import.meta.url));

const PRELUDE = `
local function N(n) if n == nil then return nil end return string.format('%.17g', n) end
local function PACK(...) return { n = select('#', ...), ... } end
`;

/** Source of lua/lib/<name>.lua with what it includes inlined (as a script would have it). */
export function luaLib(name: string): string {
  return scriptSource(`lib/${name}`);
}

/** A reply's table as an array: cjson encodes an empty table as {}. */
export function arr<T>(v: T[] | Record<string, never> | undefined | null): T[] {
  return Array.isArray(v) ? v : [];
}

type Scalar = string | number | boolean | null;

export interface LuaHarness {
  redis: RedisClient;
  /** A key prefix unique to this harness, with a hash tag so a script's keys share a slot. */
  prefix: string;
  /**
   * Runs `body` (Lua returning the value to encode) after the sources of `libs` (lua/lib names or
   * Lua source given as `{ source }`), with the decoded `input` as INPUT and `keys` as KEYS.
   */
  run<T = unknown>(
    libs: Array<string | { source: string }>,
    body: string,
    input: unknown,
    keys?: string[],
  ): Promise<T>;
  /** Calls a function of lua/lib/<lib>.lua with arguments; returns its return values (numbers exact). */
  call(lib: string, fn: string, ...args: unknown[]): Promise<Scalar[]>;
  /** Deletes every key a run was given (never a flush or a scan: the server is shared and large). */
  cleanup(): Promise<void>;
  close(): Promise<void>;
}

export async function createLuaHarness(): Promise<LuaHarness> {
  const { redisUrl, clusterNodes } = inject('services');
  const redis = createRedis({ url: redisUrl, clusterNodes });
  await waitReady(redis);
  const prefix = `tlua:{${randomBytes(5).toString('hex')}}:`;
  const used = new Set<string>();
  const sources = (libs: Array<string | { source: string }>) =>
    libs.map((l) => (typeof l === 'string' ? luaLib(l) : l.source)).join('\n');

  const harness: LuaHarness = {
    redis,
    prefix,
    async run<T>(
      libs: Array<string | { source: string }>,
      body: string,
      input: unknown,
      keys: string[] = [],
    ) {
      for (const k of keys) {
        if (!k.startsWith(prefix)) throw new Error(`key ${k} is not under the harness prefix ${prefix}`);
        used.add(k);
      }
      const script = `${PRELUDE}\n${sources(libs)}\nlocal INPUT = cjson.decode(ARGV[1])\nlocal function __main()\n${body}\nend\nreturn cjson.encode({ r = __main() })`;
      const raw = (await redis.eval(script, keys.length, ...keys, JSON.stringify(input ?? null))) as string;
      return (JSON.parse(raw) as { r?: T }).r as T;
    },
    async call(lib, fn, ...args) {
      const body = `
        local out = {}
        local r = PACK(${fn}(unpack(INPUT)))
        for i = 1, r.n do
          local v = r[i]
          if type(v) == 'number' then out[i] = { 'n', N(v) }
          elseif v == nil then out[i] = { 'nil' }
          else out[i] = { type(v), v } end
        end
        return out`;
      const out = await harness.run<Array<[string, Scalar?]>>([lib], body, args);
      return arr(out).map(([t, v]) => (t === 'n' ? Number(v) : t === 'nil' ? null : (v ?? null)));
    },
    async cleanup() {
      // One slot (the prefix's hash tag), so one DEL works on a cluster too.
      if (used.size) await redis.del(...used);
      used.clear();
    },
    async close() {
      await harness.cleanup();
      redis.disconnect();
    },
  };
  return harness;
}
