import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import { AppError } from '../../errors';
import type { AppEnv } from '../../app-env';

export const tooLarge = (maxSize: number) =>
  new AppError('PAYLOAD_TOO_LARGE', `Request body is larger than ${maxSize} bytes`);

const aborted = () => new AppError('BAD_REQUEST', 'Request body was cut off: the connection closed');

const BODYLESS = new Set(['GET', 'HEAD', 'OPTIONS', 'DELETE']);

/**
 * 413 before authentication (application-api §5.3): from a declared Content-Length at once; a body
 * without one (chunked, or an in-process request) is read here, within the limit, and kept for the
 * route. Unlike Hono's bodyLimit it never builds a WHATWG Request on @hono/node-server. Synchronous
 * when the request declares its length (the usual case).
 */
export function checkBodyLimit(c: Context<AppEnv>, maxSize: number): Promise<void> | undefined {
  c.set('bodyLimit', maxSize);
  const declared = c.req.header('content-length');
  if (declared !== undefined) {
    if (Number(declared) > maxSize) throw tooLarge(maxSize);
    return undefined;
  }
  if (BODYLESS.has(c.req.method)) return undefined;
  return readBody(c).then((body) => {
    c.set('rawBody', body);
  });
}

/**
 * The raw request body, read once. Behind @hono/node-server it comes straight from Node's request
 * stream; elsewhere through Hono. Reading stops with 413 as soon as the limit is passed.
 */
export async function readBody(c: Context): Promise<Uint8Array> {
  const kept = c.get('rawBody') as Uint8Array | undefined;
  if (kept) return kept;
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const limit = (c.get('bodyLimit') as number | undefined) ?? Number.POSITIVE_INFINITY;
  if (!incoming || incoming.readableDidRead) {
    const whole = new Uint8Array(await c.req.arrayBuffer());
    if (whole.byteLength > limit) throw tooLarge(limit);
    return whole;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of incoming as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) throw tooLarge(limit);
      chunks.push(chunk);
    }
  } catch (err) {
    // The client hung up before sending its whole body (Node's 'aborted', code ECONNRESET): the
    // client's doing, not an outage of ours, so not a 503 logged as 'infrastructure unavailable'.
    if (!(err instanceof AppError) && incoming.readableAborted) throw aborted();
    throw err;
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}
