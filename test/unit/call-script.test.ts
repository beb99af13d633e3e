import { describe, expect, it } from 'vitest';
import type { RedisClient } from '../../src/redis/client';
import { callScript } from '../../src/services/user-op';

/** A client whose status the test sets; callScript only reads `status`. */
const client = (status: string) => ({ redis: { status } as unknown as RedisClient });
const refused = () =>
  Promise.reject(new Error("Stream isn't writeable and enableOfflineQueue options is false"));
const closed = () => Promise.reject(new Error('Connection is closed.'));

describe('callScript', () => {
  it('answers 503 at once when the client is not ready', async () => {
    let calls = 0;
    const call = () => {
      calls++;
      return Promise.resolve('ok');
    };
    await expect(callScript(client('reconnecting'), call)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(calls).toBe(0);
  });

  it('answers 503 at once when a first call is refused unsent (socket ended, status still ready)', async () => {
    let calls = 0;
    const started = Date.now();
    await expect(
      callScript(client('ready'), () => {
        calls++;
        return refused();
      }),
    ).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(calls).toBe(1);
    expect(Date.now() - started).toBeLessThan(100);
  });

  it('retries a call lost in flight on a timer, never in a microtask loop that holds the process', async () => {
    // In flight when the connection dropped; then refused unsent (without I/O) while the client
    // still reads 'ready'; then Redis answers again. On a microtask loop, the timer below could not
    // fire until the retries ended, and the refusals would number in the hundreds of thousands.
    const deps = client('ready');
    const until = Date.now() + 300;
    let calls = 0;
    let timerFiredDuringRetries = false;
    setTimeout(() => {
      timerFiredDuringRetries = Date.now() < until;
    }, 20);
    const answer = await callScript(deps, () => {
      calls++;
      if (calls === 1) return closed();
      return Date.now() < until ? refused() : Promise.resolve('committed');
    });
    expect(answer).toBe('committed');
    expect(timerFiredDuringRetries).toBe(true);
    expect(calls).toBeLessThan(12);
  });

  it('waits for the client to be ready again before retrying, and gives up after 5 s', async () => {
    const deps = client('ready');
    let calls = 0;
    setTimeout(() => {
      deps.redis = { status: 'reconnecting' } as unknown as RedisClient;
    }, 0);
    const started = Date.now();
    await expect(
      callScript(deps, () => {
        calls++;
        return closed();
      }),
    ).rejects.toThrow('Connection is closed.');
    expect(calls).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(5000);
  }, 10_000);

  it('passes script errors through without retrying', async () => {
    let calls = 0;
    await expect(
      callScript(client('ready'), () => {
        calls++;
        return Promise.reject(new Error('ERR something in the script'));
      }),
    ).rejects.toThrow('ERR something in the script');
    expect(calls).toBe(1);
  });
});
