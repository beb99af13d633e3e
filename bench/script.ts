/**
 * What the user script costs Redis, on a Redis of its own (npm run bench:script; bench/README.md).
 *
 * It starts a throwaway redis-server on a free loopback port (under valgrind's callgrind with
 * `--callgrind`), migrates a scratch database, seeds the bench's configuration through the admin API
 * of an in-process server (bench/lib/seed.ts), then calls the user script in process (runUserOp, or
 * runUserOps in multi-op calls of 25 with `--mode batch`: what a batch item costs) for `--events` new
 * users per round, after one warm-up round. Nothing else uses that Redis, so its figures are the
 * script's alone: Redis CPU per event from INFO (noisy on a shared machine), or with `--callgrind`
 * the instructions Redis executed per event, which do not depend on what else the machine is doing
 * (the same code gives the same count to about 0.5 %): the figure to compare two versions of the
 * script by. `--writer` then runs the history writer until the outbox is empty and reports Redis's
 * share of it the same way. `--profile FILE` keeps callgrind's output of the last round
 * (callgrind_annotate FILE shows where the instructions went); `--lua-profile FILE` tallies the
 * script's Lua time by line (bench/README.md). Everything it created is removed.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Cluster, Redis } from 'ioredis';
import postgres from 'postgres';
import { acceptBatch, processBatch } from '../src/services/batch-events';
import { functionLibrary } from '../src/redis/scripts';
import { runUserOp, runUserOps, type UserOp } from '../src/services/user-op';
import { startWorkers } from '../src/workers';
import { freePort } from './lib/processes';
import { connectCluster, outboxStreams, redisCpuSeconds, waitForOutboxDrain } from './lib/redis-stats';
import { seededInProcess } from './lib/in-process';
import { userId, ZONES } from './lib/seed';
import { startRedisCluster } from '../test/helpers/redis-cluster';

interface Options {
  events: number;
  rounds: number;
  mode: 'single' | 'batch' | 'batches';
  callgrind: boolean;
  /** This process (the API's side of the calls) under callgrind instead of Redis. */
  apiCallgrind: boolean;
  writer: boolean;
  profile: string | null;
  /** Where the user script's Lua time went, by line (needs a redis-server whose Functions keep `debug`). */
  luaProfile: string | null;
  /** The measured rounds send their events to the warm-up round's users again (users with state). */
  returning: boolean;
  /** The configuration without its two leaderboards: what the boards' moves cost, by difference. */
  boards: boolean;
  /** On a throwaway 3-master Redis Cluster (single events; Redis CPU summed over the masters). */
  cluster: boolean;
  /**
   * Single events in flight at once (the ops one script call can gather): 50 by default; 1 sends each
   * op in a call of its own, as requests spread evenly at a low rate arrive.
   */
  concurrency: number;
  /**
   * Instead of the user script, the commands it runs replayed with their arguments precomputed, one
   * replay call per script call: what Redis would do per event if the op's evaluation ran elsewhere.
   */
  floor: boolean;
}

