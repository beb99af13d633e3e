import { randomUUID } from 'node:crypto';
import type { Context } from 'hono';
import { requestId as honoRequestId } from 'hono/request-id';

/** A caller's id is kept when it is 1 to 128 characters of letters, digits, dot, underscore or dash. */
const SANE_ID = /^[A-Za-z0-9._-]{1,128}$/;

const callerIdOrNew = (c: Context) => {
  const given = c.req.header('x-request-id');
  return given && SANE_ID.test(given) ? given : randomUUID();
};

/**
 * Every response carries X-Request-Id (the caller's, when it sent a sane one); handlers and the error
 * handler read it as `c.get('requestId')`. Hono's own acceptance rule differs from ours (no dots, but
 * `=`), so `limitLength: 0` makes it hand every id to the generator, which applies ours.
 */
export const requestId = honoRequestId({
  headerName: 'X-Request-Id',
  limitLength: 0,
  generator: callerIdOrNew,
});
