/**
 * Simulations (issue 21): a draft configuration replayed over recorded history, twice (current and
 * draft), each into a Redis key prefix of its own that is deleted afterwards. A run lives in the
 * process that started it; its record (status, progress, ETA, report) is kept in Redis for a week so
 * that every API process can show it. A run whose process stopped shows as failed.
 *
 * Isolation: the replays write only under `sim:<prefix>:<id>:…` (no live key starts that way, and no
 * worker reads there); Postgres is only read, except the draft's plan transaction, which always
 * rolls back; no webhook is recorded (webhooks come from the history writer, which never sees a
 * replay's outbox).
 */
import { randomUUID } from 'node:crypto';
import type { Snapshot } from '../catalog/snapshot';
import type { ConfigDocument } from '../config-as-code/document';
import type { Deps } from '../deps';
import { draftSnapshot } from './draft';
import { countItems, type HistoryWindow, loadUsers, recordedItems, type Sample } from './history';
import { buildReport, type SimulationReport } from './report';
import { deletePrefix, ReplayCancelled, replayHistory } from './replay';
import { readSummaries, type UserSummary } from './summary';
import { Keys } from '../redis/keys';

export type SimulationStatus = 'running' | 'done' | 'failed' | 'cancelled';

export interface SimulationRecord {
  id: string;
  status: SimulationStatus;
  /** What the run is doing: preparing, replaying the current or the draft configuration, reporting. */
  phase: 'preparing' | 'current' | 'draft' | 'report' | null;
  progress: number;
  /** Estimated seconds left (null until there is a rate to go by). */
  etaSeconds: number | null;
  createdAt: string;
  finishedAt: string | null;
  /** Last heartbeat of the running process. */
  updatedAt: string;
  request: { from: string | null; to: string; sample: number | string[] | null; prune: boolean };
  error: string | null;
  report: SimulationReport | null;
}

/** At most this many simulations run at once (across processes). */
export const MAX_RUNNING = 2;
/** How long records are kept. */
const RECORD_TTL_S = 7 * 86_400;
/** A running record not refreshed for this long belongs to a process that stopped. */
const STALE_MS = 60_000;
const HEARTBEAT_MS = 1000;

export interface StartInput {
  config: ConfigDocument;
  from?: number | undefined;
  to?: number | undefined;
  sample?: number | string[] | undefined;
  prune?: boolean | undefined;
}

/** Where simulations keep their records and replays (outside every live key). */
export function simulationKeys(deps: Pick<Deps, 'keys'>) {
  const base = `sim:${deps.keys.prefix}`;
  return {
    base,
    index: `${base}:runs`,
    record: (id: string) => `${base}:run:${id}`,
    cancel: (id: string) => `${base}:cancel:${id}`,
    /** Key prefix of one replay (current or draft). */
    replay: (id: string, side: 'current' | 'draft') => `${base}:${id}:${side}`,
  };
}

/** The runs of this process (their records are in Redis too). */
const local = new Map<string, { record: SimulationRecord; cancelled: boolean; done: Promise<void> }>();

function stale(r: SimulationRecord, now: number): boolean {
  return r.status === 'running' && now - Date.parse(r.updatedAt) > STALE_MS && !local.has(r.id);
}

/** A record as shown: a running one whose process stopped is failed. */
function shown(r: SimulationRecord): SimulationRecord {
  if (!stale(r, Date.now())) return r;
  return { ...r, status: 'failed', error: 'The process running this simulation stopped', etaSeconds: null };
}

async function save(deps: Deps, r: SimulationRecord): Promise<void> {
  const k = simulationKeys(deps);
  await deps.redis.set(k.record(r.id), JSON.stringify(r), 'EX', RECORD_TTL_S);
}

async function load(deps: Deps, id: string): Promise<SimulationRecord | null> {
  const raw = await deps.redis.get(simulationKeys(deps).record(id));
  return raw ? (JSON.parse(raw) as SimulationRecord) : null;
}

/** One simulation, or null. */
export async function getSimulation(deps: Deps, id: string): Promise<SimulationRecord | null> {
  const mine = local.get(id);
  if (mine) return mine.record;
  const r = await load(deps, id);
  return r ? shown(r) : null;
}

/** Recent simulations, newest first (reports left out). */
export async function listSimulations(deps: Deps, limit = 20): Promise<SimulationRecord[]> {
  const k = simulationKeys(deps);
  const ids = await deps.redis.zrevrange(k.index, 0, limit - 1);
  const out: SimulationRecord[] = [];
  for (const id of ids) {
    const r = await getSimulation(deps, id);
    if (r) out.push({ ...r, report: null });
    else await deps.redis.zrem(k.index, id);
  }
  return out;
}

