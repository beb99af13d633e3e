import type { Deps } from '../../src/deps';

/**
 * Adds an outbox record dated `ms` that no writer has taken, for the lag's gauges and warnings: stream
 * ids only grow, so it goes into the first outbox stream once drained (the caller drains it), whose
 * last id is set back first (XSETID; a Cluster's shard 0 may have no stream yet). Returns its
 * stream and id.
 */
export async function addStaleOutboxRecord(
  deps: Deps,
  ms: number,
  fields: string[],
): Promise<{ stream: string; id: string }> {
  const stream = deps.keys.outboxes[0]!;
  if ((await deps.redis.xlen(stream)) > 0) throw new Error(`${stream} is not drained`);
  await deps.redis.xsetid(stream, `${ms - 1}-0`).catch(() => {});
  const id = (await deps.redis.xadd(stream, `${ms}-0`, ...fields))!;
  return { stream, id };
}
