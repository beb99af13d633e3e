import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// The import rule a newcomer can state in a sentence: nothing imports src/http but the app's entry
// (src/app.ts, src/main.ts), and no module imports itself through others.

const ROOT = resolve(__dirname, '../..');
const SRC = join(ROOT, 'src');

/**
 * Import cycles that exist today, each as the set of files that import one another (a strongly
 * connected component of the graph, type imports included); any other cycle fails.
 */
/** Import cycles tolerated for now (none: keep it that way). */
const KNOWN_CYCLES: string[][] = [];

/** Files that may import src/http: the app's entry. */
const HTTP_ENTRY = new Set(['src/app.ts', 'src/main.ts']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

const rel = (abs: string) => relative(ROOT, abs).split('\\').join('/');

/** The file a relative specifier names (`./x` → x.ts, x.tsx or x/index.ts), or undefined. */
function resolveImport(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = resolve(dirname(from), spec.replace(/\.js$/, ''));
  const candidates = [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx')];
  return candidates.find((c) => /\.tsx?$/.test(c) && existsSync(c));
}

/** Every src file → the src files it imports (imports, `import type`, re-exports, dynamic imports). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = info.importedFiles
      .map((f) => resolveImport(file, f.fileName))
      .filter((t): t is string => t !== undefined)
      .map(rel);
    graph.set(rel(file), [...new Set(targets)]);
  }
  return graph;
}

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || graph.get(v)?.includes(v)) out.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

const key = (files: string[]) => [...files].sort().join(' ↔ ');

/** A cycle as its files and the imports between them, so a failure shows which line to remove. */
function describeCycle(graph: Map<string, string[]>, files: string[]): string {
  const inside = new Set(files);
  const edges = files.flatMap((f) =>
    (graph.get(f) ?? []).filter((t) => inside.has(t)).map((t) => `${f} → ${t}`),
  );
  return `${key(files)}\n    ${edges.join('\n    ')}`;
}

describe('layers', () => {
  const graph = importGraph();

  it('reads the import graph of src', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get('src/app.ts')).toContain('src/http/routes/v1/index.ts');
  });

  it('has nothing outside src/http import src/http, except the app entry', () => {
    const leaks = [...graph]
      .filter(([file]) => !file.startsWith('src/http/') && !HTTP_ENTRY.has(file))
      .flatMap(([file, targets]) =>
        targets.filter((t) => t.startsWith('src/http/')).map((t) => `${file} → ${t}`),
      );
    expect(leaks).toEqual([]);
  });

  it('keeps the engine free of I/O: it imports rules, types and key names, never a client or a service', () => {
    // What src/engine may import outside itself: the configuration snapshot, table types, key names,
    // the user hash's layout (pure functions, no import) and the user script's contract (types and
    // schemas, no client).
    const allowed = [
      'src/catalog/snapshot.ts',
      'src/db/schema.ts',
      'src/redis/keys.ts',
      'src/redis/user-hash.ts',
      'src/redis/user-script.ts',
    ];
    const leaks = [...graph]
      .filter(([file]) => file.startsWith('src/engine/'))
      .flatMap(([file, targets]) =>
        targets
          .filter((t) => !t.startsWith('src/engine/') && !allowed.includes(t))
          .map((t) => `${file} → ${t}`),
      );
    expect(leaks).toEqual([]);
  });

  it('has no import cycle but the known ones', () => {
    const known = new Set(KNOWN_CYCLES.map(key));
    const unknown = cycles(graph).filter((c) => !known.has(key(c)));
    expect(unknown.map((c) => describeCycle(graph, c))).toEqual([]);
  });

  it('lists only cycles that still exist (remove an entry from KNOWN_CYCLES once it is gone)', () => {
    const found = new Set(cycles(graph).map(key));
    expect(KNOWN_CYCLES.map(key).filter((c) => !found.has(c))).toEqual([]);
  });
});
