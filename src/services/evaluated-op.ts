/**
 * Single events evaluated in this process (src/engine/evaluate-event.ts) instead of in Redis: the
 * user's state is read (lua/commitUserOp.lua "read"), the event evaluated here, and its writes
 * committed by lua/commitUserOp.lua "commit", which applies them only if the user's seq is still the
 * one read (any op of the user moves it). Redis then runs the writes and the fused board moves only,
 * not the evaluation. An event the evaluation does not cover, or whose user changed in between,
 * answers null: the caller applies it with lua/applyUserOp.lua, as it would have anyway.
 */
import { type EventState, type EventWrites, evaluateEvent } from '../engine/evaluate-event';
import type { Plan } from '../engine/plan';
import type { RedisClient } from '../redis/client';
import { MAX_OPS_PER_CALL, PerTurn, settleReplies, type Waiting } from '../redis/per-turn';
import type { UserScriptContext, UserScriptInput } from '../redis/user-script';

export interface EvaluatedCall {
  plan: Plan;
  input: UserScriptInput;
  context: UserScriptContext;
  /** lua/applyUserOp.lua's KEYS for the op: its own, the fused boards', the older idempotency buckets. */
  keys: string[];
  /** The previous idempotency bucket (with a window), read for a remembered key. */
  previousBucket: string | undefined;
  /** The op's wire reference (ARGV[3] of the user script), asked for only when the op has level news. */
  wire: () => string | Promise<string>;
}

/** One op's part of a gathered call: its keys and its arguments (without the mode). */
interface Part<R> extends Waiting<R> {
  keys: string[];
  args: string[];
}

/**
 * The reads, and the commits, a process has within one turn of its event loop travel in one call of
 * lua/commitUserOp.lua ("readMany", "commitMany"): per client, one queue of each.
 */
const turns = new WeakMap<
  RedisClient,
  { reads: PerTurn<string, Part<ReadReply>>; commits: PerTurn<string, Part<string>> }
>();

type ReadReply = [string[], string | null, string];

function turnsOf(redis: RedisClient) {
  let t = turns.get(redis);
  if (!t) {
    const send =
      <R>(mode: string, counts: (p: Part<R>) => string[]) =>
      (parts: Array<Part<R>>) => {
        const keys = parts.flatMap((p) => p.keys);
        const args = parts.flatMap((p) => [...counts(p), ...p.args]);
        (redis.commitUserOp(keys.length, ...keys, mode, ...args) as Promise<unknown>).then(
          (replies) => settleReplies<R>('commitUserOp', parts, replies),
          (err) => {
            for (const p of parts) p.reject(err);
          },
        );
      };
    t = {
      reads: new PerTurn(
        MAX_OPS_PER_CALL,
        send<ReadReply>('readMany', (p) => [String(p.keys.length)]),
      ),
      commits: new PerTurn(
        MAX_OPS_PER_CALL,
        send<string>('commitMany', (p) => [String(p.keys.length), String(p.args.length)]),
      ),
    };
    turns.set(redis, t);
  }
  return t;
}

/** The user's state as the user script would read it for the op. */
async function readState(redis: RedisClient, c: EvaluatedCall): Promise<EventState> {
  const [user, idem, , , , hist] = c.keys as [string, string, string, string, string, string];
  const keys = c.previousBucket ? [user, idem, hist, c.previousBucket] : [user, idem, hist];
  const idemIn = c.input.idem;
  const args = [idemIn?.f ?? '', String(idemIn?.win ?? 0), String(c.input.now)];
  const [flat, history, remembered] = await new Promise<ReadReply>((resolve, reject) =>
    turnsOf(redis).reads.add('', { keys, args, resolve, reject }),
  );
  const hash: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) hash[flat[i]!] = flat[i + 1]!;
  return { hash, hist: history, idemRemembered: remembered === '1' };
}

/**
 * The commit's arguments after its mode (lua/commitUserOp.lua "commit"), but the wire reference: the
 * seq read, the writes as one JSON object, the record's head and the outbox extra. (Text with a lone
 * surrogate, which cjson would refuse, never reaches it: src/http/validate.ts refuses the request.)
 */
function commitArgs(c: EvaluatedCall, ev: EventWrites, seqRead: string): string[] {
  const { input, context } = c;
  const idem = input.idem;
  const moves: Array<[number, number, number, number, string]> = [];
  for (const f of context.fuse ?? []) {
    const value = ev.boardValues.get(f.b - 1);
    if (value !== undefined) moves.push([f.ki, f.kn, value, f.max, context.boards[f.b - 1]!.id]);
  }
  const put: string[] = [];
  for (const [f, v] of ev.puts) put.push(f, v);
  const { boards, ...head } = ev.record as { boards: Array<{ id: string; run: string; value: string }> };
  const writes = JSON.stringify({
    u: input.user.id,
    now: String(input.now),
    c: ev.created || undefined,
    seq: ev.record.seq,
    ttl: String(input.markMs ?? 10_000),
    i: ev.idem
      ? {
          f: ev.idem.field,
          d: idem?.d || undefined,
          id: input.eventId,
          win: idem?.win ?? 0,
          exp: idem?.exp ?? 0,
          old: idem?.oldKi,
        }
      : undefined,
    h: ev.hist === null ? undefined : ev.hist === false ? 'del' : 'set',
    hv: typeof ev.hist === 'string' ? ev.hist : undefined,
    rm: [...(ev.premoved ?? []), ...(ev.streakLegacy ?? []), ...(ev.streakStaleHist ? ['s:hist'] : [])],
    put,
    // KEYS[6 + i] (1-based) is the award list of plan.systems[i].
    aw: ev.awardLists.map((l) => [7 + l.system, ...l.entries]),
    mv: moves,
    bd: boards.map((b) => [b.id, b.run, b.value]),
  });
  return [seqRead, writes, JSON.stringify(head).slice(0, -1), JSON.stringify(ev.extra).slice(0, -1)];
}

/** The op's record, as lua/applyUserOp.lua would answer it, or null: leave the op to the user script. */
export async function evaluatedCall(redis: RedisClient, c: EvaluatedCall): Promise<string | null> {
  const state = await readState(redis, c);
  const seqRead = state.hash.seq ?? '';
  // Whatever the evaluation cannot take (a state it cannot read, say) is the user script's to apply
  // or refuse, as it would have been without the evaluation.
  let ev: ReturnType<typeof evaluateEvent>;
  try {
    ev = evaluateEvent(c.plan, c.input, c.context, state);
  } catch {
    return null;
  }
  if (ev.kind !== 'writes') return null;
  const args = commitArgs(c, ev, seqRead);
  args.push(ev.levelNews ? await c.wire() : '');
  const reply = await new Promise<string>((resolve, reject) =>
    turnsOf(redis).commits.add('', { keys: c.keys, args, resolve, reject }),
  );
  return reply === 'STALE' ? null : reply;
}
