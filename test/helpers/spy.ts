import { vi } from 'vitest';

/**
 * Spies on a method of a Redis client and returns the arguments of the calls made on the client
 * itself. ioredis's auto-pipeline calls a script command a second time on its pipeline object; that
 * is the same command, not another one, so it is left out.
 */
export function spyOwnCalls(target: object, method: string) {
  const spy = vi.spyOn(target as Record<string, (...args: unknown[]) => unknown>, method);
  return {
    calls: () => spy.mock.calls.filter((_, i) => spy.mock.contexts[i] === target),
    restore: () => spy.mockRestore(),
  };
}
