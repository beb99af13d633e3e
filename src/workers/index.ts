import type { Deps } from '../deps';
import { BatchResumer } from './batches';
import { HistoryWriter } from './history-writer';
import { Scheduler, scheduleHook } from './scheduler';
import { webhookEventsHook } from './webhook-events';
import { WebhookDispatcher } from './webhooks';

export interface Workers {
  historyWriter: HistoryWriter;
  scheduler: Scheduler;
  webhooks: WebhookDispatcher;
  batches: BatchResumer;
  stop(): Promise<void>;
}

/** The history writer's hooks: webhook events and due-work indexes, committed with the history. */
export const historyHooks = [webhookEventsHook, scheduleHook];

/** Starts the background workers of this process: history writer, scheduler, webhook dispatcher,
 * event-batch resumer. */
export function startWorkers(deps: Deps): Workers {
  const historyWriter = new HistoryWriter(deps, { hooks: historyHooks });
  const scheduler = new Scheduler(deps);
  const webhooks = new WebhookDispatcher(deps);
  const batches = new BatchResumer(deps);
  historyWriter.start();
  batches.start();
  scheduler.start();
  webhooks.start();
  return {
    historyWriter,
    scheduler,
    webhooks,
    batches,
    async stop() {
      await Promise.all([scheduler.stop(), webhooks.stop(), batches.stop()]);
      await historyWriter.stop();
    },
  };
}
