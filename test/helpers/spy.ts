import { vi } from 'vitest';

/**
 * Spies on a method of a Redis client and returns the arguments of the calls made on the client
 * itself, not on pipelines or cluster nodes it calls the same method on for the same command.
 */
export function spyOwnCalls(target: object, method: string) {
  const spy = vi.spyOn(target as Record<string, (...args: unknown[]) => unknown>, method);
  return {
    calls: () => spy.mock.calls.filter((_, i) => spy.mock.contexts[i] === target),
    restore: () => spy.mockRestore(),
  };
}
