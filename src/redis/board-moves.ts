import { boardMoves } from '../metrics/registry';
import type { RedisClient } from './client';
import { PerTurn, settleReplies, type Waiting } from './per-turn';

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

interface Pending extends Waiting<string> {
  keys: BoardMoveKeys;
  /** lua/updateBoard.lua's 8 ARGV of the move. */
  args: string[];
}

/** At most this many moves per call, so one call never holds Redis for long. */
export const MAX_MOVES_PER_CALL = 32;

/** Per client, the moves of this turn by board (its version key). */
const gathered = new WeakMap<RedisClient, PerTurn<string, Pending>>();

/** One move on a board: its reply JSON, as lua/updateBoard.lua answers a single move. */
export function moveOnBoard(redis: RedisClient, keys: BoardMoveKeys, args: string[]): Promise<string> {
  let perTurn = gathered.get(redis);
  if (!perTurn) {
    perTurn = new PerTurn(MAX_MOVES_PER_CALL, (moves) => send(redis, moves));
    gathered.set(redis, perTurn);
  }
  const turn = perTurn;
  return new Promise((resolve, reject) => turn.add(keys.version, { keys, args, resolve, reject }));
}

/** One call for moves on one board (they share its version and change stream keys). */
function send(redis: RedisClient, moves: Pending[]): void {
  boardMoves.inc(moves.length);
  const { keys: first, args: firstArgs } = moves[0]!;
  const keys = [first.members, first.ranking, first.version, first.changes];
  if (moves.length === 1) {
    redis
      .updateBoard(4, ...keys, ...firstArgs)
      .then((reply) => moves[0]!.resolve(reply as string), moves[0]!.reject);
    return;
  }
  const args: string[] = [...firstArgs];
  for (let i = 1; i < moves.length; i++) {
    const m = moves[i]!;
    keys.push(m.keys.members, m.keys.ranking);
    for (const a of m.args) args.push(a);
  }
  redis.updateBoard(keys.length, ...keys, ...args).then(
    (replies) => settleReplies('updateBoard', moves, replies),
    (err) => {
      for (const m of moves) m.reject(err);
    },
  );
}
