/**
 * Where the server's CPU went: summarises a V8 .cpuprofile written by `npm run bench -- --profile`
 * (newest one in bench/results/profiles/ unless a path is given) by self time per function and per
 * area (a src/ file, a package in node_modules, Node internals, GC, idle).
 *
 *   npx tsx bench/profile-summary.ts [file.cpuprofile] [top=25]
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const DIR = fileURLToPath(new URL('./results/profiles/', import.meta.url));

async function newestProfile(): Promise<string> {
  const files = (await readdir(DIR)).filter((f) => f.endsWith('.cpuprofile'));
  if (!files.length) throw new Error(`no .cpuprofile in ${DIR}; run npm run bench -- --profile first`);
  const dated = await Promise.all(files.map(async (f) => ({ f, t: (await stat(DIR + f)).mtimeMs })));
  return DIR + dated.sort((a, b) => b.t - a.t)[0]!.f;
}

function area(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 14).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const src = url.indexOf('/src/');
  if (src >= 0) return url.slice(src + 1);
  if (url.startsWith('node:')) return url;
  return url.replace(/^file:\/\//, '');
}

async function main() {
  const file = process.argv[2] && !/^\d+$/.test(process.argv[2]) ? process.argv[2] : await newestProfile();
  const top = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 25);
  const profile = JSON.parse(await readFile(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const idle = [...self.entries()]
    .filter(([id]) => byId.get(id)?.callFrame.functionName === '(idle)')
    .reduce((a, [, t]) => a + t, 0);
  const busy = total - idle;

  const fns = new Map<string, number>();
  const areas = new Map<string, number>();
  for (const [id, t] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') continue;
    const where = area(url, functionName || '(anonymous)');
    const key = `${functionName || '(anonymous)'}  ${where}${url ? `:${lineNumber + 1}` : ''}`;
    fns.set(key, (fns.get(key) ?? 0) + t);
    areas.set(where, (areas.get(where) ?? 0) + t);
  }
  // Inclusive time of the project's own functions: a sample counts once for every src/ function on its stack.
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const label = (n: ProfileNode) =>
    `${n.callFrame.functionName || '(anonymous)'}  ${area(n.callFrame.url, '')}:${n.callFrame.lineNumber + 1}`;
  const inclusive = new Map<string, number>();
  // For the heaviest native functions: the nearest caller that is not Node's own code.
  const heavy = new Set(
    [...fns.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(([k]) => k.split('  ')[0]!),
  );
  const callers = new Map<string, number>();
  for (const [id, t] of self) {
    const leaf = byId.get(id)!;
    if (leaf.callFrame.functionName === '(idle)') continue;
    const seen = new Set<string>();
    let caller: string | undefined;
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur)!;
      const url = n.callFrame.url;
      if (!caller && cur !== id && url && !url.startsWith('node:')) caller = label(n);
      if (url.includes('/src/') && !url.includes('/node_modules/')) seen.add(label(n));
    }
    for (const k of seen) inclusive.set(k, (inclusive.get(k) ?? 0) + t);
    if (!leaf.callFrame.url && heavy.has(leaf.callFrame.functionName)) {
      const k = `${leaf.callFrame.functionName} <- ${caller ?? '(no JS caller)'}`;
      callers.set(k, (callers.get(k) ?? 0) + t);
    }
  }
  const pct = (t: number) => `${((100 * t) / busy).toFixed(1).padStart(5)}%`;
  const print = (title: string, m: Map<string, number>) => {
    console.log(`\n${title}`);
    for (const [k, t] of [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top))
      console.log(`${pct(t)}  ${k}`);
  };
  console.log(
    `${file}\n${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy (percentages are of busy time)`,
  );
  print('self time by area', areas);
  print('self time by function', fns);
  print('inclusive time of src/ functions', inclusive);
  print('heaviest native functions, by nearest non-Node caller', callers);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