function parse(argv: string[]): Options {
  const o: Options = {
    events: 2000,
    rounds: 2,
    mode: 'single',
    callgrind: false,
    apiCallgrind: false,
    writer: false,
    profile: null,
    cluster: false,
    luaProfile: null,
    returning: false,
    boards: true,
    concurrency: 50,
    floor: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--events') o.events = Number(argv[++i]);
    else if (a === '--rounds') o.rounds = Number(argv[++i]);
    else if (a === '--mode') o.mode = argv[++i] as Options['mode'];
    else if (a === '--callgrind') o.callgrind = true;
    else if (a === '--api-callgrind') o.apiCallgrind = true;
    else if (a === '--writer') o.writer = true;
    else if (a === '--profile') o.profile = argv[++i] ?? null;
    else if (a === '--lua-profile') o.luaProfile = argv[++i] ?? null;
    else if (a === '--returning') o.returning = true;
    else if (a === '--no-boards') o.boards = false;
    else if (a === '--cluster') o.cluster = true;
    else if (a === '--concurrency') o.concurrency = Number(argv[++i]);
    else if (a === '--floor') o.floor = true;
    else
      throw new Error(
        `unknown option ${a} (--events N, --rounds N, --mode single|batch|batches, --callgrind, --api-callgrind, --writer, --profile FILE, --lua-profile FILE, --returning, --no-boards, --cluster, --concurrency N, --floor)`,
      );
  }
  if (!(o.events > 0) || !(o.rounds >= 1)) throw new Error('--events must be > 0 and --rounds >= 1');
  if (!Number.isInteger(o.concurrency) || o.concurrency < 1 || o.concurrency > 1000)
    throw new Error('--concurrency must be a whole number in 1..1000');
  if (!['single', 'batch', 'batches'].includes(o.mode)) throw new Error('--mode is single, batch or batches');
  if (o.profile && !o.callgrind) throw new Error('--profile needs --callgrind');
  if (o.cluster && (o.callgrind || o.writer || o.luaProfile || o.mode !== 'single'))
    throw new Error('--cluster measures single events in CPU time or with --api-callgrind only');
  if (o.luaProfile && (o.callgrind || o.apiCallgrind))
    throw new Error(
      '--lua-profile counts Lua instructions by a hook: run it without --callgrind or --api-callgrind',
    );
  if (o.floor && (o.mode !== 'single' || o.cluster || o.writer || o.luaProfile || o.apiCallgrind))
    throw new Error(
      '--floor replays single events on one Redis (without --writer, --lua-profile or --api-callgrind)',
    );
  if (o.apiCallgrind && (o.callgrind || o.writer))
    throw new Error('--api-callgrind measures this process alone (without --callgrind or --writer)');
  return o;
}

/** The newest callgrind dump (cg.out.<n>) in `dir`, and the instructions it counted. */
function lastDump(dir: string): string {
  const dumps = readdirSync(dir)
    .filter((f) => f.startsWith('cg.out.'))
    .sort((a, b) => Number(a.slice(7)) - Number(b.slice(7)));
  return join(dir, dumps.at(-1)!);
}

function dumpTotal(dir: string): number {
  const m = /^(?:totals|summary): (\d+)/m.exec(readFileSync(lastDump(dir), 'utf8'));
  return Number(m?.[1] ?? Number.NaN);
}

/** Set (to callgrind's output folder) in the copy of this script that --api-callgrind runs under valgrind. */
const API_CG_DIR = 'LAUREL_BENCH_API_CALLGRIND';

/**
 * --api-callgrind: runs this script again as `node` under callgrind, instrumentation off until each
 * measured round (startup, seeding and the warm-up run uninstrumented), and passes its exit code on.
 */
async function underCallgrind(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'laurel-bench-api-'));
  try {
    const args = process.argv.slice(2).filter((a) => a !== '--api-callgrind');
    const child = spawn(
      'valgrind',
      [
        '--tool=callgrind',
        '--instr-atstart=no',
        `--callgrind-out-file=${join(dir, 'cg.out')}`,
        process.execPath,
        ...process.execArgv,
        fileURLToPath(import.meta.url),
        ...args,
      ],
      { stdio: ['ignore', 'inherit', 'ignore'], env: { ...process.env, [API_CG_DIR]: dir } },
    );
    return await new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? 1)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** --lua-profile samples the running line once every this many Lua VM instructions. */
const LUA_SAMPLE_EVERY = 7;

/**
 * --lua-profile: the user script's library loaded again under its own name, its function run under a
 * count hook that tallies the line (and the function) running every LUA_SAMPLE_EVERY VM instructions,
 * and a second function that hands the tallies over. Lua only: what C runs for the script (redis.call,
 * cjson) is callgrind's to count. Redis hides `debug` from Functions; this needs a redis-server built
 * with function_lua.c's error-handler chunk keeping it (bench/README.md). Its wrappers bind the
 * script's standard-library upvalues first (lua/applyUserOp.lua bindGlobals): they call pcall and pairs.
 */
