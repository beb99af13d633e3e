import calculateSlot from 'cluster-key-slot';
import type { Cluster } from 'ioredis';
import type { TestServer } from './server';
import { spyOwnCalls } from './spy';

/**
 * The applyUserOp calls made while `run` ran (src/services/user-op.ts gathered): for each, the ids of
 * the users of the ops it carried (each op's input is a JSON string of its own, {"op":...,"user":...}).
 */
export async function usersPerCall(t: TestServer, run: () => Promise<unknown>): Promise<string[][]> {
  const calls = spyOwnCalls(t.deps.redis, 'applyUserOp');
  try {
    await run();
    return calls.calls().map((args) =>
      args
        .map(String)
        .filter((a) => a.startsWith('{"op":'))
        .map((a) => (JSON.parse(a) as { user: { id: string } }).user.id),
    );
  } finally {
    calls.restore();
  }
}

/** The Cluster slot of a user's keys. */
export const userSlot = (t: TestServer, user: string) => calculateSlot(t.deps.keys.user(user).hash);

/** The master ("host:port") that serves a user's keys, as the Cluster client's slot table says. */
export const userMaster = (t: TestServer, user: string) =>
  (t.deps.redis as Cluster).slots[userSlot(t, user)]![0]!;
