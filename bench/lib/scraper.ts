/** A Prometheus stand-in for the bench: GETs every /metrics URL once a second while a scenario runs. */
export interface ScrapeStats {
  scrapes: number;
  failures: number;
  /** Mean and slowest scrape, ms. */
  meanMs: number;
  maxMs: number;
  /** Size of the last scrape (all URLs), bytes. */
  bytes: number;
}

export function startScraper(urls: string[], intervalMs = 1000): { stop(): Promise<ScrapeStats> } {
  const times: number[] = [];
  let failures = 0;
  let bytes = 0;
  const inFlight = new Set<Promise<void>>();
  const once = async () => {
    let size = 0;
    for (const url of urls) {
      const started = performance.now();
      try {
        const res = await fetch(url);
        size += (await res.text()).length;
        if (res.ok) times.push(performance.now() - started);
        else failures++;
      } catch {
        failures++;
      }
    }
    bytes = size;
  };
  const timer = setInterval(() => {
    const p = once().finally(() => inFlight.delete(p));
    inFlight.add(p);
  }, intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all(inFlight);
      return {
        scrapes: times.length,
        failures,
        meanMs: times.length ? Math.round((times.reduce((a, b) => a + b, 0) / times.length) * 10) / 10 : 0,
        maxMs: times.length ? Math.round(Math.max(...times) * 10) / 10 : 0,
        bytes,
      };
    },
  };
}
