import { type ChildProcess, spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { http } from './http';

/** A child process the bench started; every one of them is killed before the bench exits. */
export interface Child {
  name: string;
  proc: ChildProcess;
  /** The last lines it printed, for the error message when it dies early. */
  tail: string[];
  exited: Promise<number | null>;
}

const children = new Set<Child>();

// Last resort for a crash or an exit path that skipped the finally: nothing may outlive the bench.
process.on('exit', () => {
  for (const c of children)
    if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
});

/** A port free on 127.0.0.1 right now (the OS picks it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** Starts `node <args>` in `cwd`, echoing its output prefixed with its name. */
export function startChild(name: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Child {
  const proc = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const tail: string[] = [];
  const echo = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) {
      if (!line.trim()) continue;
      tail.push(line);
      if (tail.length > 30) tail.shift();
      process.stderr.write(`[${name}] ${line}\n`);
    }
  };
  proc.stdout?.on('data', echo);
  proc.stderr?.on('data', echo);
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const child: Child = { name, proc, tail, exited };
  children.add(child);
  void exited.then(() => children.delete(child));
  return child;
}

/** Polls `url` until it answers 200; fails when the child exits first or after `timeoutMs`. */
export async function waitReady(child: Child, url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let dead = false;
  void child.exited.then(() => {
    dead = true;
  });
  while (Date.now() < deadline) {
    if (dead) throw new Error(`${child.name} exited during start-up:\n${child.tail.join('\n')}`);
    try {
      if ((await http('GET', url, {}, undefined, 2000)).status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  throw new Error(`${child.name} was not ready at ${url} after ${timeoutMs} ms`);
}

/** SIGTERM (graceful shutdown, lets a CPU profile be written), then SIGKILL after `graceMs`. */
export async function stopChild(child: Child, graceMs = 8000): Promise<void> {
  if (child.proc.exitCode !== null || child.proc.signalCode !== null) return;
  child.proc.kill('SIGTERM');
  child.proc.kill('SIGCONT'); // a paused child handles the SIGTERM only once resumed
  const timer = setTimeout(() => child.proc.kill('SIGKILL'), graceMs);
  await child.exited;
  clearTimeout(timer);
}

export async function stopAllChildren(): Promise<void> {
  await Promise.all([...children].map((c) => stopChild(c)));
}

/** The command name and CPU ticks (user + system) of a process, from /proc/<pid>/stat. */
async function statOf(pid: number | string): Promise<{ name: string; ticks: number } | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces): utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
      ticks: Number(fields[11]) + Number(fields[12]),
    };
  } catch {
    return null;
  }
}

/** CPU seconds (user + system) a process has used so far, from /proc; null where /proc is missing. */
export async function cpuSeconds(pid: number | undefined): Promise<number | null> {
  if (pid === undefined) return null;
  const s = await statOf(pid);
  return s ? s.ticks / 100 : null; // USER_HZ is 100 on Linux
}

/** CPU seconds of several processes together; null when any of them is unknown. */
export async function totalCpuSeconds(pids: Array<number | undefined>): Promise<number | null> {
  const each = await Promise.all(pids.map((pid) => cpuSeconds(pid)));
  return each.some((s) => s === null) ? null : each.reduce<number>((a, b) => a + b!, 0);
}

/** A client backend's title: `postgres: [cluster: ]<user> <database> <host>(<port>) <state>`. */
const CLIENT_BACKEND = /\(\d+\)|\[local\]/;

/**
 * CPU of the `postgres` processes on the box, counted from the first sample (backends come and go
 * with connections: each is counted from when it was first seen, so a backend that exits loses only
 * its use since the previous sample).
 *
 * `all` is every postgres process. `own` leaves out the client backends of other databases (other
 * benches and test runs on the same Postgres): it is the backends of `databases` plus the processes
 * every database shares (postmaster, WAL writer, checkpointer, background writer, autovacuum).
 */
export class PostgresCpu {
  private readonly ticks = new Map<string, number>();
  private readonly mine = new Map<string, boolean>();
  private all = 0;
  private own = 0;

  constructor(private readonly databases: string[] = []) {}

  private async isOwn(pid: string): Promise<boolean> {
    let known = this.mine.get(pid);
    if (known === undefined) {
      let title = '';
      try {
        title = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).replace(/\0/g, ' ');
      } catch {
        // gone: counts as shared until it disappears from /proc
      }
      const words = title.split(/\s+/);
      known = !CLIENT_BACKEND.test(title) || this.databases.some((d) => words.includes(d));
      this.mine.set(pid, known);
    }
    return known;
  }

  /** Seconds since the first sample, all postgres processes and this run's; null where /proc is missing. */
  async sample(): Promise<{ all: number; own: number } | null> {
    let pids: string[];
    try {
      pids = (await readdir('/proc')).filter((d) => /^\d+$/.test(d));
    } catch {
      return null;
    }
    const stats = await Promise.all(pids.map((pid) => statOf(pid)));
    const seen = new Set<string>();
    for (const [i, pid] of pids.entries()) {
      const s = stats[i];
      if (s?.name !== 'postgres') continue;
      seen.add(pid);
      const last = this.ticks.get(pid);
      if (last !== undefined) {
        const used = Math.max(0, s.ticks - last);
        this.all += used;
        if (await this.isOwn(pid)) this.own += used;
      }
      this.ticks.set(pid, s.ticks);
    }
    for (const pid of this.ticks.keys()) {
      if (!seen.has(pid)) {
        this.ticks.delete(pid);
        this.mine.delete(pid);
      }
    }
    return { all: this.all / 100, own: this.own / 100 };
  }
}

const everyPostgres = new PostgresCpu();

/**
 * CPU seconds used by every `postgres` process on the box since the first call (the server and its
 * backends, each counted from when it was first seen). Null where /proc is missing.
 */
export async function postgresCpuSeconds(): Promise<number | null> {
  return (await everyPostgres.sample())?.all ?? null;
}

/** Sends a signal to a child the bench started (SIGSTOP/SIGCONT pause and resume it). */
export function signalChild(child: Child, signal: NodeJS.Signals): void {
  if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill(signal);
}

/**
 * NODE_OPTIONS of a worker process: the caller's, plus the young generation README recommends
 * (`BENCH_WORKER_NODE_OPTIONS` instead when set; empty for Node's default, to compare).
 */
const WORKER_NODE_OPTIONS = '--max-semi-space-size=64';
export const workerNodeOptions = (env: NodeJS.ProcessEnv) =>
  [env.NODE_OPTIONS, env.BENCH_WORKER_NODE_OPTIONS ?? WORKER_NODE_OPTIONS].filter(Boolean).join(' ');

/**
 * NODE_OPTIONS of an API process: the caller's, plus the young generation README recommends for API
 * processes (`BENCH_API_NODE_OPTIONS` instead when set; empty for Node's default, to compare).
 */
const API_NODE_OPTIONS = '--max-semi-space-size=32';
export const apiNodeOptions = (env: NodeJS.ProcessEnv) =>
  [env.NODE_OPTIONS, env.BENCH_API_NODE_OPTIONS ?? API_NODE_OPTIONS].filter(Boolean).join(' ');