function profiledLibrary(): { code: string; lines: string; source: string[] } {
  const { library, code, registration } = functionLibrary('applyUserOp');
  const profiled = [
    'local tally = {}',
    "local function hook() local i = debug.getinfo(2, 'Sl') if i and i.currentline then local k = i.linedefined * 100000 + i.currentline tally[k] = (tally[k] or 0) + 1 end end",
    `redis.register_function{function_name='${library}', callback=function(K, A) bindGlobals() debug.sethook(hook, '', ${LUA_SAMPLE_EVERY}) local ok, r = pcall(served, K, A) debug.sethook() if not ok then error(r) end return r end, flags={'allow-cross-slot-keys'}}`,
    `redis.register_function('${library}_lines', function() bindGlobals() local out = {} for k, v in pairs(tally) do out[#out + 1] = k out[#out + 1] = v end tally = {} return out end)`,
  ].join('\n');
  // Lua numbers the lines from the `#!lua` line on.
  return { code: code.replace(registration, profiled), lines: `${library}_lines`, source: code.split('\n') };
}

/**
 * --floor: the user script's library loaded again under its own name with every `redis.call` logged:
 * each call of the function leaves a group of the commands it ran (their arguments as Redis takes
 * them: a number as '%.17g', script_lua.c) and its reply, which a second function hands over (and
 * forgets). The log costs the recorded rounds time; they are not the figure.
 */
function recordingLibrary(): { code: string; calls: string } {
  const { library, code, registration } = functionLibrary('applyUserOp');
  const [shebang, ...body] = code.replace(/redis\.call\(/g, 'recordedCall(').split('\n');
  const log = [
    'local REC, REC_N = {}, 0',
    "local function recordedCall(...) local a = { ... } for i = 1, #a do if type(a[i]) == 'number' then a[i] = string.format('%.17g', a[i]) end end REC_N = REC_N + 1 REC[REC_N] = a return redis.call(...) end",
  ];
  const recording = [
    `redis.register_function{function_name='${library}', callback=function(K, A) REC_N = REC_N + 1 REC[REC_N] = { '\\0call' } local r = served(K, A) REC_N = REC_N + 1 if type(r) == 'table' then REC[REC_N] = { '\\0replies', unpack(r) } else REC[REC_N] = { '\\0reply', r } end return r end, flags={'allow-cross-slot-keys'}}`,
    `redis.register_function('${library}_calls', function() local out = REC REC, REC_N = {}, 0 return out end)`,
  ].join('\n');
  return {
    code: [shebang, ...log, ...body].join('\n').replace(registration, recording),
    calls: `${library}_calls`,
  };
}

/** One recorded call of the user script: the commands it ran, and its reply (a list for a multi-op call). */
interface RecordedCall {
  commands: string[][];
  reply: string | string[];
}

/** The groups recordingLibrary's log hands over. */
function recordedCalls(log: unknown): RecordedCall[] {
  const calls: RecordedCall[] = [];
  for (const entry of log as string[][]) {
    const [head, ...rest] = entry;
    if (head === '\0call') calls.push({ commands: [], reply: '' });
    else if (head === '\0reply') calls.at(-1)!.reply = rest[0]!;
    else if (head === '\0replies') calls.at(-1)!.reply = rest;
    else calls.at(-1)!.commands.push(entry);
  }
  return calls;
}

/**
 * The replay of one recorded call (FLOOR_LIBRARY): ARGV[1] the number of commands, ARGV[2] 's' for
 * a single reply or 'l' for a list, then per command its argument count and arguments, then the reply.
 * It runs the commands in order, as the user script ran them, and answers the same reply, without
 * the script's own work: reading its input and plan, evaluating the op, encoding the record.
 */
const FLOOR_LIBRARY = `#!lua name=laurel_bench_floor
redis.register_function('laurel_bench_floor', function(_, A)
  local i = 3
  for _ = 1, tonumber(A[1]) do
    local c = tonumber(A[i])
    redis.call(unpack(A, i + 1, i + c))
    i = i + c + 1
  end
  if A[2] == 's' then return A[i] end
  local out = {}
  for j = i, #A do out[#out + 1] = A[j] end
  return out
end)`;

function floorArgs(call: RecordedCall): string[] {
  const args = [String(call.commands.length), typeof call.reply === 'string' ? 's' : 'l'];
  for (const c of call.commands) args.push(String(c.length), ...c);
  if (typeof call.reply === 'string') args.push(call.reply);
  else args.push(...call.reply);
  return args;
}

/** The report of --lua-profile: samples by function and by line, with the line's code. */
function luaReport(tallies: number[], source: string[], events: number): string {
  const byLine = new Map<number, number>();
  const byFn = new Map<number, number>();
  let total = 0;
  for (let i = 0; i < tallies.length; i += 2) {
    const key = tallies[i]!;
    const n = tallies[i + 1]!;
    const fn = Math.floor(key / 100000);
    byLine.set(key % 100000, (byLine.get(key % 100000) ?? 0) + n);
    byFn.set(fn, (byFn.get(fn) ?? 0) + n);
    total += n;
  }
  const text = (line: number) => (source[line - 1] ?? '').trim().slice(0, 110);
  const pct = (n: number) => `${((100 * n) / total).toFixed(1).padStart(5)}%`;
  /** The `top` heaviest entries of a tally, one line each with the code of its line. */
  const heaviest = (tally: Map<number, number>, top: number) =>
    [...tally]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([l, n]) => `${pct(n)}  ${String(l).padStart(5)}  ${text(l)}`);
  const out = [
    `${total} samples, one per ${LUA_SAMPLE_EVERY} Lua VM instructions: about ${Math.round((total * LUA_SAMPLE_EVERY) / events).toLocaleString('en')} VM instructions per event`,
    '',
    'by function (the line it is defined on)',
    ...heaviest(byFn, 40),
    '',
    'by line',
    ...heaviest(byLine, 80),
  ];
  return `${out.join('\n')}\n`;
}

