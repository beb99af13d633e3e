import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import type { Logger } from '../logger';

/**
 * Lowers this process's CPU priority to `nice` (never raises it: a process already nicer keeps its
 * value, and raising needs privileges). For a ROLE=worker process: the history writer, scheduler and
 * webhook sender work in bursts (a pass parses hundreds of records at once), and on a host shared with
 * the API, Redis and Postgres those bursts would otherwise take the cores from requests and show up
 * as their tail latency. The writer's lag is exported (laurel_history_lag_seconds) if it ever falls
 * behind.
 *
 * On Linux a nice value belongs to a thread, not to the process: `setPriority(nice)` lowers the main
 * thread alone, and the threads Node started before it (V8's, which run the parallel scavenges of a
 * pass's garbage, and libuv's pool) would keep competing with requests at full priority. So every
 * thread of the process is lowered; threads started later inherit the value of the thread that
 * starts them.
 */
export function lowerPriority(nice: number, logger: Pick<Logger, 'warn'>): void {
  if (nice <= getPriority()) return;
  try {
    setPriority(nice);
  } catch (err) {
    logger.warn({ err, nice }, 'could not lower the worker process priority');
    return;
  }
  for (const tid of threadIds()) {
    try {
      if (getPriority(tid) < nice) setPriority(tid, nice);
    } catch {
      // The thread has ended since it was listed.
    }
  }
}

/** The ids of this process's threads (Linux: /proc/self/task); none elsewhere, where a nice value is the process's. */
function threadIds(): number[] {
  if (process.platform !== 'linux') return [];
  try {
    return readdirSync('/proc/self/task').map(Number).filter(Number.isInteger);
  } catch {
    return [];
  }
}
