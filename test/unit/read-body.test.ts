import { Readable } from 'node:stream';
import type { Context } from 'hono';
import { describe, expect, it } from 'vitest';
import { isInfrastructureError } from '../../src/errors';
import { readBody } from '../../src/http/middleware/body-limit';

/** The parts of a Hono context readBody uses, behind @hono/node-server (the body is Node's stream). */
function context(incoming: Readable, limit = 1024): Context {
  const vars: Record<string, unknown> = { bodyLimit: limit };
  return { get: (k: string) => vars[k], env: { incoming } } as unknown as Context;
}

describe('readBody', () => {
  it('reads a streamed body', async () => {
    const body = await readBody(context(Readable.from([Buffer.from('{"a":'), Buffer.from('1}')])));
    expect(Buffer.from(body).toString()).toBe('{"a":1}');
  });

  it('answers 413 once the limit is passed', async () => {
    const big = Readable.from([Buffer.alloc(600), Buffer.alloc(600)]);
    await expect(readBody(context(big))).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
  });

  it('answers 400, not an infrastructure 503, when the client hangs up mid-body', async () => {
    // What Node's IncomingMessage does when the connection closes before the body ends.
    const incoming = new Readable({ read() {} });
    incoming.push(Buffer.from('{"user":{"id":'));
    setTimeout(() => incoming.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })), 5);
    const err = await readBody(context(incoming)).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'BAD_REQUEST',
      message: 'Request body was cut off: the connection closed',
    });
    expect(isInfrastructureError(err)).toBe(false);
  });
});