/** Running simulations (all processes); removes the replay keys of runs whose process stopped. */
async function running(deps: Deps): Promise<number> {
  const k = simulationKeys(deps);
  const ids = await deps.redis.zrevrange(k.index, 0, 99);
  let n = 0;
  for (const id of ids) {
    if (local.has(id)) {
      if (local.get(id)!.record.status === 'running') n++;
      continue;
    }
    const r = await load(deps, id);
    if (r?.status !== 'running') continue;
    if (stale(r, Date.now())) {
      await deletePrefix(deps, k.replay(id, 'current'));
      await deletePrefix(deps, k.replay(id, 'draft'));
      await save(deps, { ...shown(r) });
    } else n++;
  }
  return n;
}

export class TooManySimulations extends Error {
  constructor() {
    super(`At most ${MAX_RUNNING} simulations run at a time; wait for one to finish or cancel it`);
  }
}

/**
 * Validates the draft (422 on item errors) and starts a simulation in the background. Throws
 * TooManySimulations when MAX_RUNNING already run.
 */
export async function startSimulation(deps: Deps, input: StartInput): Promise<SimulationRecord> {
  // Starts of this process still validating their draft count too (two requests at once get one slot each).
  const pending = starting.get(deps.keys.prefix) ?? 0;
  starting.set(deps.keys.prefix, pending + 1);
  try {
    if ((await running(deps)) + pending >= MAX_RUNNING) throw new TooManySimulations();
    return await start(deps, input);
  } finally {
    starting.set(deps.keys.prefix, (starting.get(deps.keys.prefix) ?? 1) - 1);
  }
}

const starting = new Map<string, number>();

async function start(deps: Deps, input: StartInput): Promise<SimulationRecord> {
  const now = deps.clock.now();
  const window: HistoryWindow = { from: input.from ?? null, to: input.to ?? now };
  const prune = input.prune ?? true;
  const current = deps.catalog.snapshot;
  const draft = await draftSnapshot(deps, input.config, prune);
  const id = randomUUID();
  const record: SimulationRecord = {
    id,
    status: 'running',
    phase: 'preparing',
    progress: 0,
    etaSeconds: null,
    createdAt: new Date().toISOString(),
    finishedAt: null,
    updatedAt: new Date().toISOString(),
    request: {
      from: window.from === null ? null : new Date(window.from).toISOString(),
      to: new Date(window.to).toISOString(),
      sample: input.sample ?? null,
      prune,
    },
    error: null,
    report: null,
  };
  const k = simulationKeys(deps);
  await save(deps, record);
  await deps.redis.zadd(k.index, Date.now(), id);
  const entry = { record, cancelled: false, done: Promise.resolve() };
  local.set(id, entry);
  const sample: Sample =
    input.sample === undefined
      ? { all: true }
      : typeof input.sample === 'number'
        ? { count: input.sample }
        : { ids: input.sample };
  entry.done = execute(deps, entry, {
    window,
    sample,
    current,
    draft: draft.snapshot,
    draftInfo: { ...draft.changes, warnings: draft.warnings },
    selfCheckApplicable: window.from === null && window.to >= now,
  }).finally(() => local.delete(id));
  return record;
}

/** Asks a running simulation to stop (any process); false when it is not running. */
export async function cancelSimulation(deps: Deps, id: string): Promise<SimulationRecord | null> {
  const mine = local.get(id);
  if (mine) {
    mine.cancelled = true;
    await mine.done;
    return getSimulation(deps, id);
  }
  const r = await getSimulation(deps, id);
  if (r?.status !== 'running') return r;
  await deps.redis.set(simulationKeys(deps).cancel(id), '1', 'EX', 3600);
  return { ...r, status: 'running' };
}

/** Removes a finished simulation's record (a running one is cancelled first). */
export async function deleteSimulation(deps: Deps, id: string): Promise<boolean> {
  const r = await getSimulation(deps, id);
  if (!r) return false;
  if (r.status === 'running') await cancelSimulation(deps, id);
  if (local.has(id)) return true;
  const k = simulationKeys(deps);
  await deps.redis.del(k.record(id));
  await deps.redis.zrem(k.index, id);
  return true;
}

/** Cancels this process's running simulations and waits for them to clean up (shutdown). */
export async function cancelLocalSimulations(): Promise<void> {
  for (const e of local.values()) e.cancelled = true;
  await settleSimulations();
}

