import type { Deps } from '../deps';

export interface Workers {
  stop(): Promise<void>;
}

/** Starts the background workers of this process (history writer, scheduler, webhooks). */
export function startWorkers(deps: Deps): Workers {
  const stops: Array<() => Promise<void>> = [];
  void deps;
  return {
    async stop() {
      await Promise.all(stops.map((s) => s()));
    },
  };
}
