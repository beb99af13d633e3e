import type { Deps } from '../deps';
import { HistoryWriter } from './history-writer';
import { Scheduler, scheduleHook } from './scheduler';
import { webhookEventsHook } from './webhook-events';
import { WebhookDispatcher } from './webhooks';

export interface Workers {
  historyWriter: HistoryWriter;
  scheduler: Scheduler;
  webhooks: WebhookDispatcher;
  stop(): Promise<void>;
}

/** The history writer's hooks: webhook events and due-work indexes, committed with the history. */
export const historyHooks = [webhookEventsHook, scheduleHook];

/** Starts the background workers of this process: history writer, scheduler, webhook dispatcher. */
export function startWorkers(deps: Deps): Workers {
  const historyWriter = new HistoryWriter(deps, { hooks: historyHooks });
  const scheduler = new Scheduler(deps);
  const webhooks = new WebhookDispatcher(deps);
  historyWriter.start();
  scheduler.start();
  webhooks.start();
  return {
    historyWriter,
    scheduler,
    webhooks,
    async stop() {
      await Promise.all([scheduler.stop(), webhooks.stop()]);
      await historyWriter.stop();
    },
  };
}
