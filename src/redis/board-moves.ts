import { boardMoves } from '../metrics/registry';
import type { RedisClient } from './client';
import { PerTurn, type Waiting } from './per-turn';

/**
 * Board moves made outside the user script (every board on a Cluster, boards with breakdowns or ranked
 * by streak on a single Redis, the history writer's repairs), gathered per board: the moves a process
 * has for one board within one turn of its event loop travel in one lua/updateBoard.lua call, applied
 * one after the other as separate calls would be. Under load that is one round trip, one script call
 * and one slot lookup for several events instead of one each, on the board's slot, which every event
 * moving the board reaches (on a Cluster the busiest slot).
 */

/** A board's keys for one move (lua/updateBoard.lua KEYS[1..5]). */
export interface BoardMoveKeys {
  members: string;
  ranking: string;
  version: string;
  changes: string;
  /** Streak boards only: the ranking's expiry index. */
  expiries?: string;
}

/** A move's reply (lua/lib/board.lua): ranks and values as Redis holds them, or the group to call again with. */
export interface BoardReply {
  prevRank?: number;
  rank?: number;
  prevValue?: string;
  value?: string;
  threshold?: string;
  stale?: boolean;
  evicted?: string;
  err?: string;
  group?: string;
}

interface Pending extends Waiting<BoardReply> {
  keys: BoardMoveKeys;
  /** lua/updateBoard.lua's 8 ARGV of the move. */
  args: string[];
}

/** At most this many moves per call, so one call never holds Redis for long. */
export const MAX_MOVES_PER_CALL = 32;

/** Per client, the moves of this turn by board (its version key). */
const gathered = new WeakMap<RedisClient, PerTurn<string, Pending>>();

/** One move on a board: its reply, as lua/updateBoard.lua answers a single move. */
export function moveOnBoard(redis: RedisClient, keys: BoardMoveKeys, args: string[]): Promise<BoardReply> {
  let perTurn = gathered.get(redis);
  if (!perTurn) {
    perTurn = new PerTurn(MAX_MOVES_PER_CALL, (moves) => send(redis, moves));
    gathered.set(redis, perTurn);
  }
  const turn = perTurn;
  return new Promise((resolve, reject) => {
    const move = { keys, args, resolve, reject };
    // A packed move ends "|<group>|<userId>": a group holding '|' (never one of groupKey's) goes alone.
    if (args[4]!.includes('|')) send(redis, [move]);
    else turn.add(keys.version, move);
  });
}

/**
 * One call for moves on one board (they share its version and change stream keys). Several moves travel
 * packed, one argument each, with every members hash and ranking key once (lua/updateBoard.lua), and
 * come back as one JSON array: on a Cluster every event's moves take this path, and the moves made
 * most of the API's excess over a single Redis, with ten arguments and a reply string each
 * (bench/HISTORY.md, 2026-11-28, the sixth session).
 */
function send(redis: RedisClient, moves: Pending[]): void {
  boardMoves.inc(moves.length);
  const { keys: first, args: firstArgs } = moves[0]!;
  if (moves.length === 1) {
    const keys = [first.members, first.ranking, first.version, first.changes];
    if (first.expiries !== undefined) keys.push(first.expiries);
    redis
      .updateBoard(keys.length, ...keys, ...firstArgs)
      .then((reply) => moves[0]!.resolve(JSON.parse(reply) as BoardReply), moves[0]!.reject);
    return;
  }
  const keys = [first.version, first.changes];
  const index = new Map<string, number>();
  const at = (key: string) => {
    let i = index.get(key);
    if (i === undefined) {
      i = keys.push(key);
      index.set(key, i);
    }
    return i;
  };
  const args = [''];
  for (const { keys: k, args: a } of moves) {
    // a: userId, value, seq, now, group, max, expires, streak (lua/updateBoard.lua ARGV[1..8]); a
    // streak move carries its expiry index's KEYS index instead of the flag.
    const x = k.expiries === undefined ? 0 : at(k.expiries);
    args.push(
      `${at(k.members)},${at(k.ranking)},${a[1]},${a[2]},${a[3]},${a[6]},${a[5]},${x}|${a[4]}|${a[0]}`,
    );
  }
  redis.updateBoard(keys.length, ...keys, ...args).then(
    (reply) => {
      const list = JSON.parse(reply) as Array<BoardReply & { fail?: string }>;
      moves.forEach((m, i) => {
        const r = list[i];
        if (!r) m.reject(new Error('updateBoard answered fewer replies than it was sent'));
        else if (r.fail !== undefined) m.reject(new Error(`updateBoard: ${r.fail}`));
        else m.resolve(r);
      });
    },
    (err) => {
      for (const m of moves) m.reject(err);
    },
  );
}
