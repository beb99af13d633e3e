import type { Deps } from '../deps';
import { HistoryWriter } from './history-writer';

export interface Workers {
  historyWriter: HistoryWriter;
  stop(): Promise<void>;
}

/** Starts the background workers of this process (history writer; scheduler and webhooks join it). */
export function startWorkers(deps: Deps): Workers {
  const historyWriter = new HistoryWriter(deps);
  historyWriter.start();
  return {
    historyWriter,
    async stop() {
      await historyWriter.stop();
    },
  };
}
