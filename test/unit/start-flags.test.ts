import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startFlags } from '../../bench/lib/processes';

describe('how Laurel is started', () => {
  it('runs with the same Node flags from npm start, the Dockerfile and the bench, a larger young generation among them', async () => {
    const flags = await startFlags();
    expect(flags).toContain('--max-semi-space-size=64');
    const cmd = /^CMD (\[.*\])$/m.exec(readFileSync('Dockerfile', 'utf8'));
    expect(cmd).not.toBeNull();
    expect(JSON.parse(cmd![1]!)).toEqual(['node', ...flags, '--import', 'tsx', 'src/main.ts']);
  });
});
