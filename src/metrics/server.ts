// /metrics: its own HTTP server on METRICS_PORT (127.0.0.1 by default), never the public port, with
// an optional bearer token (METRICS_TOKEN). It is served by the primary process: with API_PROCESSES
// > 1 the primary asks each API process it forked for its metrics over the cluster IPC channel and
// aggregates them with its own (prom-client's AggregatorRegistry.aggregate: counters and histograms
// summed, scrape-time gauges taken from the primary), so one scrape covers every process.
import cluster, { type Worker } from 'node:cluster';
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { Deps } from '../deps';
import { updateStateGauges } from './collect';
import { registry, scrapeProcesses } from './registry';

type MetricsJson = Array<MetricObjectWithValues<MetricValue<string>>>;

const REQUEST = 'laurel:metrics-request';
const REPLY = 'laurel:metrics-reply';
/** An API process that does not answer within this time is left out of the scrape. */
const PROCESS_TIMEOUT_MS = 2000;

interface Message {
  type?: string;
  id?: number;
  metrics?: MetricsJson;
}

/** In an API process forked by the primary: answers the primary's requests for this process's metrics. */
export function answerMetricsRequests(): void {
  process.on('message', (msg: Message) => {
    if (msg?.type !== REQUEST) return;
    registry.getMetricsAsJSON().then(
      (metrics) => process.send?.({ type: REPLY, id: msg.id, metrics }),
      () => process.send?.({ type: REPLY, id: msg.id, metrics: [] }),
    );
  });
}

let nextId = 0;

function askProcess(worker: Worker): Promise<MetricsJson | null> {
  const id = ++nextId;
  return new Promise((resolve) => {
    const onMessage = (msg: Message) => {
      if (msg?.type !== REPLY || msg.id !== id) return;
      clearTimeout(timer);
      worker.off('message', onMessage);
      resolve(msg.metrics ?? null);
    };
    const timer = setTimeout(() => {
      worker.off('message', onMessage);
      resolve(null);
    }, PROCESS_TIMEOUT_MS);
    worker.on('message', onMessage);
    worker.send({ type: REQUEST, id });
  });
}

export interface RenderOptions {
  /** Read the shared state (outbox, scheduler, webhooks, Redis and Postgres probes) for the gauges. */
  collect: boolean;
  /** Include the API processes this primary forked. */
  cluster: boolean;
  /** Reuse shared state read this recently (default REUSE_MS, 5 s; tests ask for 0). */
  reuseMs?: number;
}

/** The Prometheus text of this process (and, with `cluster`, of every API process it forked). */
export async function renderMetrics(deps: Deps, opts: RenderOptions): Promise<string> {
  if (opts.collect) await updateStateGauges(deps, opts.reuseMs);
  if (!opts.cluster) {
    scrapeProcesses.set(1);
    return registry.metrics();
  }
  const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => !!w?.isConnected());
  const others = (await Promise.all(workers.map(askProcess))).filter((m): m is MetricsJson => m !== null);
  scrapeProcesses.set(1 + others.length);
  const own = (await registry.getMetricsAsJSON()) as MetricsJson;
  return AggregatorRegistry.aggregate([own, ...others]).metrics();
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** True when the request carries the token (compared in constant time), or no token is configured. */
function authorised(req: IncomingMessage, token: string | undefined): boolean {
  if (!token) return true;
  const header = req.headers.authorization ?? '';
  const given = header.startsWith('Bearer ') ? header.slice(7).trim() : '';
  return timingSafeEqual(digest(given), digest(token));
}

/** The metrics port's request handler: GET /metrics only. */
export function metricsHandler(deps: Deps, opts: RenderOptions) {
  const token = deps.config.METRICS_TOKEN;
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?')[0];
    const reply = (status: number, body: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...headers });
      res.end(body);
    };
    if (path !== '/metrics') return reply(404, 'Not found\n');
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return reply(405, 'Method not allowed\n', { Allow: 'GET' });
    if (!authorised(req, token)) {
      return reply(401, 'Unauthorized\n', { 'WWW-Authenticate': 'Bearer realm="laurel-metrics"' });
    }
    renderMetrics(deps, opts).then(
      (text) => {
        res.writeHead(200, { 'Content-Type': registry.contentType });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: Error) => {
        deps.logger.error({ err: err.message }, 'metrics scrape failed');
        reply(500, 'Metrics unavailable\n');
      },
    );
  };
}

/**
 * Serves /metrics on METRICS_HOST:METRICS_PORT. A port already in use is logged and left alone: the
 * API keeps serving without metrics rather than refusing to start.
 */
export function startMetricsServer(deps: Deps, opts: RenderOptions): Server {
  const { METRICS_PORT: port, METRICS_HOST: host } = deps.config;
  const server = createServer(metricsHandler(deps, opts));
  server.on('error', (err: NodeJS.ErrnoException) =>
    deps.logger.error({ err: err.message, port, host }, 'metrics port not available; /metrics is not served'),
  );
  server.listen(port, host, () => deps.logger.info({ port, host }, 'metrics listening'));
  return server;
}
