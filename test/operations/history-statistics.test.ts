import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshenStatistics } from '../../src/rebuild/state';
import { createTestServer, type TestServer } from '../helpers/server';

let t: TestServer;
beforeAll(async () => {
  t = await createTestServer();
});
afterAll(async () => t.close());

/** user_state_changes' counters in pg_stat_user_tables (flushed by the writing backend within a second or so). */
async function statsOf() {
  const [row] = await t.deps.sql<Array<{ mods: string; analyzed: boolean }>>`
    select n_mod_since_analyze::text as mods, (last_analyze is not null or last_autoanalyze is not null) as analyzed
    from pg_stat_user_tables where relname = 'user_state_changes'`;
  return { mods: Number(row!.mods), analyzed: row!.analyzed };
}

/** The plan of a per-user read of 200 users, as rebuild and verify send it. */
async function plan(): Promise<string> {
  const ids = Array.from({ length: 200 }, (_, i) => `stats-${i * 7}`);
  const rows = await t.deps.sql.unsafe(
    `explain select * from user_state_changes where user_id in (${ids.map((_, i) => `$${i + 1}`).join(', ')})`,
    ids,
  );
  return rows.map((r) => Object.values(r)[0]).join('\n');
}

describe('statistics of the history tables (rebuild and verify)', () => {
  it('analyzes a table written in bulk since its last analysis, so per-user reads use its index, and only then', async () => {
    // This file's own database: autovacuum must not analyze the table first.
    await t.deps.sql`alter table user_state_changes set (autovacuum_enabled = false)`;
    await t.deps.sql`insert into user_state_changes (user_id, seq, state)
      select 'stats-' || i, 1, null from generate_series(1, 200000) i`;
    const deadline = Date.now() + 10_000;
    while ((await statsOf()).mods < 200000 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 200));
    expect(await statsOf()).toEqual({ mods: 200000, analyzed: false });
    // Without statistics a list of 200 users is taken to match most of the table.
    expect(await plan()).toMatch(/Seq Scan on user_state_changes/);
    expect(await freshenStatistics(t.deps)).toContain('user_state_changes');
    expect((await statsOf()).analyzed).toBe(true);
    expect(await plan()).toMatch(/Index (Only )?Scan .*user_state_changes|Bitmap Index Scan/);
    // Nothing changed since: not analyzed again.
    expect(await freshenStatistics(t.deps)).not.toContain('user_state_changes');
  });
});
