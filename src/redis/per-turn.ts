/**
 * Work a process gathers within one turn of its event loop and sends as one script call: board moves
 * per board (src/redis/board-moves.ts), single events per configuration (src/services/user-op.ts).
 */

/** At most this many user ops per gathered call (user script or commit), so one call never holds Redis for long. */
export const MAX_OPS_PER_CALL = 16;

/** A caller waiting for its share of a gathered call's reply. */
export interface Waiting<R> {
  resolve: (reply: R) => void;
  reject: (err: unknown) => void;
}

/**
 * Items gathered per key: the first item of a key in a turn schedules the key's flush for when the
 * turn's I/O callbacks have run (setImmediate), so every item queued in that turn goes with it, in
 * chunks of at most `max` (one call never holds Redis for long).
 */
export class PerTurn<K, T> {
  private readonly queues = new Map<K, T[]>();

  constructor(
    private readonly max: number,
    private readonly flush: (items: T[]) => void,
  ) {}

  add(key: K, item: T): void {
    const queued = this.queues.get(key);
    if (queued) {
      queued.push(item);
      return;
    }
    const items = [item];
    this.queues.set(key, items);
    setImmediate(() => {
      this.queues.delete(key);
      for (let i = 0; i < items.length; i += this.max) this.flush(items.slice(i, i + this.max));
    });
  }
}

/**
 * Hands each waiting caller its reply of a gathered call, in order: a reply "!<error>" (a part the
 * script caught failing, lua/applyUserOp.lua and lua/commitUserOp.lua) rejects that caller alone. A
 * reply is a string, or what the script answers for a part (R).
 */
export function settleReplies<R = string>(
  script: string,
  waiting: Array<Waiting<R>>,
  replies: unknown,
): void {
  const list = Array.isArray(replies) ? replies : [];
  waiting.forEach((w, i) => {
    const reply = list[i];
    if (reply === undefined || reply === null)
      w.reject(new Error(`${script} answered fewer replies than it was sent`));
    else if (typeof reply === 'string' && reply.startsWith('!'))
      w.reject(new Error(`${script}: ${reply.slice(1)}`));
    else w.resolve(reply as R);
  });
}

/** The calls of one round (Rounds): how many have not answered yet, and the answers held back. */
interface Round {
  pending: number;
  held: Array<() => void>;
  timer: NodeJS.Timeout | null;
}

/**
 * The calls one turn of the event loop sends, as rounds: each call's answer is held back until every
 * call of its round has answered (or `graceMs` after the first answer, so one slow node delays the
 * others by that at most), then all are handed out in one go. What the callers do next then starts in
 * one turn again and is gathered again: on a Redis Cluster, the board moves of the events a turn sent
 * to its masters leave in one call per board (src/redis/board-moves.ts) instead of one per master's
 * answer.
 */
export class Rounds {
  private current: Round | null = null;

  constructor(private readonly graceMs: number) {}

  /** Joins this turn's round; the returned function takes the call's answer (a function handing it out). */
  join(): (handOut: () => void) => void {
    let round = this.current;
    if (!round) {
      const created: Round = { pending: 0, held: [], timer: null };
      round = created;
      this.current = created;
      // Calls sent from the same turn join it; a later turn starts a round of its own.
      setImmediate(() => {
        if (this.current === created) this.current = null;
      });
    }
    round.pending++;
    const joined = round;
    return (handOut) => {
      joined.held.push(handOut);
      joined.pending--;
      if (joined.pending === 0) handOutAll(joined);
      else joined.timer ??= setTimeout(() => handOutAll(joined), this.graceMs);
    };
  }
}

function handOutAll(round: Round): void {
  if (round.timer) clearTimeout(round.timer);
  round.timer = null;
  const held = round.held;
  round.held = [];
  // Every answer is handed out even if one hand-out throws (its error is thrown after the others').
  let failed: { err: unknown } | null = null;
  for (const handOut of held) {
    try {
      handOut();
    } catch (err) {
      failed ??= { err };
    }
  }
  if (failed) throw failed.err;
}
