/** What the guard logs with (a pino Logger is one). */
export interface GuardLogger {
  warn(obj: object, msg: string): void;
  fatal(obj: object, msg: string): void;
}

/**
 * postgres.js fetches the array types on every new connection without awaiting the query
 * (connection.js fetchArrayTypes, called from its ReadyForQuery handler): a connection dropped during
 * that query (Postgres restarting, a network cut while a pool reconnects) rejects a promise nobody
 * holds. The pool reconnects by itself at the next query; only the rejection is left over.
 */
export function isTypeFetchDrop(err: unknown): boolean {
  const e = err as { code?: unknown; query?: unknown } | null;
  return (
    typeof e?.code === 'string' &&
    /^CONNECTION_(CLOSED|ENDED|DESTROYED)$|^CONNECT_TIMEOUT$/.test(e.code) &&
    typeof e.query === 'string' &&
    e.query.includes('pg_catalog.pg_type')
  );
}

/**
 * What a process does with a rejection nobody handled: the postgres.js type fetch's dropped
 * connection is logged and survived; anything else is a bug, logged and fatal (as Node's default).
 */
export function onUnhandledRejection(err: unknown, logger: GuardLogger, exit: (code: number) => void): void {
  if (isTypeFetchDrop(err)) {
    logger.warn({ err }, 'Postgres connection dropped while its types were being read; the pool reconnects');
    return;
  }
  logger.fatal({ err }, 'unhandled rejection');
  exit(1);
}

/** Installs onUnhandledRejection for this process. */
export function installProcessGuards(logger: GuardLogger): void {
  process.on('unhandledRejection', (err) => onUnhandledRejection(err, logger, (code) => process.exit(code)));
}
