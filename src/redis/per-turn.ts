/**
 * Work a process gathers within one turn of its event loop and sends as one script call: board moves
 * per board (src/redis/board-moves.ts), single events per configuration (src/services/user-op.ts).
 */

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
 * script caught failing, lua/updateBoard.lua and lua/applyUserOp.lua) rejects that caller alone.
 */
export function settleReplies(script: string, waiting: Array<Waiting<string>>, replies: unknown): void {
  const list = Array.isArray(replies) ? replies : [];
  waiting.forEach((w, i) => {
    const reply = list[i];
    if (typeof reply !== 'string') w.reject(new Error(`${script} answered fewer replies than it was sent`));
    else if (reply.startsWith('!')) w.reject(new Error(`${script}: ${reply.slice(1)}`));
    else w.resolve(reply);
  });
}