/** Waits for this process's running simulations (tests and shutdown). */
export async function settleSimulations(): Promise<void> {
  await Promise.all([...local.values()].map((e) => e.done));
}

interface Plan {
  window: HistoryWindow;
  sample: Sample;
  current: Snapshot;
  draft: Snapshot;
  draftInfo: { create: number; update: number; delete: number; warnings: string[] };
  selfCheckApplicable: boolean;
}

async function execute(
  deps: Deps,
  entry: { record: SimulationRecord; cancelled: boolean },
  plan: Plan,
): Promise<void> {
  const k = simulationKeys(deps);
  const r = entry.record;
  const started = Date.now();
  let lastBeat = 0;
  let remoteCancel = false;
  const beat = async (force = false) => {
    if (!force && Date.now() - lastBeat < HEARTBEAT_MS) return;
    lastBeat = Date.now();
    r.updatedAt = new Date().toISOString();
    const elapsed = (Date.now() - started) / 1000;
    r.etaSeconds = r.progress > 0.02 ? Math.round((elapsed / r.progress) * (1 - r.progress)) : null;
    await save(deps, r);
    if ((await deps.redis.get(k.cancel(r.id))) !== null) remoteCancel = true;
  };
  const cancelled = () => entry.cancelled || remoteCancel;
  // A heartbeat of its own: phases without progress (reads, the report) must not look like a stopped run.
  const heartbeat = setInterval(() => void beat(true).catch(() => {}), STALE_MS / 6);
  heartbeat.unref();
  try {
    const users = await loadUsers(deps, plan.sample, plan.window);
    const ids = [...users.keys()].sort();
    // Live state is read first, as close to the end of the window as possible: what the scheduler and
    // new traffic do while the replays run must not count as a mismatch.
    const live: Map<string, UserSummary> = await readSummaries(
      deps,
      deps.keys,
      plan.current,
      ids,
      plan.window.to,
    );
    const filter = 'all' in plan.sample ? null : ids;
    const total = await countItems(deps, filter, plan.window);
    let events = 0;
    let completions = 0;
    const replay = async (side: 'current' | 'draft', snap: Snapshot, share: [number, number]) => {
      r.phase = side;
      const prefix = k.replay(r.id, side);
      try {
        const items = recordedItems(deps, plan.current, filter, plan.window);
        const counted = (async function* () {
          for await (const batch of items) {
            if (side === 'current') {
              for (const i of batch) {
                if (!users.has(i.userId)) continue;
                if (i.kind === 'event') events++;
                else completions++;
              }
            }
            yield batch;
          }
        })();
        const outcome = await replayHistory(deps, prefix, snap, users, counted, total, plan.window.to, {
          cancelled,
          onProgress: (p) => {
            r.progress = Math.round((share[0] + p * (share[1] - share[0])) * 1000) / 1000;
            void beat().catch(() => {});
          },
        });
        const summaries = await readSummaries(
          deps,
          new Keys(prefix, deps.config.USER_SHARDS, deps.keys.layout),
          snap,
          ids,
          plan.window.to,
        );
        return { outcome, summaries };
      } finally {
        await deletePrefix(deps, prefix);
      }
    };
    await beat(true);
    const cur = await replay('current', plan.current, [0, 0.48]);
    const draft = await replay('draft', plan.draft, [0.48, 0.96]);
    r.phase = 'report';

    r.report = buildReport({
      window: plan.window,
      userIds: ids,
      events,
      completions,
      currentSnap: plan.current,
      draftSnap: plan.draft,
      current: cur.summaries,
      draft: draft.summaries,
      live,
      currentRun: cur.outcome,
      draftRun: draft.outcome,
      selfCheckApplicable: plan.selfCheckApplicable,
      draftInfo: plan.draftInfo,
    });
    r.status = 'done';
    r.progress = 1;
  } catch (err) {
    if (err instanceof ReplayCancelled) r.status = 'cancelled';
    else {
      deps.logger.error({ err, simulation: r.id }, 'simulation failed');
      r.status = 'failed';
      r.error = String((err as Error)?.message ?? err);
    }
  } finally {
    clearInterval(heartbeat);
    r.phase = null;
    r.etaSeconds = null;
    r.finishedAt = new Date().toISOString();
    r.updatedAt = r.finishedAt;
    await save(deps, r).catch(() => {});
    await deps.redis.del(k.cancel(r.id)).catch(() => {});
  }
}
