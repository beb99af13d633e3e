import pino from 'pino';

export type Logger = pino.Logger;

/**
 * JSON logs; API keys and secrets are redacted wherever they appear in a logged object (at the top
 * level, one level down, or in the headers of a logged request or error). `destination` defaults
 * to stdout (tests pass an in-memory stream).
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'laurel' },
      redact: {
        paths: [
          'req.headers["x-api-key"]',
          'headers["x-api-key"]',
          '*.headers["x-api-key"]',
          'key',
          'secret',
          'apiKey',
          '*.key',
          '*.secret',
          '*.apiKey',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
