import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Runner } from '../../src/workers/runner';

// Fake timers: the waits are exact, so the tests say what the runner waits, not roughly.
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.restoreAllMocks(); // the timer spies first: they wrap the fake timers
  vi.useRealTimers();
});
const advance = (ms: number) => vi.advanceTimersByTimeAsync(ms);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A wait no other timer in the process uses, so the runner's waits can be told apart. */
const LONG = 9_973;
/**
 * Counts the runner's waits of `LONG` ms left pending: set and never cleared. Not `vi.getTimerCount()`:
 * test files share a process, and another file's clients (Redis, Postgres) may set timers of their own
 * while this file's fake timers are installed.
 */
function watchLongWaits(): () => number {
  const set = vi.spyOn(globalThis, 'setTimeout');
  const clear = vi.spyOn(globalThis, 'clearTimeout');
  return () => {
    const cleared = new Set(clear.mock.calls.map((c) => c[0]));
    return set.mock.calls.filter((c, i) => c[1] === LONG && !cleared.has(set.mock.results[i]!.value)).length;
  };
}

/** A runner over a scripted pass: each call records when it started and runs the next step. */
class Scripted extends Runner {
  readonly starts: number[] = [];
  readonly errors: unknown[] = [];
  private readonly t0 = Date.now();

  constructor(
    private readonly steps: Array<() => Promise<number>>,
    opts: { backoffMs?: number; maxBackoffMs?: number },
  ) {
    super({
      backoffMs: opts.backoffMs ?? 10,
      maxBackoffMs: opts.maxBackoffMs,
      onError: (err) => this.errors.push(err),
    });
  }

  protected poll(): Promise<number> {
    this.starts.push(Date.now() - this.t0);
    return this.steps[Math.min(this.starts.length - 1, this.steps.length - 1)]!();
  }
}

function scripted(
  steps: Array<() => Promise<number>>,
  opts: { backoffMs?: number; maxBackoffMs?: number } = {},
) {
  const runner = new Scripted(steps, opts);
  return { runner, starts: runner.starts, errors: runner.errors };
}
const fail = (err: Error) => async () => Promise.reject(err);

describe('worker runner', () => {
  it('runs a pass at once, then again after the wait the pass asked for', async () => {
    const { runner, starts } = scripted([async () => 60]);
    runner.start();
    await advance(150);
    await runner.stop();
    expect(starts).toEqual([0, 60, 120]);
  });

  it('runs the next pass at once when a pass asks for no wait', async () => {
    let n = 0;
    const { runner, starts } = scripted([async () => (++n < 5 ? 0 : 10_000)]);
    runner.start();
    await advance(1);
    await runner.stop();
    expect(starts).toEqual([0, 0, 0, 0, 0]);
  });

  it('stops gracefully: the pass in progress finishes, no other starts, the wait is not waited out', async () => {
    let finished = 0;
    const pendingWaits = watchLongWaits();
    const { runner, starts } = scripted([
      async () => {
        await sleep(50);
        finished++;
        return LONG;
      },
    ]);
    runner.start();
    await advance(10);
    expect(runner.running).toBe(true);
    let stopped = false;
    const stopping = runner.stop().then(() => (stopped = true));
    await advance(10);
    expect(stopped).toBe(false); // waits for the pass in progress
    await advance(40);
    await stopping;
    expect(finished).toBe(1);
    expect(runner.running).toBe(false);
    expect(pendingWaits()).toBe(0); // no wait left behind
    await advance(20_000);
    expect(starts).toEqual([0]);
  });

  it('stops during a wait at once', async () => {
    const pendingWaits = watchLongWaits();
    const { runner, starts } = scripted([async () => LONG]);
    runner.start();
    await advance(20);
    expect(pendingWaits()).toBe(1);
    await runner.stop();
    expect(pendingWaits()).toBe(0);
    expect(starts).toEqual([0]);
  });

  it('keeps running after failed passes, doubling the wait after each failure in a row up to the cap', async () => {
    const boom = new Error('backend away');
    const { runner, starts, errors } = scripted(
      [fail(boom), fail(boom), fail(boom), fail(boom), async () => 10_000],
      { backoffMs: 20, maxBackoffMs: 50 },
    );
    runner.start();
    await advance(1000);
    await runner.stop();
    expect(errors).toEqual([boom, boom, boom, boom]);
    // Waits of 20, 40, 50 (the cap), 50 ms.
    expect(starts).toEqual([0, 20, 60, 110, 160]);
  });

  it('keeps the latest error until a pass succeeds, and starts the backoff over after a success', async () => {
    const boom = new Error('once');
    const { runner, starts } = scripted([fail(boom), async () => 0, fail(boom), async () => 10_000], {
      backoffMs: 30,
      maxBackoffMs: 1000,
    });
    runner.start();
    await advance(1);
    expect(runner.lastError).toBe(boom);
    await advance(100);
    expect(runner.lastError).toBeNull();
    await runner.stop();
    // The second failure waits the first backoff again (30 ms), not a doubled one.
    expect(starts).toEqual([0, 30, 30, 60]);
  });

  it('keeps a fixed wait after failures when no cap above the first backoff is given', async () => {
    const { runner, starts } = scripted([fail(new Error('x'))], { backoffMs: 25 });
    runner.start();
    await advance(80);
    await runner.stop();
    expect(starts).toEqual([0, 25, 50, 75]);
  });

  it('runs a pass early when woken during a wait', async () => {
    const { runner, starts } = scripted([async () => 10_000]);
    runner.start();
    await advance(20);
    runner.wake();
    await advance(0);
    expect(starts).toEqual([0, 20]);
    await runner.stop();
  });

  it('runs the next pass without waiting when woken during a pass', async () => {
    let first = true;
    const { runner, starts } = scripted([
      async () => {
        if (first) {
          first = false;
          await sleep(30);
        }
        return 10_000;
      },
    ]);
    runner.start();
    await advance(10);
    runner.wake(); // mid-pass: the work it announces may have come too late for this pass
    await advance(30);
    expect(starts).toEqual([0, 30]);
    await runner.stop();
  });

  it('starts once however often start is called', async () => {
    const { runner, starts } = scripted([async () => 10_000]);
    runner.start();
    runner.start();
    await advance(20);
    await runner.stop();
    expect(starts).toEqual([0]);
  });
});
