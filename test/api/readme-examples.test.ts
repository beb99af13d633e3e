import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock';
import { createTestServer, type TestServer } from '../helpers/server';

/**
 * The README's examples, run as written (issue 18): every ```bash block, in order, as one script in
 * bash and again in zsh, each against its own fresh server; then the SDK file (```js) with node.
 * Only the admin key and the address are substituted (the README says to put them there); every id
 * the README keeps, it keeps in shell variables. Blocks fenced ```sh are setup commands (install,
 * start, test) and are not run.
 */
const run = promisify(execFile);
const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const KEY_LINE = "KEY='<the printed admin key>'";
const BASE_LINE = 'BASE=http://localhost:3000';

const fenced = (lang: string) =>
  [...README.matchAll(new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\``, 'gm'))].map((m) => m[1]!);

/**
 * curl answers non-2xx as an error (exit 22, body on stderr); a 2xx bulk answer that refused an item
 * (`"severity":"error"` in its issues) fails too, so a broken example cannot pass as "200 with issues".
 */
const PRELUDE = `set -euo pipefail
curl() {
  local out
  out=$(command curl --fail-with-body --show-error --max-time 30 "$@") || { printf 'curl %s failed: %s\\n' "$*" "$out" >&2; return 22; }
  case $out in *'"severity":"error"'*) printf 'curl %s refused an item: %s\\n' "$*" "$out" >&2; return 23;; esac
  printf '%s\\n' "$out"
}
`;

function scriptFor(origin: string, adminKey: string): string {
  const body = fenced('bash').join('\n');
  expect(body).toContain(KEY_LINE);
  expect(body).toContain(BASE_LINE);
  return `${PRELUDE}${body.replace(KEY_LINE, `KEY='${adminKey}'`).replace(BASE_LINE, `BASE=${origin}`)}\nprintf 'APP=%s\\n' "$APP"\n`;
}

async function runShell(shell: 'bash' | 'zsh', script: string) {
  try {
    return await run(shell, ['-c', script], { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${shell} failed: ${e.stderr?.slice(-3000) || e.message}\n--- stdout tail:\n${e.stdout?.slice(-1500)}`,
    );
  }
}

const servers: TestServer[] = [];
beforeAll(() => {
  for (const tool of ['/usr/bin/jq', '/usr/bin/curl', '/usr/bin/zsh']) {
    if (!existsSync(tool)) throw new Error(`${tool} is missing: apt-get install -y jq curl zsh`);
  }
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function freshServer() {
  // The README's dates are relative to today: the server runs on the real clock.
  const t = await createTestServer({ clock: systemClock });
  servers.push(t);
  return { t, origin: await t.listen() };
}

describe('README examples', () => {
  it('has shell examples that quote every URL with ? or &', () => {
    const blocks = fenced('bash');
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    for (const line of blocks.join('\n').split('\n')) {
      if (line.trimStart().startsWith('#')) continue;
      // Outside quotes a ? is a glob (zsh refuses it) and a & sends curl to the background.
      const unquoted = line.replace(/'[^']*'|"[^"]*"/g, '');
      expect(unquoted, line).not.toMatch(/[?&]/);
    }
  });

  it.each(['bash', 'zsh'] as const)(
    'runs every shell example in order in %s against a fresh server, each answered 2xx',
    async (shell) => {
      const { t, origin } = await freshServer();
      const { stdout } = await runShell(shell, scriptFor(origin, t.adminKey));
      // The replay answers 202 with empty changes (application-api §4).
      expect(stdout).toMatch(/"points":\{\},"leaderboards":\{\}.*"idempotentReplayed":true/);
      // The monthly board is broken down by plan and its run is this calendar month.
      const month = new Date().toISOString().slice(0, 7);
      expect(stdout).toContain(`"start":"${month}-01"`);
      const board = await t.admin('GET', '/leaderboards');
      expect(board.body[0].breakdownAttributes).toHaveLength(1);
      const top = await t.api('GET', '/v1/leaderboards/monthly?userAttributes=plan:pro');
      expect(top.body.rankings.map((r: { userId: string }) => r.userId)).toEqual(['u1']);
    },
    90_000,
  );

  it('runs the SDK file as written with node, creating what it uses', async () => {
    const { t, origin } = await freshServer();
    const { stdout } = await runShell('bash', scriptFor(origin, t.adminKey));
    const app = /^APP=(\S+)$/m.exec(stdout)?.[1];
    expect(app).toMatch(/\./);
    const [file] = fenced('js').filter((b) => b.startsWith('// laurel-demo.mjs'));
    expect(file).toBeDefined();
    // Inside the repository, so `@trophyso/node` resolves from node_modules.
    const dir = new URL('../../node_modules/.cache/readme/', import.meta.url).pathname;
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}laurel-demo.mjs`, file!);
    const out = await run('node', [`${dir}laurel-demo.mjs`], {
      env: { ...process.env, LAUREL_URL: origin, LAUREL_ADMIN_KEY: t.adminKey, LAUREL_APP_KEY: app! },
      timeout: 30_000,
    });
    expect(out.stdout).toContain('lessons total 2');
    expect(out.stdout).toContain('completed onboarding');
  }, 90_000);
});
