import { randomUUID } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';

/** Every response carries X-Request-Id (the caller's, when it sent a sane one). */
export const requestId: MiddlewareHandler = async (c, next) => {
  const given = c.req.header('x-request-id');
  const id = given && /^[A-Za-z0-9._-]{1,128}$/.test(given) ? given : randomUUID();
  c.set('requestId', id);
  c.header('X-Request-Id', id);
  await next();
};