/** A throwaway redis-server (optionally under callgrind, instrumentation off until asked). */
async function startRedis(callgrind: boolean) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'laurel-bench-script-'));
  const server = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
  ];
  const proc = callgrind
    ? spawn(
        'valgrind',
        [
          '--tool=callgrind',
          '--instr-atstart=no',
          `--callgrind-out-file=${join(dir, 'cg.out')}`,
          'redis-server',
          ...server,
        ],
        { stdio: 'ignore' },
      )
    : spawn('redis-server', server, { stdio: 'ignore' });
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 });
  client.on('error', () => {}); // refused until the server listens: connect() below retries
  for (let i = 0; ; i++) {
    try {
      await client.connect();
      await client.ping();
      break;
    } catch {
      if (i > 100 || proc.exitCode !== null) throw new Error('the throwaway redis-server did not start');
      client.disconnect();
      await sleep(100);
    }
  }
  const pid = proc.pid!;
  const control = (...args: string[]) =>
    execFileSync('callgrind_control', [...args, String(pid)], { stdio: 'pipe' });
  /** Instructions executed while `fn` ran (callgrind), and the dump file holding them. */
  const instructions = async (fn: () => Promise<void>): Promise<{ n: number; file: string }> => {
    control('-z');
    control('-i', 'on');
    await fn();
    control('-d');
    control('-i', 'off');
    const file = lastDump(dir);
    return { n: dumpTotal(dir), file };
  };
  const stop = async () => {
    client.disconnect();
    proc.kill('SIGKILL');
    await new Promise((r) => proc.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  };
  return { url: `redis://127.0.0.1:${port}`, client, instructions, stop };
}

