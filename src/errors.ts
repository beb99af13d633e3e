/** Every error code Laurel answers with, mapped to its HTTP status in one place. */
export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  PAYLOAD_TOO_LARGE: 413,
  UNPROCESSABLE: 422,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly headers: Record<string, string> | undefined;
  constructor(code: ErrorCode, message: string, headers?: Record<string, string>) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.headers = headers;
  }
  get status(): (typeof ERROR_STATUS)[ErrorCode] {
    return ERROR_STATUS[this.code];
  }
}

export const badRequest = (message: string) => new AppError('BAD_REQUEST', message);
export const unprocessable = (message: string) => new AppError('UNPROCESSABLE', message);
export const notFound = (message = 'Not found') => new AppError('NOT_FOUND', message);
/**
 * `Webhook endpoint not found: <id>`: a 404 naming what was asked for (at most 100 characters of
 * it). Not for the application API, whose not-found messages are exact forms (contract §5.4).
 */
export const notFoundNamed = (what: string, id: string) =>
  notFound(`${what} not found: ${id.length > 100 ? `${id.slice(0, 100)}…` : id}`);
export const unauthorized = (message: string) => new AppError('UNAUTHORIZED', message);
export const unavailable = () => new AppError('UNAVAILABLE', 'Service unavailable');

/** `Invalid attribute keys: a, b.`: the one exact message clients may parse (contract §5.4). */
export const invalidAttributeKeys = (keys: string[]) =>
  unprocessable(`Invalid attribute keys: ${keys.join(', ')}.`);

const INFRA_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'CONNECTION_CLOSED',
  'CONNECT_TIMEOUT',
]);

/** Redis or Postgres out of reach (answered 503), looking through wrapped causes. */
export function isInfrastructureError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.cause instanceof Error && isInfrastructureError(err.cause)) return true;
  const code = (err as { code?: string }).code;
  if (code && INFRA_CODES.has(code)) return true;
  if (code?.startsWith('08') || code === '57P01' || code === '57P03') return true; // Postgres connection classes
  return /Connection is closed|max retries per request|Stream isn't writeable|ECONNREFUSED|CLUSTERDOWN|LOADING|Failed to refresh slots/i.test(
    err.message,
  );
}
