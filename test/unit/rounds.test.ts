import { describe, expect, it } from 'vitest';
import { Rounds } from '../../src/redis/per-turn';

// Rounds (src/redis/per-turn.ts): the calls one turn sends are answered together once the last has
// answered, or `graceMs` after the first; a later turn's calls form a round of their own.

const turn = () => new Promise((r) => setImmediate(r));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Joins `rounds` from a turn of its own: three calls, as a Cluster's three masters. */
async function threeCalls(rounds: Rounds) {
  await turn();
  return [rounds.join(), rounds.join(), rounds.join()];
}

describe('Rounds', () => {
  it('holds each answer of a round until the last call of the round has answered, then hands out all in order', async () => {
    const rounds = new Rounds(10_000);
    const [a, b, c] = await threeCalls(rounds);
    const out: string[] = [];
    a!(() => out.push('a'));
    await turn();
    c!(() => out.push('c'));
    await turn();
    expect(out).toEqual([]);
    b!(() => out.push('b'));
    expect(out).toEqual(['a', 'c', 'b']);
  });

  it('hands out what has answered graceMs after the first answer, and a later answer on its own', async () => {
    const rounds = new Rounds(20);
    const [a, b, c] = await threeCalls(rounds);
    const out: string[] = [];
    a!(() => out.push('a'));
    b!(() => out.push('b'));
    await sleep(5);
    expect(out).toEqual([]);
    await sleep(40);
    expect(out).toEqual(['a', 'b']);
    c!(() => out.push('c'));
    expect(out).toEqual(['a', 'b', 'c']);
  });

  it('starts a new round in a later turn: its calls do not wait for the earlier round', async () => {
    const rounds = new Rounds(30);
    const early = await threeCalls(rounds);
    const later = await threeCalls(rounds);
    const out: string[] = [];
    early[0]!(() => out.push('early 0'));
    for (const [i, call] of later.entries()) call!(() => out.push(`later ${i}`));
    expect(out).toEqual(['later 0', 'later 1', 'later 2']);
    early[1]!(() => out.push('early 1'));
    early[2]!(() => out.push('early 2'));
    expect(out).toEqual(['later 0', 'later 1', 'later 2', 'early 0', 'early 1', 'early 2']);
  });

  it('hands out every answer of a round even when one hand-out throws', async () => {
    const rounds = new Rounds(10_000);
    const [a, b, c] = await threeCalls(rounds);
    const out: string[] = [];
    a!(() => {
      throw new Error('boom');
    });
    b!(() => out.push('b'));
    expect(() => c!(() => out.push('c'))).toThrow('boom');
    expect(out).toEqual(['b', 'c']);
  });

  it('answers a lone call at once', async () => {
    const rounds = new Rounds(10_000);
    await turn();
    const only = rounds.join();
    const out: string[] = [];
    only(() => out.push('only'));
    expect(out).toEqual(['only']);
  });
});
