import { createServer, type Server, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { corkPerTurn } from '../../src/redis/client';

// The Cluster client's node sockets (src/redis/client.ts): the writes of one turn of the event loop
// leave together, in one write of the socket, when the turn's I/O callbacks have run.

let server: Server;
let port: number;
const received: Buffer[] = [];

beforeAll(async () => {
  server = createServer((s) => s.on('data', (d) => received.push(d)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});
afterAll(async () => new Promise<void>((r) => server.close(() => r())));

async function connected(): Promise<Socket> {
  const socket = new Socket();
  await new Promise<void>((r) => socket.connect(port, '127.0.0.1', r));
  return socket;
}

const turn = () => new Promise((r) => setImmediate(r));

describe('corkPerTurn', () => {
  it('sends the writes of one turn in one write, and those of the next turn in another', async () => {
    const socket = await connected();
    corkPerTurn(socket);
    corkPerTurn(socket); // set up once
    const single = vi.spyOn(socket as unknown as { _write: () => void }, '_write');
    const several = vi.spyOn(socket as unknown as { _writev: () => void }, '_writev');
    socket.write('a');
    socket.write('b');
    socket.write('c');
    expect(several).not.toHaveBeenCalled();
    await turn();
    expect(single).not.toHaveBeenCalled();
    expect(several).toHaveBeenCalledTimes(1);
    expect((several.mock.calls[0] as unknown[])[0]).toHaveLength(3);
    socket.write('d');
    socket.write('e');
    await turn();
    expect(several).toHaveBeenCalledTimes(2);
    await vi.waitFor(() => expect(Buffer.concat(received).toString()).toBe('abcde'));
    socket.destroy();
  });
});