/**
 * --floor: every round (the warm-up's too) runs with the user script's commands recorded
 * (recordingLibrary); then Redis is emptied (FLUSHALL keeps the functions) and the recorded calls
 * are replayed in the same order and grouping (FLOOR_LIBRARY), the warm-up's unmeasured, each
 * measured round's counted per event: the commands, their arguments and replies as the script
 * had them, without its evaluation.
 */
async function floorRun(
  redis: Awaited<ReturnType<typeof startRedis>>,
  round: () => Promise<void>,
  opts: Options,
  measureRedis: (
    fn: () => Promise<void>,
    events: number,
    keep: boolean,
  ) => Promise<{ value: number; unit: string }>,
): Promise<void> {
  const rec = recordingLibrary();
  await redis.client.function('LOAD', 'REPLACE', rec.code);
  const recorded: RecordedCall[][] = [];
  for (let r = 0; r <= opts.rounds; r++) {
    await round();
    recorded.push(recordedCalls(await redis.client.fcall(rec.calls, 0)));
  }
  await redis.client.flushall();
  await redis.client.function('LOAD', 'REPLACE', FLOOR_LIBRARY);
  const replay = async (calls: string[][]) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: opts.concurrency }, async () => {
        while (next < calls.length) await redis.client.fcall('laurel_bench_floor', 0, ...calls[next++]!);
      }),
    );
  };
  await replay(recorded[0]!.map(floorArgs));
  const figures: number[] = [];
  let unit = '';
  const commandsOf = (calls: RecordedCall[]) => calls.reduce((n, c) => n + c.commands.length, 0);
  for (let r = 1; r <= opts.rounds; r++) {
    const calls = recorded[r]!.map(floorArgs);
    if (commandsOf(recorded[r]!) === 0) throw new Error('--floor recorded no command of the user script');
    const m = await measureRedis(() => replay(calls), opts.events, r === opts.rounds);
    figures.push(m.value);
    unit = m.unit;
  }
  const median = [...figures].sort((a, b) => a - b)[Math.floor(figures.length / 2)]!;
  const calls = recorded.at(-1)!.length;
  const commands = commandsOf(recorded.at(-1)!);
  console.log(
    JSON.stringify({
      mode: 'single',
      floor: true,
      events: opts.events,
      rounds: figures.map((f) => Math.round(f)),
      perEvent: Math.round(median),
      unit,
      callsPerRound: calls,
      commandsPerEvent: Number((commands / opts.events).toFixed(2)),
    }),
  );
  console.log(
    `the user script's commands replayed without its evaluation (${calls} calls and ${(commands / opts.events).toFixed(1)} commands per event as recorded, arguments and replies precomputed): ${Math.round(median).toLocaleString('en')} ${unit} of Redis per event (median of ${figures.length} rounds of ${opts.events} ${opts.returning ? 'returning' : 'new'} users); the script itself: the same options without --floor`,
  );
}

