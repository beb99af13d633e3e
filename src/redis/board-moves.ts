import { boardMoves } from '../metrics/registry';
import type { RedisClient } from './client';

/**
 * Board moves made outside the user script (every board on a Cluster, boards with breakdowns or ranked
 * by streak on a single Redis, the history writer's repairs), gathered per board: the moves a process
 * has for one board within one turn of its event loop travel in one lua/updateBoard.lua call, applied
 * one after the other as separate calls would be. Under load that is one round trip, one script call
 * and one slot lookup for several events instead of one each, on the board's slot, which every event
 * moving the board reaches (on a Cluster the busiest slot).
 */

/** A board's keys for one move (lua/updateBoard.lua KEYS[1..4]). */
export interface BoardMoveKeys {
  members: string;
  ranking: string;
  version: string;
  changes: string;
}

interface Pending {
  members: string;
  ranking: string;
  /** lua/updateBoard.lua's 8 ARGV of the move. */
  args: string[];
  resolve: (reply: string) => void;
  reject: (err: unknown) => void;
}

interface Queue {
  version: string;
  changes: string;
  moves: Pending[];
}

/** At most this many moves per call, so one call never holds Redis for long. */
export const MAX_MOVES_PER_CALL = 32;

const queues = new WeakMap<RedisClient, Map<string, Queue>>();

/** One move on a board: its reply JSON, as lua/updateBoard.lua answers a single move. */
export function moveOnBoard(redis: RedisClient, keys: BoardMoveKeys, args: string[]): Promise<string> {
  let byBoard = queues.get(redis);
  if (!byBoard) {
    byBoard = new Map();
    queues.set(redis, byBoard);
  }
  let queue = byBoard.get(keys.version);
  if (!queue) {
    const q: Queue = { version: keys.version, changes: keys.changes, moves: [] };
    queue = q;
    byBoard.set(keys.version, q);
    const boards = byBoard;
    // When this turn's I/O callbacks have run: every event whose user script answered in this turn
    // has queued its moves by then.
    setImmediate(() => {
      boards.delete(q.version);
      for (let i = 0; i < q.moves.length; i += MAX_MOVES_PER_CALL)
        send(redis, q, q.moves.slice(i, i + MAX_MOVES_PER_CALL));
    });
  }
  return new Promise((resolve, reject) =>
    queue.moves.push({ members: keys.members, ranking: keys.ranking, args, resolve, reject }),
  );
}

function send(redis: RedisClient, q: Queue, moves: Pending[]): void {
  boardMoves.inc(moves.length);
  const first = moves[0]!;
  if (moves.length === 1) {
    redis
      .updateBoard(4, first.members, first.ranking, q.version, q.changes, ...first.args)
      .then((reply) => first.resolve(reply as string), first.reject);
    return;
  }
  const keys = [first.members, first.ranking, q.version, q.changes];
  const args: string[] = [...first.args];
  for (let i = 1; i < moves.length; i++) {
    const m = moves[i]!;
    keys.push(m.members, m.ranking);
    for (const a of m.args) args.push(a);
  }
  redis.updateBoard(keys.length, ...keys, ...args).then(
    (replies) => {
      const list = replies as string[];
      for (let i = 0; i < moves.length; i++) {
        const reply = list[i];
        if (typeof reply !== 'string')
          moves[i]!.reject(new Error('updateBoard answered fewer replies than moves'));
        else if (reply.startsWith('!')) moves[i]!.reject(new Error(`updateBoard: ${reply.slice(1)}`));
        else moves[i]!.resolve(reply);
      }
    },
    (err) => {
      for (const m of moves) m.reject(err);
    },
  );
}
