import { getPriority, setPriority } from 'node:os';
import type { Logger } from '../logger';

/**
 * Lowers this process's CPU priority to `nice` (never raises it: a process already nicer keeps its
 * value, and raising needs privileges). For a ROLE=worker process: the history writer, scheduler and
 * webhook sender work in bursts (a pass parses hundreds of records at once), and on a host shared with
 * the API, Redis and Postgres those bursts would otherwise take the cores from requests and show up
 * as their tail latency. The writer's lag is exported (laurel_history_lag_seconds) if it ever falls
 * behind.
 */
export function lowerPriority(nice: number, logger: Pick<Logger, 'warn'>): void {
  if (nice <= getPriority()) return;
  try {
    setPriority(nice);
  } catch (err) {
    logger.warn({ err, nice }, 'could not lower the worker process priority');
  }
}