async function main(): Promise<void> {
  const opts = parse(process.argv.slice(2));
  if (opts.apiCallgrind && !process.env[API_CG_DIR]) process.exit(await underCallgrind());
  const baseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(baseUrl).hostname))
    throw new Error(`only loopback hosts: ${baseUrl}`);
  const suffix = randomBytes(3).toString('hex');
  const dbName = `laurel_benchs_${suffix}`;
  const dbUrl = new URL(baseUrl);
  dbUrl.pathname = `/${dbName}`;
  const admin = new URL(baseUrl);
  admin.pathname = '/postgres';
  const pg = postgres(admin.toString(), { max: 1, onnotice: () => {} });
  const redis = await startRedis(opts.callgrind);
  const closers: Array<() => Promise<unknown>> = [];
  // --cluster: Laurel on a throwaway Cluster; its masters' CPU is the Redis figure.
  let cluster: Awaited<ReturnType<typeof startRedisCluster>> | null = null;
  let masters: Redis[] = [];
  let clusterClient: Cluster | null = null;
  try {
    if (opts.cluster) {
      cluster = await startRedisCluster();
      ({ client: clusterClient, masters } = await connectCluster(cluster.nodes));
    }
    await pg.unsafe(`create database "${dbName}"`);
    const laurel = await seededInProcess({
      redisUrl: redis.url,
      clusterNodes: cluster?.nodes,
      databaseUrl: dbUrl.toString(),
      prefix: 'bs',
      boards: opts.boards,
    });
    closers.push(() => laurel.close());
    const { deps, seeded } = laurel;

    const op = (i: number): UserOp => ({
      kind: 'event',
      metricId: seeded.metricId,
      user: { id: userId(i), tz: ZONES[i % ZONES.length]! },
      valueMicros: 1_000_000,
    });
    let next = 0;
    const round = async () => {
      // --returning: every round after the warm-up sends its events to the warm-up's users again.
      const first = opts.returning ? 0 : next;
      next += opts.events;
      if (opts.mode === 'batches') {
        // Whole batches of 100 through the batch service, as POST /admin/v1/metrics/events runs them:
        // acceptance, the script calls, the progress record and the reply markers' removal.
        for (let c = first; c < first + opts.events; c += 100) {
          const items = Array.from({ length: Math.min(100, first + opts.events - c) }, (_, k) => ({
            m: seeded.metricId,
            u: op(c + k).user,
            v: 1_000_000,
          }));
          const outcome = await processBatch(deps, await acceptBatch(deps, items));
          if (outcome !== 'done') throw new Error(`a batch ended ${outcome}`);
        }
      } else if (opts.mode === 'batch') {
        // Chunks of 100 items in multi-op calls of 25, as src/services/batch-events.ts sends them.
        for (let c = first; c < first + opts.events; c += 100) {
          const ops = Array.from({ length: Math.min(100, first + opts.events - c) }, (_, k) => op(c + k));
          const calls = [];
          for (let k = 0; k < ops.length; k += 25) calls.push(runUserOps(deps, ops.slice(k, k + 25)));
          const results = (await Promise.all(calls)).flat();
          if (results.some((e) => e !== null))
            throw new Error(`a batch item failed: ${results.find((e) => e)}`);
        }
      } else {
        let i = first;
        await Promise.all(
          Array.from({ length: opts.concurrency }, async () => {
            while (i < first + opts.events) await runUserOp(deps, op(i++));
          }),
        );
      }
    };
    /** Redis's cost of `fn` per event: instructions (callgrind) or CPU µs (INFO). */
    /** This process's cost per event (the API's side: preparing ops, sending them, reading replies). */
    const api: number[] = [];
    const apiDir = process.env[API_CG_DIR];
    const measure = async (fn: () => Promise<void>, events: number, keep: boolean) => {
      if (apiDir) {
        // Under callgrind (--api-callgrind): the instructions this process executed.
        const control = (...args: string[]) =>
          execFileSync('callgrind_control', [...args, String(process.pid)], { stdio: 'pipe' });
        control('-z');
        control('-i', 'on');
        await fn();
        control('-d');
        control('-i', 'off');
        api.push(dumpTotal(apiDir) / events);
        return { value: Number.NaN, unit: 'instructions' };
      }
      const before = process.cpuUsage();
      try {
        return await measureRedis(fn, events, keep);
      } finally {
        const d = process.cpuUsage(before);
        api.push((d.user + d.system) / events);
      }
    };
    const measureRedis = async (fn: () => Promise<void>, events: number, keep: boolean) => {
      if (opts.callgrind) {
        const { n, file } = await redis.instructions(fn);
        if (keep && opts.profile) copyFileSync(file, opts.profile);
        return { value: n / events, unit: 'instructions' };
      }
      const cpu = () => redisCpuSeconds(masters.length ? masters : redis.client);
      const before = await cpu();
      await fn();
      return { value: (((await cpu()) - before) * 1e6) / events, unit: 'µs of CPU' };
    };

    if (opts.floor) {
      await floorRun(redis, round, opts, measureRedis);
      return;
    }
    await round(); // warm-up: the library loads, the plan is cached, the boards exist
    const lua = opts.luaProfile ? profiledLibrary() : null;
    if (lua) {
      try {
        await redis.client.function('LOAD', 'REPLACE', lua.code);
        await round(); // the profiled library's own warm-up (its plans cache anew)
        await redis.client.fcall(lua.lines, 0);
      } catch (err) {
        throw new Error(
          `--lua-profile needs a redis-server whose Functions see \`debug\` (bench/README.md): ${err}`,
        );
      }
    }
    const figures: number[] = [];
    let unit = '';
    for (let r = 0; r < opts.rounds; r++) {
      const m = await measure(round, opts.events, r === opts.rounds - 1 && !opts.writer);
      figures.push(m.value);
      unit = m.unit;
    }
    const sorted = [...figures].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    const apiRounds = api.slice(0, figures.length);
    // Under callgrind the lowest round: the early ones still pay for JIT compilation and the collector
    // runs in some rounds only. In CPU time the median, as for Redis.
    const apiFigure = apiDir
      ? Math.min(...apiRounds)
      : [...apiRounds].sort((a, b) => a - b)[Math.floor(apiRounds.length / 2)]!;
    const out: Record<string, unknown> = {
      mode: opts.mode,
      ...(opts.returning ? { returning: true } : {}),
      events: opts.events,
      ...(apiDir ? {} : { rounds: figures.map((f) => Math.round(f)), perEvent: Math.round(median), unit }),
      apiRounds: apiRounds.map((f) => Math.round(f)),
      apiPerEvent: Math.round(apiFigure),
      apiUnit: apiDir ? 'instructions' : 'µs of CPU',
    };
    const what = {
      single: 'user script (single events)',
      batch: 'user script (batch items, multi-op calls of 25)',
      batches: 'batches of 100 (acceptance, script calls, progress, markers)',
    }[opts.mode];
    const apiPart = `this process (the API's side of the calls) ${Math.round(apiFigure).toLocaleString('en')} ${apiDir ? 'instructions (lowest round)' : 'µs of CPU'} per event`;
    const who = opts.returning ? "returning users (the warm-up round's)" : 'new users';
    let sentence = apiDir
      ? `${what}: ${apiPart} (${figures.length} rounds of ${opts.events} ${who})`
      : `${what}: ${Math.round(median).toLocaleString('en')} ${unit} of Redis per event (median of ${figures.length} rounds of ${opts.events} ${who}); ${apiPart}`;
    if (opts.writer) {
      const total = next;
      const running: { workers?: ReturnType<typeof startWorkers> } = {};
      closers.unshift(async () => running.workers?.stop());
      // The streams are found first: the scan is the bench's work, not the writer's.
      const streams = await outboxStreams(redis.client, 'bs');
      const w = await measure(
        async () => {
          running.workers = startWorkers(deps);
          const d = await waitForOutboxDrain(redis.client, 'bs', 180_000, streams);
          if (d.left) throw new Error(`the history writer left ${d.left} outbox entries`);
        },
        total,
        true,
      );
      out.writerPerEvent = Math.round(w.value);
      sentence += `; history writer (backlog of ${total}): ${Math.round(w.value).toLocaleString('en')} ${w.unit} of Redis per event`;
    }
    if (lua && opts.luaProfile) {
      const tallies = ((await redis.client.fcall(lua.lines, 0)) as unknown[]).map(Number);
      writeFileSync(opts.luaProfile, luaReport(tallies, lua.source, opts.events * opts.rounds));
      sentence += `; the Lua profile is in ${opts.luaProfile}`;
    }
    console.log(JSON.stringify(out));
    console.log(sentence);
  } finally {
    for (const close of closers) await close().catch(() => {});
    await redis.stop();
    clusterClient?.disconnect();
    await cluster?.stop();
    await pg.unsafe(`drop database if exists "${dbName}" with (force)`).catch(() => {});
    await pg.end({ timeout: 2 });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
