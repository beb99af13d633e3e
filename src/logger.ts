import pino from 'pino';

export type Logger = pino.Logger;

/** JSON logs; API keys and secrets are redacted wherever they appear in a logged object. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'laurel' },
    redact: {
      paths: ['req.headers["x-api-key"]', 'headers["x-api-key"]', 'key', 'secret', '*.key', '*.secret'],
      censor: '[redacted]',
    },
  });
}
